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
//     secretkey, credential(s), cookie, authorization, auth, bearer, jwt or
//     signature, or equal to sig ("max_tokens", "token_count" and "author"
//     stay);
//   - so does a last word "key" after api, access, private, secret,
//     signing, encryption, master, account, client, storage, subscription,
//     shared, session, hmac or auth ("public_key", "sort_key" stay);
//   - and a few providers' names for their credentials: "creds",
//     SONAR_LOGIN (a SonarQube token), Sumo Logic's access id, Bundler's
//     per-host credentials (BUNDLE_GEMS__EXAMPLE__COM).
//
// A name whose last word says it is about a secret rather than the
// secret ("secret_name", "password_length", "token_type", "secret_arn")
// is not secret, nor is one whose last word follows "public" or
// "publishable" ("publicToken"), nor one whose last word is id after a
// word other than secret ("UserSecretsId", "token_id"; Vault's
// "secret_id" stays), nor one whose first word says the value is made up
// ("fakeToken", "dummy_password", "nonMatchingToken"), nor an
// anti-forgery token's ("csrf-token", "authenticity_token"), a nonce
// every browser that loads the page is given. Digits ending a word or forming one are
// ignored ("password2", "api_token_123"). It does not allocate.
func sensitiveName(name string) bool {
	if len(name) > 7 && name[:7] == "BUNDLE_" && strings.Contains(name[7:], "__") {
		return true
	}
	return mayNameSecret(name) && secretWords(name)
}

// secretWords is sensitiveName's word by word test (see there).
func secretWords(name string) bool {
	var prevBuf, lastBuf [16]byte
	var prev, last []byte
	sumo, secret := false, false
	words := 0
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
		w := j
		for w > i && name[w-1] >= '0' && name[w-1] <= '9' {
			w--
		}
		if w == i {
			i = j
			continue // a number: "token_123"
		}
		prevBuf = lastBuf
		prev = prevBuf[:len(last)]
		// Only a word's last 16 bytes matter: every suffix below is shorter.
		last = lower(lastBuf[:0], name[max(i, w-16):w])
		if words == 0 && notRealWord(last) || antiForgeryWord(last) {
			return false
		}
		words++
		if anyWordSecret(last) {
			secret = true
		}
		sumo = sumo || hasPrefix(last, "sumo")
		i = j
	}
	if len(last) == 0 || metadataWord(last) || string(prev) == "public" || string(prev) == "publishable" {
		return false
	}
	if (string(last) == "id" || string(last) == "ids") && string(prev) != "secret" && !sumo {
		return false // the identifier of a secret ("UserSecretsId", "token_id"), not the secret
	}
	if secret {
		return true
	}
	if lastWordSecret(last) {
		return true
	}
	switch {
	case string(last) == "creds":
		return true
	case string(last) == "login" && string(prev) == "sonar":
		return true
	case sumo && (string(last) == "accessid" || string(last) == "id" && string(prev) == "access"):
		return true
	}
	if string(last) == "key" {
		switch string(prev) {
		case "api", "access", "private", "secret", "signing", "encryption", "master",
			"account", "client", "storage", "subscription", "shared", "session", "hmac", "auth":
			return true
		}
	}
	return false
}

// mayNameSecret is sensitiveName's quick first test: every way in which
// secretWords finds a name secret needs one of nameStems in it, in any
// case (its words are pieces of the name, lower-cased). Most names
// ("path", "id", "status") have none, and are turned away after one pass
// over their bytes with a table of three-letter stems.
func mayNameSecret(name string) bool {
	// h holds the last three bytes read, five bits each (a letter's
	// position in the alphabet); before the third byte its top groups are
	// zero, which no stem has.
	h := uint16(0)
	for i := 0; i < len(name); i++ {
		h = (h<<5 | uint16(name[i]|0x20)&31) & (1<<15 - 1)
		if stemBits[h>>6]&(1<<(h&63)) != 0 {
			return true
		}
	}
	return false
}

