package trusted

import (
	"testing"
	"time"

	"github.com/harness-runtime/harness/internal/testkit"
)

// TestTokenRecordCanonicalValue: the audit log hashes the canonical form of
// a token record; its CanonicalValue must give exactly the bytes the JSON
// round trip gives.
func TestTokenRecordCanonicalValue(t *testing.T) {
	cases := map[string]TokenRecord{
		"empty": {},
		"minted": {Kind: "trusted_token", Event: TokenMinted, TokenRef: "0123456789abcdef", Principal: "alice",
			Action: "workspace_apply_patch", ActionHash: "ab12", ExpiresAt: time.Date(2026, 11, 22, 1, 2, 3, 456789000, time.UTC),
			Files: 1, ActionID: "tok-0123456789abcdef"},
		"all fields": {Kind: "trusted_token", Event: TokenStale, TokenRef: "r", Principal: "p\u2028<é>", Tenant: "t",
			Action: "a", ActionHash: "h", SessionID: "s", ExpiresAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
			Files: 12, ActionID: "id", Reason: "f.txt changed since the preview; \"preview\" again"},
		"bad utf8": {Principal: "\xff", Reason: "a\xffb"},
	}
	for name, r := range cases {
		t.Run(name, func(t *testing.T) { testkit.CanonicalMatchesJSON(t, r) })
	}
}
