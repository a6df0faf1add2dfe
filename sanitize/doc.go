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
//   - Harness's own secrets, always, by shape: confirmation tokens
//     ("htk_" + 43 base64url bytes), the API key `harness serve --demo`
//     mints ("demo_" + 32) and harness-load's ("load_" + 48 hex);
//   - about a hundred providers' token formats, by prefix and shape, as
//     gitleaks v8.30.1 describes them (shapes.go lists them): AWS key ids
//     and Bedrock keys, bare 40-byte AWS secret access keys (all three
//     character classes and >= 4 bits/byte of entropy, so a git SHA-1
//     stays), GitHub, GitLab (glpat-, gldt-, glrt-, glcbt-, gloas-, …),
//     OpenAI, Anthropic, Stripe, Google, Slack (and Teams webhook URLs),
//     HashiCorp Vault and Terraform Cloud, Entra ID (Azure AD) client
//     secrets, 1Password, Sentry, Grafana, Fly.io, Doppler, Pulumi,
//     Linear, Notion, Postman, Atlassian, Twilio, Square, Telegram bot
//     tokens, package registries and many more. Most need a word boundary
//     before them, so that "task_test_…" or "&hf_…" inside an identifier
//     is not a token, and a fixed length where the format has one;
//     placeholders ("ghp_xxxx…", "AKIA…EXAMPLE") are left alone;
//   - JSON Web Tokens (eyJ….….…), PEM and PGP private key blocks (to the END
//     line, or to the end of the text when it is missing);
//   - base64 (either alphabet, padded or not) and hex runs of 16 bytes or
//     more that decode to printable text holding any of these (two layers
//     deep): the whole run goes;
//   - passwords in user information, with or without a scheme
//     (scheme://user:PASSWORD@host, //user:PASSWORD@host,
//     user:PASSWORD@host.example: a host with a dot or a port), credentials
//     after "Bearer " and after "Authorization:" (the scheme is kept),
//     command-line credentials ("--password x", "--api-key x", "-u
//     user:x", "--user user:x", "-u APIKEY:");
//   - values assigned to secret-looking names in text: `password=…`,
//     `"token": "…"`, the operators := ::= :::= ?= ??= .= += =>, typed
//     declarations (`var apiToken string = "…"`, `token: String = "…"`),
//     `setProperty("API_TOKEN", "…")`, `<password>…</password>`, `<add
//     key="ClearTextPassword" value="…"/>`, `--password=…`, `Cookie: …`,
//     YAML lines and block scalars, .env lines, query strings, JSON escaped
//     inside JSON, the data of a Kubernetes Secret manifest. A value that
//     is plainly a reference or a placeholder (`${VAR}`, `$(cmd)`, `{{ … }}`,
//     `<your token>`, `xxxx`, a masked `xoxp-123…-####…`, `ENC[…]`,
//     `var.db_password`, a package at a version), the name of another
//     value (`"token:"`), or too short for a key or token (under 10 bytes;
//     passwords may be shorter) is left alone, and so are names that say
//     the value is made up (`fakeToken`, `dummy_password`), anti-forgery
//     nonces (`csrf-token`, `authenticity_token`) and identifiers of a
//     secret (`UserSecretsId`, `token_id`).
//
// A span is widened when another secret starts inside it and runs past its
// end (a PEM block after a quoted value, two tokens glued together, a
// "Bearer" swallowed by a value); a URL's whole user information goes when
// the user name is itself a token. Spans nested more than eight deep fail
// closed: the rest of the string is redacted.
//
// Measured on gitleaks' own rule examples (TestGitleaksCorpus; `go test
// -run '^$' -bench GitleaksCorpus ./sanitize` prints the table), the
// sanitizer finds at least 95% of what gitleaks finds in every rule
// family, as written and with each secret alone, and changes 9.9% of
// gitleaks' negative examples (4.4% once the public sample keys gitleaks
// allowlists by value, and negatives that differ only by file name, are
// set aside): most of the rest are values assigned to secret-looking names
// that gitleaks rejects for their format (a Telegram token of the wrong
// length under telegram_api_token), which this sanitizer redacts by
// design.
//
// Not guaranteed: secrets without a recognisable shape or name (a bare
// password in prose), secrets split across strings, encoded in other ways
// (URL-escaped, compressed, encrypted, base64 of non-ASCII text or glued
// to other base64), obfuscated, and shapes outside shapes.go. The opt-in
// deep scan (below) covers more, at a price.
//
// # Why our own rules on the hot path
//
// Value runs on every action's input and observation summary, where the
// whole pipeline has a budget of about 5 µs, and under
// redact-observations every byte a command prints. The rules are a
// hand-written single pass: a byte-pair table, read eight positions at a
// time (text uses few pairs, so the part in use stays in the first-level
// cache), picks the few positions where a rule can start, a trigger per
// pair checks the third byte and whether a word boundary is needed, and
// only then do the pair's fixed-prefix matchers run, with a cached
// per-class run length; runs of base64 are found eight bytes at a time
// and looked at once, when they end, and most are dismissed by their
// first decoded bytes. No regular expression runs, clean strings
// are returned without copying, and hostile input ("sk-sk-sk-…", "a:a:…")
// stays linear.
//
// gitleaks v8.30.1 (222 rules, Aho-Corasick keyword pre-filter, entropy
// thresholds) was measured against it on the same inputs. Its pre-filter
// is already the "rules behind a fast keyword pre-filter" design, and it
// only helps on text without keywords: logs and code are full of "key",
// "token", "auth", which wake up its regular expressions. Numbers (AMD
// EPYC, 2 cores shared with five other busy workers, load average 10-16;
// CPU time per operation from getrusage, range over several runs, which
// the load inflates far less than wall time; wall-clock MB/s varied from
// 110 to 400 for the first row depending on the load):
//
//	input                               ours                  gitleaks (last row: DeepScanner)
//	1 MiB code/logs/JSON, 4 secrets     400-420 MB/s          2.3-2.8 MB/s (~380 µs/KiB)
//	1 MiB plain prose                   950-1000 MB/s         200-280 MB/s
//	1 MiB as 1 KiB strings via Value    400-430 MB/s          2.8-3.3 MB/s
//	4-key action input via Value        0.5-0.55 µs, 2 allocs 41-53 µs, 24 allocs
//
// (The shapes, encodings and forms added to match gitleaks' recall cost
// about a third of the first row: the rule set before them ran at 550-600
// MB/s on the same machine.) So the hot path uses its own rules (>= 300
// MB/s target met), and gitleaks is an opt-in deep scan, DeepScanner, compiled only
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
