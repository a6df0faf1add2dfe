package sanitize

import "strings"

// sensitiveName reports whether a field, header, variable or flag name is
// obviously secret, whatever its spelling: "password", "DB_PASSWORD",
// "clientSecret", "x-api-key", "AWS_SECRET_ACCESS_KEY", "access_token",
// "Set-Cookie", "--password". The name is split into words at separators
// and camelCase boundaries, then:
//   - any word ending in password, passwd, passphrase, secret or secrets
//     makes it secret;
//   - so does a last word ending in token, apikey, accesskey, privatekey,
//     secretkey, credential(s), cookie, authorization, auth, bearer or jwt
//     ("max_tokens", "token_count" and "author" stay);
//   - so does a last word "key" after api, access, private, secret,
//     signing, encryption, master, account, client, storage, subscription,
//     shared, session, hmac or auth ("public_key", "sort_key" stay).
func sensitiveName(name string) bool {
	var prev, last string
	for i := 0; i < len(name); {
		for i < len(name) && !isAlnum(name[i]) {
			i++
		}
		if i >= len(name) {
			break
		}
		j := i + 1
		for j < len(name) && isAlnum(name[j]) {
			c, p := name[j], name[j-1]
			if isUpper(c) && !isUpper(p) {
				break
			}
			if isUpper(c) && isUpper(p) && j+1 < len(name) && isLower(name[j+1]) {
				break
			}
			j++
		}
		w := name[i:j]
		if hasSuffixFold(w, "password") || hasSuffixFold(w, "passwd") || hasSuffixFold(w, "passphrase") ||
			hasSuffixFold(w, "secret") || hasSuffixFold(w, "secrets") {
			return true
		}
		prev, last = last, w
		i = j
	}
	if last == "" {
		return false
	}
	for _, suf := range lastWordSuffixes {
		if hasSuffixFold(last, suf) {
			return true
		}
	}
	if strings.EqualFold(last, "key") {
		for _, q := range keyQualifiers {
			if strings.EqualFold(prev, q) {
				return true
			}
		}
	}
	return false
}

var lastWordSuffixes = []string{
	"token", "apikey", "accesskey", "privatekey", "secretkey", "credential",
	"credentials", "cookie", "authorization", "auth", "bearer", "jwt",
}

var keyQualifiers = []string{
	"api", "access", "private", "secret", "signing", "encryption", "master",
	"account", "client", "storage", "subscription", "shared", "session",
	"hmac", "auth",
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

func isAlnum(c byte) bool { return isLower(c) || isUpper(c) || (c >= '0' && c <= '9') }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
