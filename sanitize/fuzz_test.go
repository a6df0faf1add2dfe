package sanitize

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// plantable are secrets whose shape alone marks them, so they must be
// caught wherever they are planted between separators.
var plantable = []string{
	fakeAWSKeyID, fakeAWSTempID, fakeAWSSecret, fakeGHP, fakeGHO, fakeGHU, fakeGHS, fakeGHR,
	fakeGHPat, fakeGitLab, fakeOpenAILegacy, fakeOpenAIProj, fakeOpenAISvc, fakeAnthropic,
	fakeAnthropicAdm, fakeStripeLive, fakeStripeTest, fakeStripeRK, fakeStripeWH, fakeGoogle,
	fakeGoogleOAuth, fakeGoogleClient, fakeSlackBot, fakeSlackUser, fakeSlackApp, fakeNPM,
	fakeHF, fakeSendGrid, fakeDigitalOcean, fakeShopify, fakeJWT, fakeRSAKey, fakeOpenSSHKey,
	fakeECKeyEscaped, "Bearer " + fakeBearer, "https://u:" + fakePassword + "@h/",
	"password=" + fakePassword, `"token": "` + fakePassword + `"`,
	fakeHarnessToken, fakeDemoKey, fakeLoadKey, fakeGitLabRunner, fakeGrafanaSA, fakeVault, fakeEncodedGHP,
	"db=u:" + fakePassword + "@db.example.com", `API_TOKEN ::= "` + fakePassword + `"`,
}

// More fake secrets in real formats, for the fuzz targets.
const (
	fakeHarnessToken = "htk_q2Vg8u-0bP3xYw_Lm4Zk7RtN1cJ5aHs9dFeGiKoUpWy"
	fakeDemoKey      = "demo_Xk3mP9qL2vN7wR4tY8bZ1cF6hJ0sD5gA"
	fakeLoadKey      = "load_3f9a1c7e5b2d8f4a6c0e9b1d7f3a5c8e2b4d6f0a1c3e5b7d"
	fakeGitLabRunner = "glrt-t1_Zq8Xv2Lm9Kp4Rt7Wy3Nb6Hc5.01a2b3c4d"
	fakeGrafanaSA    = "glsa_pITqMOBIfNH2KL4PkXJqmTyQl0D9QGxF_486f63e1"
	fakeVault        = "hvs.CAESIJk3mP9qL2vN7wR4tY8bZ1cF6hJ0sD5gAXe2Vq7Ut9Rw4GhoKHGh2cy5aM3FkY2xZVnNLbUxvUFJqWk9uZTZxS3c"
	fakeEncodedGHP   = "Z2hwX1FvYUYxTGxxc2FqQUl4Tkt1OGlTMkc4TlBSVmRENTNYODNSWg=="
)

// core is the part of a planted string that must not survive.
func core(planted string) string {
	switch {
	case strings.HasPrefix(planted, "Bearer "):
		return fakeBearer
	case strings.HasPrefix(planted, "API_TOKEN ::= "):
		return fakePassword
	case strings.Contains(planted, fakePassword):
		return fakePassword
	}
	return planted
}

// TestPlantableAlone: every planted secret is redacted on its own, so
// that the fuzz targets start from secrets the rules do know.
func TestPlantableAlone(t *testing.T) {
	s := newTestSanitizer(t, -1)
	for _, p := range plantable {
		if out := s.String(p); strings.Contains(out, core(p)) {
			t.Errorf("%q survived: %q", p, out)
		}
	}
}

// FuzzSanitize plants a secret between fuzzed texts and checks that String
// and Value never panic, never let the secret through, and keep the
// length contract.
func FuzzSanitize(f *testing.F) {
	f.Add("", "", uint8(0), uint16(0))
	f.Add("password: \"", "\" and more", uint8(37), uint16(30))
	f.Add("-----BEGIN RSA PRIVATE KEY-----", "", uint8(3), uint16(10))
	f.Add("Authorization: Bearer", "\n", uint8(34), uint16(0))
	f.Add("https://user:", "@host", uint8(5), uint16(200))
	f.Add("eyJ", ".eyJ.", uint8(30), uint16(64))
	f.Add("AKIA", "AKIA", uint8(0), uint16(0))
	f.Add("\xff\xfe", "é", uint8(12), uint16(17))
	f.Fuzz(func(t *testing.T, before, after string, pick uint8, max uint16) {
		planted := plantable[int(pick)%len(plantable)]
		secret := core(planted)
		if strings.Contains(before, secret) || strings.Contains(after, secret) {
			t.Skip("the fuzzed text holds the secret itself")
		}
		text := before + " " + planted + "\n" + after
		s, err := New(Options{Key: testKey, MaxString: int(max)})
		if err != nil {
			t.Fatal(err)
		}
		out := s.String(text)
		for _, part := range pieces(secret) {
			if strings.Contains(out, part) && !strings.Contains(before, part) && !strings.Contains(after, part) {
				t.Fatalf("part %q of the secret survived\n in: %q\nout: %q", part, text, out)
			}
		}
		if s.max > 0 && len(text) > s.max {
			if !strings.HasSuffix(out, " bytes]") {
				t.Fatalf("long string not marked truncated: %q", out)
			}
		} else if planted != secret || !strings.Contains(planted, "://") {
			if !strings.Contains(out, MarkerPrefix) {
				t.Fatalf("no marker in %q", out)
			}
		}
		if utf8.ValidString(text) && !utf8.ValidString(out) {
			t.Fatalf("valid UTF-8 became invalid: %q", out)
		}
		v := s.Value(map[string]any{before: []any{text, after}}, []string{after})
		for _, str := range flatten(v) {
			if strings.Contains(str, secret) {
				t.Fatalf("secret survived Value: %q", str)
			}
		}
	})
}

