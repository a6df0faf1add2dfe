package sanitize

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestSensitiveName(t *testing.T) {
	cases := []struct {
		name string
		want bool
	}{
		{"password", true}, {"PASSWORD", true}, {"DB_PASSWORD", true}, {"userPassword", true},
		{"passwd", true}, {"passphrase", true}, {"password_hash", true}, {"--password", true},
		{"secret", true}, {"client_secret", true}, {"clientSecret", true},
		{"AWS_SECRET_ACCESS_KEY", true}, {"token", true}, {"access_token", true}, {"refreshToken", true},
		{"GITHUB_TOKEN", true}, {"x-amz-security-token", true},
		{"api_key", true}, {"apiKey", true}, {"APIKey", true}, {"x-api-key", true}, {"apikey", true},
		{"access_key", true}, {"private_key", true}, {"secret_key", true}, {"signingKey", true},
		{"AZURE_STORAGE_KEY", true}, {"Ocp-Apim-Subscription-Key", true},
		{"authorization", true}, {"Proxy-Authorization", true}, {"cookie", true}, {"Set-Cookie", true},
		{"credentials", true}, {"credential", true}, {"basic_auth", true}, {"auth", true}, {"jwt", true},
		{"", false}, {"path", false}, {"max_tokens", false}, {"token_count", false}, {"tokens", false},
		{"tokenizer", false}, {"token_type", false}, {"author", false}, {"authors", false},
		{"public_key", false}, {"key", false}, {"sort_key", false}, {"primary_key", false},
		{"passwordless", false}, {"session_id", false}, {"client_id", false}, {"keyboard", false},
		{"PWD", false}, {"-_-", false}, {"a_very_long_word_that_ends_in_nothing_sensitive", false},
		{"X-Amz-Signature", true}, {"sig", true}, {"signing", false}, {"config", false},
		{"averyveryverylongprefixpassword", true}, {"averyveryverylongprefixtoken", true},
		// About a secret, not the secret.
		{"secret_name", false}, {"LLM_SECRET_NAME", false}, {"secret_length", false}, {"password_file", false},
		{"token_type", false}, {"SECRET_ARN", false}, {"publicToken", false}, {"publishable_key", false},
		{"secret_id", true}, {"SecretId", true}, {"UserSecretsId", false}, {"token_id", false}, {"api_key_ids", false},
		// Anti-forgery nonces, served to every browser that loads the page.
		{"csrftoken", false}, {"csrf-token", false}, {"X-XSRF-TOKEN", false}, {"authenticity_token", false},
		// Names that say the value is made up (a shape still matches whatever the name).
		{"fakeToken", false}, {"dummy_password", false}, {"nonMatchingToken", false}, {"INVALID_API_KEY", false},
		{"mock_secret", false}, {"test_token", true}, {"my_fake_token", true},
		// Numbers, abbreviations and providers' names.
		{"password2", true}, {"api_token_123", true}, {"TOKEN_1", true}, {"creds", true}, {"aws_creds", true},
		{"SONAR_LOGIN", true}, {"sonar.login", true}, {"login", false}, {"user_login", false},
		{"sumo_access_id", true}, {"sumologic.accessId", true}, {"access_id", false},
		{"BUNDLE_GEMS__CONTRIBSYS__COM", true}, {"BUNDLE_PATH", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := sensitiveName(tc.name); got != tc.want {
				t.Errorf("sensitiveName(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}

// TestMayNameSecretIsNecessary checks that sensitiveName's quick first
// test never turns away a name that its word by word test finds secret:
// every name built from the words that matter, in any case and with any
// separator, and random names over their letters.
func TestMayNameSecretIsNecessary(t *testing.T) {
	words := []string{"pass", "password", "passwd", "passphrase", "secret", "secrets", "token", "apikey",
		"accesskey", "privatekey", "secretkey", "credential", "credentials", "creds", "cookie", "signature",
		"auth", "authorization", "bearer", "jwt", "sig", "key", "api", "access", "private", "client",
		"sonar", "login", "sumo", "accessid", "id", "public", "fake", "x", "2"}
	cases := []func(string) string{strings.ToLower, strings.ToUpper, func(w string) string {
		return strings.ToUpper(w[:1]) + w[1:]
	}}
	check := func(name string) {
		if secretWords(name) && !mayNameSecret(name) {
			t.Fatalf("mayNameSecret(%q) = false, but the name is secret", name)
		}
	}
	found := 0
	for _, a := range words {
		for _, b := range words {
			for _, sep := range []string{"", "_", "-", ".", "__"} {
				for _, ca := range cases {
					for _, cb := range cases {
						name := ca(a) + sep + cb(b)
						check(name)
						check("my" + sep + name)
						if secretWords(name) {
							found++
						}
					}
				}
			}
		}
	}
	if found < 1000 {
		t.Fatalf("only %d secret names built: the test does not exercise the quick test", found)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "pasSecrtokenuhyidgbjwlAPKTCo_-0"
	buf := make([]byte, 14)
	for range 200000 {
		n := 1 + rng.IntN(len(buf))
		for i := range n {
			buf[i] = letters[rng.IntN(len(letters))]
		}
		check(string(buf[:n]))
	}
}
