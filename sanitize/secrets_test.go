package sanitize

import (
	"strings"
	"testing"
)

// Fake secrets in the real formats. None of them is live.
const (
	fakeAWSKeyID     = "AKIAUJZDEGXDNCF32EPF"
	fakeAWSTempID    = "ASIA3DHODZDOCIS2JHTL"
	fakeAWSSecret    = "nyVmihA/2O76UMFxFkM/R5Kjp1vRt+1fjORS/6il"
	fakeAWSSecret2   = "I8ihN5KXSc7Tvo/hBKqFYY/kv5ZJr3J1TWDtkwtD"
	fakeGHP          = "ghp_QoaF1LlqsajAIxNKu8iS2G8NPRVdD53X83RZ"
	fakeGHO          = "gho_JzzzzgEOzdmenCkhvMdgaKjIg8xNbe3nNyjO"
	fakeGHU          = "ghu_q9wMxEhh2FDEEtfjgVvVqE1SkHbn88HxjSI6"
	fakeGHS          = "ghs_bWHtP3fS2qHx6kwXoIIXGvOoNZYW2mZp0zVZ"
	fakeGHR          = "ghr_omHFwUbbYrEqmSM9wCZ7Uw9xfogoEmvnEN5N"
	fakeGHPat        = "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"
	fakeGitLab       = "glpat-LuqIA1id6Vw5DQL05HA0"
	fakeOpenAILegacy = "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"
	fakeOpenAIProj   = "sk-proj-Jfm5di4PzJ59FHz5r1pY4OjE2jBMptUsGr7CmY_uCu3ZR1zTOlUcR64cXQLioDnkqrc5XlrWi0"
	fakeOpenAISvc    = "sk-svcacct-2HZt-PlJhx2jIclHkCiHp6bR1IqfEouHgxzNNAL5wIScGebcy8F5n3-YNBDRzrZSgqbjG3uhkW"
	fakeAnthropic    = "sk-ant-api03-KFLf6xuI5aHUQPFeNBTxaQWk8JzFalHlsZfYcMMDktXP-tKsf2rcDkdfrUnW5gcF_Ha6ili8GjHEAD6-Wj9KfzjsQGMrbAA"
	fakeAnthropicAdm = "sk-ant-admin01-9h_ImB_LK777pzNk8cL6j5IXAAjlsHUqJoUD-_Ydua_5ZMs1SWOpQaPRYpzbLGViYXjU2JgJngKtFI3OyV2dZAkg05rK_AA"
	fakeStripeLive   = "sk_live_d67JikEAvstqVVPqzPptEJQz"
	fakeStripeTest   = "sk_test_hkPkenG5ZFJoC6vWCBiJmpflvJfupxqZKm4bV3AyAVHnyrvWdFrK9xiRGHOY32nfr5pyzPCB9t2039bicBTW5ZE9LFaez7770H2"
	fakeStripeRK     = "rk_live_DCpYgojjHRg80USP2W5DfJXc"
	fakeStripeWH     = "whsec_aYioK6cPTt9iOqHOBSWhgetH8LmyqoYM"
	fakeGoogle       = "AIzaabM6JOF8EFd0Nhcy-1kGD2VD-eR1UYzaLiA"
	fakeGoogleOAuth  = "ya29.hS4-FvafhdZxEuhnbzs0z1wNiMg9aW37k5wCnHDepQHgI3HLBkbvHEzuPyXQ"
	fakeGoogleClient = "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"
	fakeSlackBot     = "xoxb-734337344197-9237609260309-jAdTdlzC5T4uUhf7kvmlP7HV"
	fakeSlackUser    = "xoxp-704655721014-156183654610-7358735570636-1c1e21862ab8a18a8902073fec8df4f5"
	fakeSlackApp     = "xapp-1-ATJPUU3XF6M-6236107885261-28263dfe574de739988b886e7577496a2c8773e130f7eb19731662b5e803b61b"
	fakeSlackConfig  = "xoxe.xoxp-1-Mi0yLTE3NzY2MzQxMDQzNTUtNDgxNTc4ODkwMTIzNC00ODE1Nzg4OTAxMjM0LTQ4MTU3ODg5MDEyMzQtZjRkYzk2N2M4YjNhNTNmMjE5OWRmNTk3ZTZhMWIyYzNkNGU1ZjZhN2I4YzlkMGUxZjJhM2I0YzVkNmU3Zjhh"
	fakeSlackHook    = "TVJCNQCNA/BU0XLTENC/YFJEeAgYzQJjOIfPkzSrAsQt"
	fakeNPM          = "npm_A9dtVK4wAAb3XZxPmzUzn8aB5kBh0fzK4xDX"
	fakeHF           = "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"
	fakeSendGrid     = "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"
	fakeDigitalOcean = "dop_v1_2364f9572b85a8e48f687ab165c58ac5831be38cb8cb4ba2e751989a01749ddb"
	fakeShopify      = "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"
	fakeJWT          = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	fakePassword     = "e2LWxm090I5Qe43W"
	fakeBearer       = "XnFAAoeelK9mqmALOR2HcSGKgVP_8Kd0d3+mS8gB"
	fakeRSAKey       = "-----BEGIN RSA PRIVATE KEY-----\n" +
		"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n" +
		"VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n" +
		"LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo\n" +
		"-----END RSA PRIVATE KEY-----"
	fakeOpenSSHKey = "-----BEGIN OPENSSH PRIVATE KEY-----\n" +
		"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n" +
		"QyNTUxOQAAACDSDbTK3qIYp5lrq1tuhZ3nDq3wB0CfEEnK5JMhfb+NNAAAAJiFbqLOhW6i\n" +
		"-----END OPENSSH PRIVATE KEY-----"
	fakeECKeyEscaped = `-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBvB5m0bCBp1Z3cE7ab2rXpmm5u1s6mN1vw1jG9YkS5BoAoGCCqGSM49\nAwEHoUQDQgAEw8pLJ0Dv0k3J5ZQ6mxbGkXoVJnB0u9xJzN9mQ7W0c3Y=\n-----END EC PRIVATE KEY-----`
)