// nameStems are the first three letters of the words that make a name
// secret in sensitiveName: pass(word), secret, token, auth(orization),
// key, cred(ential), cookie, sig(nature), bearer, jwt, login (SonarQube)
// and sumo (Sumo Logic).
var nameStems = []string{"pas", "sec", "tok", "aut", "key", "cre", "coo", "sig", "bea", "jwt", "log", "sum"}

// stemBits holds the nameStems, five bits a letter (as mayNameSecret
// hashes the last three bytes it has read).
var stemBits = func() (t [1 << 9]uint64) {
	for _, w := range nameStems {
		h := uint16(w[0]&31)<<10 | uint16(w[1]&31)<<5 | uint16(w[2]&31)
		t[h>>6] |= 1 << (h & 63)
	}
	return t
}()

// metadataWord: a last word that names something about a secret, not the
// secret ("secret_name", "password_length", "token_type").
func metadataWord(w []byte) bool {
	switch string(w) {
	case "name", "names", "length", "len", "size", "count", "type", "path", "file", "dir",
		"ref", "version", "prefix", "suffix", "format", "policy", "ttl", "expiry", "expires",
		"expiration", "url", "uri", "arn", "label", "field", "env", "var":
		return true
	}
	return false
}

// notRealWord: a first word that says the value is not a real secret
// ("fakeToken", "dummy_password", "invalidApiKey", "nonMatchingToken"):
// test fixtures name their made-up credentials so.
func notRealWord(w []byte) bool {
	switch string(w) {
	case "fake", "dummy", "mock", "bogus", "invalid", "example", "sample", "placeholder", "non", "not":
		return true
	}
	return false
}

// antiForgeryWord: a word of an anti-forgery token's name ("csrf-token",
// "authenticity_token", "X-XSRF-TOKEN"). Such a token is a per-page nonce
// served to every browser that loads the page, not a credential.
func antiForgeryWord(w []byte) bool {
	switch string(w) {
	case "csrf", "xsrf", "authenticity", "csrftoken", "xsrftoken":
		return true
	}
	return false
}

// anyWordSecret: a word anywhere in the name that makes it secret.
func anyWordSecret(w []byte) bool {
	switch w[len(w)-1] {
	case 'd':
		return hasSuffix(w, "password") || hasSuffix(w, "passwd")
	case 'e':
		return hasSuffix(w, "passphrase")
	case 't':
		return hasSuffix(w, "secret")
	case 's':
		return hasSuffix(w, "secrets")
	}
	return false
}

// lastWordSecret: a last word that makes the name secret.
func lastWordSecret(w []byte) bool {
	switch w[len(w)-1] {
	case 'n':
		return hasSuffix(w, "token") || hasSuffix(w, "authorization")
	case 'y':
		return hasSuffix(w, "apikey") || hasSuffix(w, "accesskey") || hasSuffix(w, "privatekey") || hasSuffix(w, "secretkey")
	case 'l':
		return hasSuffix(w, "credential")
	case 's':
		return hasSuffix(w, "credentials")
	case 'e':
		// Presigned URLs (X-Amz-Signature) grant access.
		return hasSuffix(w, "cookie") || hasSuffix(w, "signature")
	case 'h':
		return hasSuffix(w, "auth")
	case 'r':
		return hasSuffix(w, "bearer")
	case 't':
		return hasSuffix(w, "jwt")
	case 'g':
		return string(w) == "sig" // Azure SAS
	}
	return false
}

// lower appends the ASCII lower case of s to dst.
func lower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUpper(c) {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

func hasPrefix(w []byte, prefix string) bool {
	return len(w) >= len(prefix) && string(w[:len(prefix)]) == prefix
}

func hasSuffix(w []byte, suffix string) bool {
	return len(w) >= len(suffix) && string(w[len(w)-len(suffix):]) == suffix
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix)
}

func isAlnum(c byte) bool { return isLower(c) || isUpper(c) || (c >= '0' && c <= '9') }
func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool { return c >= 'a' && c <= 'z' }
