package testkit

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// CanonicalMatchesJSON fails t unless action.Canonical(v), which takes a
// CanonicalValuer's fast path, gives exactly the bytes of the JSON round
// trip (json.Marshal, then the canonical form of that): the audit log
// hashes these bytes, so the two paths must never differ.
func CanonicalMatchesJSON(t testing.TB, v any) {
	t.Helper()
	fast, err := action.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := action.Canonical(json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast, slow) {
		t.Fatalf("fast canonical form differs:\nfast %s\nslow %s", fast, slow)
	}
}
