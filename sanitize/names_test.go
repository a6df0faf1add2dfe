package sanitize

import "testing"

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
