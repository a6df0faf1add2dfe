// Package sanitize makes values safe to put in events and the audit log:
// secrets and sensitive fields are replaced by "hmac-sha256:<64 hex>"
// under a per-installation key (so equal secrets can be correlated across
// records, never read), long strings are cut with their original length
// noted, and payloads can be summarised by their keys and size.
//
// # What is redacted
//
// Sanitizer.Value redacts, whole, the values of the dot paths a schema
// declares sensitive and of keys whose names are obviously secret
// (password, token, api_key, authorization, cookie, credentials, …). In
// every other string it replaces each span shaped like a secret:
//
//   - AWS access key ids (AKIA, ASIA, ABIA, ACCA, A3T…, AGPA, AIDA, AROA,
//     AIPA, ANPA, ANVA, APKA + 16) and bare 40-byte secret access keys
//     (all three character classes and >= 4 bits/byte of entropy, so a git
//     SHA-1 stays);
//   - GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), GitLab
//     glpat-, OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-) and Anthropic
//     (sk-ant-…) keys, Stripe (sk_live_, sk_test_, rk_live_, rk_test_,
//     whsec_), Google (AIza…, ya29., GOCSPX-), Slack (xox[abposre]-, xapp-,
//     hooks.slack.com paths), npm_, hf_, SendGrid SG., DigitalOcean dop_v1_,
//     Shopify shpat_, PyPI, Databricks dapi, age secret keys;
//   - JSON Web Tokens (eyJ….….…), PEM and PGP private key blocks (to the END
//     line, or to the end of the text when it is missing);
//   - passwords in URLs (scheme://user:PASSWORD@host), credentials after
//     "Bearer " and after "Authorization:" (the scheme is kept), command-line
//     credentials ("--password x", "--api-key x", "-u user:x", "--user
//     user:x");
//   - values assigned to secret-looking names in text: `password=…`,
//     `"token": "…"`, `apiKey := "…"`, `--password=…`, `Cookie: …`, YAML
//     lines and block scalars, .env lines, query strings, JSON escaped
//     inside JSON.
//
// A span is widened when another secret starts inside it and runs past its
// end (a PEM block after a quoted value, two tokens glued together, a
// "Bearer" swallowed by a value); a URL's whole user information goes when
// the user name is itself a token. Spans nested more than eight deep fail
// closed: the rest of the string is redacted.
//
// Not guaranteed: secrets without a recognisable shape or name (a bare
// password in prose), secrets split across strings, encoded (base64,
// URL-escaped) or obfuscated, and shapes outside the list above. The
// opt-in deep scan (below) covers far more shapes, at a price.
//
// # Why our own rules on the hot path
//
// Value runs on every action's input and observation summary, where the
// whole pipeline has a budget of about 5 µs. The rules are a hand-written
// single pass: a two-byte trigger table picks the few positions where a
// rule can start, fixed-prefix matchers and a cached per-class run length
// do the rest, no regular expression runs, clean strings are returned
// without copying, and hostile input ("sk-sk-sk-…") stays linear.
//
// gitleaks v8.30.1 (222 rules, Aho-Corasick keyword pre-filter, entropy
// thresholds) was measured against it on the same inputs. Its pre-filter
// is already the "rules behind a fast keyword pre-filter" design, and it
// only helps on text without keywords: logs and code are full of "key",
// "token", "auth", which wake up its regular expressions. Numbers (AMD
// EPYC, 2 cores shared with five other busy workers, load average 10-16;
// CPU time per operation from getrusage, range over several runs, which
// the load inflates far less than wall time; wall-clock MB/s varied from
// 70 to 310 for the first row depending on the load):
//
//	input                               ours                  gitleaks (last row: DeepScanner)
//	1 MiB code/logs/JSON, 4 secrets     320-460 MB/s          2.3-2.8 MB/s (~380 µs/KiB)
//	1 MiB plain prose                   590-1000 MB/s         200-280 MB/s
//	1 MiB as 1 KiB strings via Value    390-480 MB/s          2.8-3.3 MB/s
//	4-key action input via Value        0.6-0.7 µs, 2 allocs  41-53 µs, 24 allocs
//
// So the hot path uses the compact rule set (>= 100 MB/s target met with
// margin), and gitleaks is an opt-in deep scan, DeepScanner, compiled only
// with the build tag "gitleaks" (it needs
// `go get github.com/zricethezav/gitleaks/v8@v8.30.1`), for sinks that can
// afford it. Reproduce with:
//
//	go test -run '^$' -bench . ./sanitize
//	go test -tags gitleaks -run '^$' -bench . ./sanitize
//
// # Keys
//
// LoadOrCreateKey keeps the HMAC key in a 0600 file, created with 32 random
// bytes on first use. Whoever holds the key can confirm a guess of a
// redacted value, so low-entropy secrets (PINs, short passwords) are only
// as safe as the key file.
package sanitize
