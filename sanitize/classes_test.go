package sanitize

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
)

// Harness's own secrets, minted as Harness mints them: confirmation
// tokens as trusted.NewToken does ("htk_" + base64url of 32 random bytes),
// the API key of `harness serve --demo` (cmd/harness/serve.go: "demo_" +
// base64url of 24 bytes) and harness-load's ("load_" + hex of 24 bytes).
// The package cannot import those (they import it), so the recipes are
// repeated here.
func mintHarnessSecrets(t testing.TB) (token, demoKey, loadKey string) {
	t.Helper()
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	token = "htk_" + base64.RawURLEncoding.EncodeToString(b[:])
	demoKey = "demo_" + base64.RawURLEncoding.EncodeToString(b[:24])
	loadKey = "load_" + hex.EncodeToString(b[8:32])
	return token, demoKey, loadKey
}

// TestHarnessOwnSecretsByShape: a confirmation token or an API key is
// redacted wherever it appears, with no name beside it, for many freshly
// minted values (a base64url body can start or end with '-' or '_').
func TestHarnessOwnSecretsByShape(t *testing.T) {
	s := newTestSanitizer(t, -1)
	contexts := []string{
		"%s",
		"token %s was issued",
		`{"t":"%s"}`,
		"POST /v1/actions/execute/%s HTTP/1.1",
		"curl -X POST http://127.0.0.1:8080/v1/actions/execute/%s -H 'Accept: */*'",
		"- %s\n",
		"x=%s&y=1",
		"('%s')",
	}
	for n := 0; n < 50; n++ {
		token, demo, load := mintHarnessSecrets(t)
		for _, secret := range []string{token, demo, load} {
			for _, c := range contexts {
				in := strings.Replace(c, "%s", secret, 1)
				out := s.String(in)
				if strings.Contains(out, secret) || !strings.Contains(out, s.Redact(secret)) {
					t.Fatalf("%q not redacted as itself:\n in: %q\nout: %q", secret, in, out)
				}
			}
		}
		// A confirmation token glued to other text is still one.
		if in := "id" + token; strings.Contains(s.String(in), token[4:]) {
			t.Fatalf("glued token survived: %q", s.String(in))
		}
	}
	for _, keep := range []string{
		"demo_workspace_for_the_react_example_loop",
		"load_balancer_configuration_for_the_cluster_nodes",
		"htk_ is the prefix of confirmation tokens",
		"see demo_ and load_ keys",
	} {
		if out := s.String(keep); out != keep {
			t.Errorf("changed: %q -> %q", keep, out)
		}
	}
}

// TestHarnessSecretsInEvents: the shapes an audit record's payload takes
// (an action input, an observation, a request line) carry no token or key
// once through Value, whatever the field is called.
func TestHarnessSecretsInEvents(t *testing.T) {
	s := newTestSanitizer(t, 0)
	token, demo, load := mintHarnessSecrets(t)
	in := map[string]any{
		"name": "workspace_run_shell",
		"input": map[string]any{
			"argv": []any{"curl", "-X", "POST", "http://127.0.0.1:8080/v1/actions/execute/" + token,
				"-H", "Authorization: Bearer " + demo},
			"env": map[string]any{"HARNESS_KEY": demo, "LOAD": load, "K": "x=" + load},
		},
		"observation": map[string]any{"stdout": "minted " + token + "\nkey " + demo + "\n", "exit_code": 0.0},
		"request":     "POST /v1/actions/execute/" + token,
	}
	for _, str := range flatten(s.Value(in, nil)) {
		for _, secret := range []string{token, demo, load} {
			if strings.Contains(str, secret) || strings.Contains(str, secret[len(secret)-12:]) {
				t.Fatalf("%q survived in %q", secret, str)
			}
		}
	}
}