// adjacentOK are the planted strings whose rules do not depend on what
// surrounds them (a fixed prefix or a name, and greedy runs), so they are
// caught even glued to arbitrary text. Left out: the bare AWS secret key
// (an exact 40-byte run), "Bearer " (which needs a boundary before it),
// the URL passwords (the fuzzed text can make them part of the host or
// the user name) and the base64 blob (glued text changes what it decodes
// to).
func adjacentOK(planted string) bool {
	switch {
	case planted == fakeAWSSecret, strings.HasPrefix(planted, "Bearer "), strings.Contains(planted, "://"):
		return false
	case planted == fakeEncodedGHP, strings.HasPrefix(planted, "db=u:"):
		return false // a blob glued to text decodes to other bytes; a user name glued to text is another one
	}
	return true
}

// delimited are the planted strings whose shapes need a word boundary
// before them or end where their run ends (Stripe keys, which
// "task_test_…" must not be taken for; Harness's demo and load keys;
// Google API keys, Hugging Face, Grafana and Vault tokens, of a fixed
// length): when the fuzzed text would continue them, a blank is put
// between.
var delimited = map[string]bool{
	fakeStripeLive: true, fakeStripeTest: true, fakeStripeRK: true, fakeGoogle: true, fakeHF: true,
	fakeDemoKey: true, fakeLoadKey: true, fakeGrafanaSA: true, fakeVault: true,
}

// FuzzSanitizeAdjacent is FuzzSanitize without separators: the secret is
// glued to the fuzzed text on both sides (see delimited for the exceptions).
func FuzzSanitizeAdjacent(f *testing.F) {
	f.Add("", "", uint8(0))
	f.Add("password: \"x ", "\"", uint8(32))
	f.Add("Bearer ", "", uint8(3))
	f.Add("AKIA", "ZZZZ", uint8(0))
	f.Add("eyJhbGciOiJIUzI1", ".x", uint8(4))
	f.Add("hooks.slack.com/", "", uint8(5))
	f.Add("https://u:", "@h", uint8(10))
	f.Fuzz(func(t *testing.T, before, after string, pick uint8) {
		planted := plantable[int(pick)%len(plantable)]
		if !adjacentOK(planted) {
			t.Skip()
		}
		secret := core(planted)
		if strings.Contains(before, secret) || strings.Contains(after, secret) {
			t.Skip("the fuzzed text holds the secret itself")
		}
		s, err := New(Options{Key: testKey, MaxString: -1})
		if err != nil {
			t.Fatal(err)
		}
		if delimited[planted] {
			if before != "" && isWordByte(before[len(before)-1]) {
				before += " "
			}
			if after != "" && (isWordByte(after[0]) || after[0] == '-') {
				after = " " + after
			}
		}
		text := before + planted + after
		out := s.String(text)
		for _, part := range pieces(secret) {
			if strings.Contains(out, part) && !strings.Contains(before, part) && !strings.Contains(after, part) {
				t.Fatalf("part %q of the secret survived\n in: %q\nout: %q", part, text, out)
			}
		}
	})
}

// pieces returns the secret and its 12-byte tail and middle: a secret cut
// in two by a neighbouring match must not leave its body behind either.
func pieces(secret string) []string {
	if len(secret) < 24 {
		return []string{secret}
	}
	mid := len(secret) / 2
	return []string{secret, secret[len(secret)-12:], secret[mid-6 : mid+6]}
}

// flatten lists every string (keys included) in a sanitized value.
func flatten(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			out = append(out, flatten(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for k, e := range t {
			out = append(out, k)
			out = append(out, flatten(e)...)
		}
		return out
	}
	return nil
}