// secretCase plants secret in text; the output must not contain secret
// and must contain its marker (the span replaced is exactly the secret).
type secretCase struct {
	name   string
	text   string
	secret string
}

func secretCases() []secretCase {
	return []secretCase{
		{"aws access key id in JSON", `{"aws_access_key_id": "` + fakeAWSKeyID + `"}`, fakeAWSKeyID},
		{"aws temporary key id in env", "AWS_ACCESS_KEY_ID=" + fakeAWSTempID + "\n", fakeAWSTempID},
		{"aws key id glued to text", "id" + fakeAWSKeyID + " rest", fakeAWSKeyID},
		{"aws secret key in credentials file", "[default]\naws_secret_access_key = " + fakeAWSSecret + "\n", fakeAWSSecret},
		{"aws secret key bare", "the key " + fakeAWSSecret2 + " was rotated", fakeAWSSecret2},
		{"github classic pat", "token " + fakeGHP + " leaked", fakeGHP},
		{"github oauth token in JSON", `{"t":"` + fakeGHO + `"}`, fakeGHO},
		{"github user-to-server token", "x " + fakeGHU, fakeGHU},
		{"github server-to-server token in URL", "https://x-access-token:" + fakeGHS + "@github.com/o/r.git", fakeGHS},
		{"github refresh token", fakeGHR, fakeGHR},
		{"github fine-grained pat", "GH=" + fakeGHPat, fakeGHPat},
		{"gitlab pat", "glab auth " + fakeGitLab, fakeGitLab},
		{"openai legacy key", "OPENAI_API_KEY=" + fakeOpenAILegacy, fakeOpenAILegacy},
		{"openai project key in JSON", `{"key":"` + fakeOpenAIProj + `"}`, fakeOpenAIProj},
		{"openai service account key", "use " + fakeOpenAISvc + ".", fakeOpenAISvc},
		{"anthropic api key in header", "x-api-key: " + fakeAnthropic + "\r\n", fakeAnthropic},
		{"anthropic admin key", "k=(" + fakeAnthropicAdm + ")", fakeAnthropicAdm},
		{"stripe live secret key", "stripe.api_key = '" + fakeStripeLive + "'", fakeStripeLive},
		{"stripe test secret key", "curl -u " + fakeStripeTest + ": https://api.stripe.com", fakeStripeTest},
		{"stripe restricted key", "[" + fakeStripeRK + "]", fakeStripeRK},
		{"stripe webhook secret", "endpoint secret " + fakeStripeWH, fakeStripeWH},
		{"google api key in URL", "https://maps.googleapis.com/maps/api/js?key=" + fakeGoogle + "&v=3", fakeGoogle},
		{"google oauth access token", "ya " + fakeGoogleOAuth, fakeGoogleOAuth},
		{"google oauth client secret", `"c": "` + fakeGoogleClient + `"`, fakeGoogleClient},
		{"slack bot token", "SLACK=" + fakeSlackBot, fakeSlackBot},
		{"slack user token", "tok " + fakeSlackUser, fakeSlackUser},
		{"slack app token", fakeSlackApp + "\n", fakeSlackApp},
		{"slack configuration token", "SLACK_CONFIG=" + fakeSlackConfig, fakeSlackConfig},
		{"slack webhook", "POST https://hooks.slack.com/services/" + fakeSlackHook, "services/" + fakeSlackHook},
		{"npm token in npmrc", "//registry.npmjs.org/:_authToken=" + fakeNPM, fakeNPM},
		{"hugging face token", "hf " + fakeHF, fakeHF},
		{"sendgrid key", "SENDGRID " + fakeSendGrid, fakeSendGrid},
		{"digitalocean token", "do " + fakeDigitalOcean, fakeDigitalOcean},
		{"shopify token", "shop " + fakeShopify, fakeShopify},
		{"jwt bare", "id_token " + fakeJWT + " end", fakeJWT},
		{"jwt in cookie header", "Cookie: session=" + fakeJWT + "; theme=dark", "session=" + fakeJWT + "; theme=dark"},
		{"bearer header", "Authorization: Bearer " + fakeBearer + "\r\nAccept: */*", fakeBearer},
		{"bearer lower case in curl", `curl -H "authorization: bearer ` + fakeBearer + `" https://x`, fakeBearer},
		{"bearer without header name", "sent Bearer " + fakeBearer, fakeBearer},
		{"short bearer credential with punctuation", "Bearer abc.def-g ok", "abc.def-g"},
		{"basic auth header", "Authorization: Basic dXNlcjpodW50ZXIy\n", "dXNlcjpodW50ZXIy"},
		{"token as URL user name", "git clone https://" + fakeGHP + ":x-oauth-basic@github.com/o/r", fakeGHP + ":x-oauth-basic"},
		{"password in postgres URL", "dsn=postgres://app:" + fakePassword + "@db:5432/app?sslmode=disable", fakePassword},
		{"password in redis URL", `{"url":"redis://:` + fakePassword + `@cache:6379/0"}`, fakePassword},
		{"password in JSON text", `{"user":"bob","password":"` + fakePassword + `"}`, fakePassword},
		{"password in JSON-escaped JSON", `{\"password\":\"` + fakePassword + `\"}`, fakePassword},
		{"password in YAML", "db:\n  password: " + fakePassword + "\n  host: x\n", fakePassword},
		{"password in a YAML block scalar", "stringData:\n  password: |\n    " + fakePassword + "\n  user: bob\n", fakePassword},
		{"multi-line YAML folded secret", "secret: >-\n  line one " + fakePassword + "\n  line two\nnext: 1", "line one " + fakePassword + "\n  line two"},
		{"password flag", "mysql --password=" + fakePassword + " -h db", fakePassword},
		{"presigned URL signature", "https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIDEXAMPLE%2F20260101&X-Amz-Signature=" + fakePassword + "&x=1", fakePassword},
		{"azure SAS signature", "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=" + fakePassword, fakePassword},
		{"password option with a space", "mysqladmin --password " + fakePassword + " status", fakePassword},
		{"api key option quoted", `tool --api-key "` + fakePassword + `" run`, fakePassword},
		{"curl user option", "curl -u bob:" + fakePassword + " https://x", fakePassword},
		{"curl long user option", `curl --user 'bob:` + fakePassword + `' https://x`, fakePassword},
		{"client secret in query", "/token?client_id=abc&client_secret=" + fakePassword + "&grant=x", fakePassword},
		{"go short assignment", `apiKey := "` + fakePassword + `"`, fakePassword},
		{"rsa private key pem", "key:\n" + fakeRSAKey + "\ndone", fakeRSAKey},
		{"openssh private key pem", fakeOpenSSHKey, fakeOpenSSHKey},
		{"ec private key with escaped newlines", `{"pem":"` + fakeECKeyEscaped + `"}`, fakeECKeyEscaped},
		{"private key without end line", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC", "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
		{"sourcegraph token", "SRC_ACCESS_TOKEN_FILE sgp_AaD80dc6E02eCAE1_d3cba16CC0F18fA14A2EFB61CbDFceEBf9fAD16b", "sgp_AaD80dc6E02eCAE1_d3cba16CC0F18fA14A2EFB61CbDFceEBf9fAD16b"},
		{"sourcegraph local token", "use sgp_local_d7dfFD43cF2503B1da673EB560aAa3e80f16FA42 here", "sgp_local_d7dfFD43cF2503B1da673EB560aAa3e80f16FA42"},
		{"short password", "password: abc12", "abc12"},
		{"key of ten bytes", "api_key=Ab3dE6gH9k", "Ab3dE6gH9k"},
		{"private key after name", "private_key: -----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC -----END PRIVATE KEY-----", "-----BEGIN PRIVATE KEY----- MIIEvQIBADANBgkqhkiG9w0BAQEFAASC -----END PRIVATE KEY-----"},
	}
}

func TestStringRedactsSecretShapes(t *testing.T) {
	s := newTestSanitizer(t, -1)
	for _, tc := range secretCases() {
		t.Run(tc.name, func(t *testing.T) {
			out := s.String(tc.text)
			if strings.Contains(out, tc.secret) {
				t.Fatalf("secret survived:\n in: %q\nout: %q", tc.text, out)
			}
			if !strings.Contains(out, s.Redact(tc.secret)) {
				t.Errorf("secret not replaced by its own marker:\n in: %q\nout: %q", tc.text, out)
			}
			if !s.ContainsSecret(tc.text) {
				t.Errorf("ContainsSecret(%q) = false", tc.text)
			}
			if s.ContainsSecret(out) {
				t.Errorf("ContainsSecret(output) = true: %q", out)
			}
		})
	}
}

// TestStringKeepsNearMisses pins what must not be redacted, so that the
// rules stay narrow enough for the audit log to remain readable.
func TestStringKeepsNearMisses(t *testing.T) {
	s := newTestSanitizer(t, -1)
	cases := []struct{ name, text string }{
		{"git sha1", "commit 3f786850e387550fdab836ed7e6dc881de23001b"},
		{"sha256 hex", "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
		{"uuid", "request 123e4567-e89b-12d3-a456-426614174000 done"},
		{"go.sum hash", "github.com/x/y v1.0.0 h1:abcDEF0123456789abcDEF0123456789abcDEF012345="},
		{"english", "The quick brown fox jumps over the lazy dog; keys and tokens are words."},
		{"bearer in prose", "the bearer of this letter is a friend"},
		{"bearer short word", "Bearer token"},
		{"bearer before a word", "the Bearer something else"},
		{"sk in prose", "use sk-learn-documentation-links for help"},
		{"aws prefix word", "ASIAPACIFICREGIONSERVERS are far"},
		{"akia alone", "AKIA is a prefix"},
		{"token count", "max_tokens: 1024, token_count=12, tokenizer: bpe"},
		{"public key", "public_key=ssh-ed25519"},
		{"url without password", "postgres://app@db:5432/app and https://example.com/a?b=c"},
		{"url with user only", "https://user@example.com/path"},
		{"public pem", "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"},
		{"certificate", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----"},
		{"null password", `{"password": null}`},
		{"yaml block under an ordinary key", "description: |\n  the password policy\n"},
		{"yaml indicator without block", "password: |\nuser: bob"},
		{"curl user without password", "curl -u bob https://x"},
		{"ordinary options", "ls --color auto -u --user-agent x --token-count 5"},
		{"marker value", `password=hmac-sha256:` + strings.Repeat("ab", 32)},
		{"path of 40 bytes", "internal/handlers/usercontroller/handle.go"},
		{"go code", "func (s *Server) Token() string { return s.tok }\nx := map[string]int{\"a\": 1}"},
		{"comparison", "if password == nil { return }"},
		{"eyJ short", "eyJhbGciOi is a prefix"},
		{"masked token", `"token4": "xoxp-572370529330-573807301142-572331691188-####################"`},
		{"token template of x", "oc login --token=sha256~_xxxxxx_xxxxxxxxxxxxxxxxxxxxxx-xxxxxxxxxx-X --server=https://api.x:6443"},
		{"redacted later in the value", "fn::secret: ops_eyJzaWduSW5B..[Redacted]"},
		{"artifact at a version", `notes = "Maven - io.jsonwebtoken:jjwt-jackson-0.11.2"`},
		{"key too short for one", "SUMO_ACCESS_KEY: AbCeFG123"},
		{"value naming another value", `api_token = "token:"`},
		{"csrf token", "csrf-token=Mj2qykJO5rELyHgezQ69nzUX0i3OH67V7+V4eUrLfpuyOuxmiW9rhROG/Whikle15syazJOkrjJa3U2AbhIvUw=="},
		{"rails authenticity token", `<input type="hidden" name="authenticity_token" value="7SWa-Fo1_hsC6oovfBsJFLGPUl2EhkSWPbJhWANwgaJWBDl1vxd9VNqXTNAefsJqzIRYaZEfYZLffa31rw8zJA" />`},
		{"identifier of a secret", "  <UserSecretsId>79a3edd0-2092-40a2-a04d-dcb46d5ca9ed</UserSecretsId>"},
		{"made-up token in a test", `nonMatchingToken := "76m4zjlp9tl0t79v"`},
		{"40 bytes ending an identifier", "sgp_local_d45b6G86aBb0F2Cee943902dbaDBCFCFDD1dA089"},
		{"base64 blob", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if out := s.String(tc.text); out != tc.text {
				t.Errorf("changed:\n in: %q\nout: %q", tc.text, out)
			}
			if s.ContainsSecret(tc.text) {
				t.Errorf("ContainsSecret(%q) = true", tc.text)
			}
		})
	}
}

// TestStringContextSpansCoverShapes: a span found by context (a value, a
// bearer credential, a URL password) that stops inside a longer secret, or
// swallows the context of the next one, is widened to cover it, so no tail
// of a secret is left behind.
func TestStringContextSpansCoverShapes(t *testing.T) {
	s := newTestSanitizer(t, -1)
	pemBody := "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"
	cases := []struct {
		name, text, gone string
	}{
		{"quoted value ending in a PEM header line", `password: "x ` + fakeRSAKey + `"`, pemBody},
		{"unquoted value glued to a PEM", "secret=x" + fakeRSAKey, pemBody},
		{"bearer credential glued to a PEM", "Bearer abcdefgh12" + fakeRSAKey, pemBody},
		{"url password glued to a PEM", "https://u:pw" + fakeRSAKey + "@h/", pemBody},
		{"value swallowing a Bearer", "passwd: Bearer Bearer " + fakePassword, fakePassword},
		{"value ending in a Bearer", "passwd: abc-Bearer " + fakePassword, fakePassword},
		{"value swallowing a secret name", "passwd: token: " + fakePassword, fakePassword},
		{"deep nesting fails closed", strings.Repeat("token: ", 20) + fakePassword + " tail", fakePassword},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := s.String(tc.text)
			if strings.Contains(out, tc.gone) {
				t.Errorf("part of a secret survived:\n in: %q\nout: %q", tc.text, out)
			}
		})
	}
}