// TestEncodedSecrets: a base64 (standard or URL alphabet, padded or not)
// or hex blob whose decoding holds a secret is redacted whole, in any
// context, and so is base64 of base64.
func TestEncodedSecrets(t *testing.T) {
	s := newTestSanitizer(t, -1)
	token, _, _ := mintHarnessSecrets(t)
	plain := []string{
		fakeAWSKeyID,
		fakeGHP,
		"export GITHUB_TOKEN=" + fakeGHP,
		"password=" + fakePassword,
		`{"client_secret": "` + fakePassword + `"}`,
		"Authorization: Bearer " + fakeBearer,
		"postgres://app:" + fakePassword + "@db.internal:5432/app",
		fakeRSAKey,
		token,
		fakeAnthropic,
	}
	encodings := map[string]func([]byte) string{
		"std":     base64.StdEncoding.EncodeToString,
		"raw std": base64.RawStdEncoding.EncodeToString,
		"url":     base64.URLEncoding.EncodeToString,
		"raw url": base64.RawURLEncoding.EncodeToString,
		"hex":     hex.EncodeToString,
		"HEX":     func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) },
		"base64 of base64": func(b []byte) string {
			return base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(b)))
		},
	}
	contexts := []string{"%s", "data: %s\n", `{"blob":"%s"}`, "echo %s | base64 -d", "<value>%s</value>"}
	for _, p := range plain {
		for name, enc := range encodings {
			blob := enc([]byte(p))
			for _, c := range contexts {
				in := strings.Replace(c, "%s", blob, 1)
				out := s.String(in)
				if strings.Contains(out, strings.TrimRight(blob, "=")) {
					t.Errorf("%s blob of %.20q… survived:\n in: %q\nout: %q", name, p, in, out)
				}
				before, after, _ := strings.Cut(c, "%s")
				if !strings.HasPrefix(out, before) || !strings.HasSuffix(out, after) {
					t.Errorf("context eaten:\n in: %q\nout: %q", in, out)
				}
			}
		}
	}
	for _, keep := range []string{
		base64.StdEncoding.EncodeToString([]byte("hello world, this is only a readme file")),
		base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"public-key-1"}`)),
		hex.EncodeToString([]byte("no secret in this sentence at all")),
		"3f786850e387550fdab836ed7e6dc881de23001b",
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
	} {
		if out := s.String(keep); out != keep {
			t.Errorf("changed: %q -> %q", keep, out)
		}
	}
}

// TestUserinfoForms: the password of user:password@host is redacted with
// and without a scheme, after "//", with an empty user; exactly the
// password goes, the text around it stays.
func TestUserinfoForms(t *testing.T) {
	s := newTestSanitizer(t, -1)
	m := s.Redact(fakePassword)
	cases := []struct{ in, want string }{
		{"postgres://app:" + fakePassword + "@db:5432/app", "postgres://app:" + m + "@db:5432/app"},
		{"https://bob:" + fakePassword + "@example.com/path?q=1", "https://bob:" + m + "@example.com/path?q=1"},
		{"connect to app:" + fakePassword + "@db.example.com:5432 now", "connect to app:" + m + "@db.example.com:5432 now"},
		{"DATABASE=admin:" + fakePassword + "@localhost/app", "DATABASE=admin:" + m + "@localhost/app"},
		{`"dsn": "svc:` + fakePassword + `@10.0.0.7:3306/db"`, `"dsn": "svc:` + m + `@10.0.0.7:3306/db"`},
		{"//deploy:" + fakePassword + "@registry.example.com/v2/", "//deploy:" + m + "@registry.example.com/v2/"},
		{"//:" + fakePassword + "@cache.example.com:6379", "//:" + m + "@cache.example.com:6379"},
		{"(user.name:" + fakePassword + "@host.example.org)", "(user.name:" + m + "@host.example.org)"},
		{"amqp://guest:" + fakePassword + "@[::1]:5672/", "amqp://guest:" + m + "@[::1]:5672/"},
	}
	for _, tc := range cases {
		if got := s.String(tc.in); got != tc.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
	// A token as the user name goes too, with or without a scheme.
	for _, in := range []string{
		"curl -u " + fakeGHP + ":x-oauth-basic https://api.github.com/user",
		`curl --user "` + fakeGHP + `":"x-oauth-basic" https://api.github.com/user`,
		"https://" + fakeGHP + ":x-oauth-basic@github.com/o/r.git",
	} {
		if out := s.String(in); strings.Contains(out, fakeGHP[4:]) {
			t.Errorf("token as user name survived: %q", out)
		}
	}
	// A colon inside the password is part of it.
	in := "ftp:" + "pa:" + fakePassword + "@files.example.com"
	if out := s.String(in); strings.Contains(out, fakePassword) {
		t.Errorf("password with a colon survived: %q", out)
	}
	for _, keep := range []string{
		"mailto:bob@example.com",
		"Note:see@item",
		"git@github.com:org/repo.git",
		"ssh git@host.example.com",
		"at 10:42:07 bob@example.com wrote",
		"user@example.com",
		"https://user@example.com/path",
		"postgres://app:${DB_PASSWORD}@db:5432/app",
		"app:<password>@db.example.com",
	} {
		if out := s.String(keep); out != keep {
			t.Errorf("changed: %q -> %q", keep, out)
		}
	}
}

// TestAssignmentForms: every way configuration and code assign a value to
// a secret-looking name redacts the value, exactly, and leaves the
// operator and the rest.
func TestAssignmentForms(t *testing.T) {
	s := newTestSanitizer(t, -1)
	v := fakePassword
	m := s.Redact(v)
	forms := []string{
		`API_TOKEN := "%s"`,
		`API_TOKEN ::= "%s"`,
		`API_TOKEN :::= "%s"`,
		`API_TOKEN ?= "%s"`,
		`API_TOKEN += "%s"`,
		`$apiToken .= "%s"`,
		`$apiToken ??= "%s";`,
		`apiToken := %s`,
		`var apiToken string = "%s"`,
		`val apiToken: String = "%s"`,
		`let apiToken: string = '%s';`,
		`String apiToken = "%s";`,
		`System.setProperty("API_TOKEN", "%s")`,
		`os.environ.setdefault('DB_PASSWORD', '%s')`,
		"<apiToken>%s</apiToken>",
		"<password>\n    %s\n</password>",
		`<ClientSecret xml:space="preserve">%s</ClientSecret>`,
		`<add key="ClearTextPassword" value="%s" />`,
		`<entry name="api_key" value="%s"/>`,
		`  "apiToken" => "%s",`,
		`password       = "%s"`,
		`api_token_2 = "%s"`,
		`BUNDLE_GEMS__CONTRIBSYS__COM: "user:%s"`,
	}
	for _, f := range forms {
		in := strings.Replace(f, "%s", v, 1)
		want := strings.Replace(f, "%s", m, 1)
		if strings.HasPrefix(f, "BUNDLE_") {
			want = strings.Replace(f, "%s", "", 1)
			want = strings.Replace(want, `"user:"`, `"`+s.Redact("user:"+v)+`"`, 1)
		}
		if got := s.String(in); got != want {
			t.Errorf("String(%q)\n got %q\nwant %q", in, got, want)
		}
	}
	// Not assignments of a secret: kept as they are.
	for _, keep := range []string{
		`secret_name: db-credentials`,
		`password_length = 12`,
		`publicToken = "pk_live_a1b2c3"`,
		`password = "${DB_PASSWORD}"`,
		`token: {{ .Values.token }}`,
		`password: ENC[AES256_GCM,data:O+5l4g==,iv:c/dS4BCB,tag:KkQf,type:str]`,
		`passwordVariable: 'PASSWORD'`,
		`secret_length = var.secret_length`,
		"std::string token;",
		"if (password == NULL) return;",
	} {
		if out := s.String(keep); out != keep {
			t.Errorf("changed: %q -> %q", keep, out)
		}
	}
}

// TestPrefixRulesNeedABoundary: token prefixes inside identifiers, file
// names and URLs are not tokens.
func TestPrefixRulesNeedABoundary(t *testing.T) {
	s := newTestSanitizer(t, -1)
	for _, keep := range []string{
		`nonMatching := "task_test_5z6e2p1j20y2z011mnf83rcaikw0ku"`,
		"M_UINT (x, &hf_servingcellpriorityparametersdescription_h_prio),",
		"http://assets.example.com/video_box.ico-7a388b69018576d24b59331fd60aab0c.png",
		"static void GLC_CreateLightmapTexturesIndividual(void);",
		"https://indieweb.org/images/3/35/2018-250-xoxo-indieweb-1.jpg",
		"GWw4hjABFzZCGiRpmlDyDdo87Jn9BN9THUA47muVRNunLxsa82tMAdvmrhOqNkRKiYMEAFbTJAIzaTesb6Tscfcni8vIpWZqNCXFDFslJtVSvFDq",
		"getdapi4289ab3812cc49849e5c00567167e66a",
	} {
		if out := s.String(keep); out != keep {
			t.Errorf("changed: %q -> %q", keep, out)
		}
	}
}
