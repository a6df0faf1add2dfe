package policy

import (
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// The repeat checks compare actionHash, which must be the canonical hash
// (action.Action.Hash) that audit records and tokens name.
func TestActionHashIsTheCanonicalHash(t *testing.T) {
	for name, a := range map[string]action.Action{
		"no input":     {Name: "workspace_list_files"},
		"empty input":  {Name: "workspace_list_files", Input: map[string]any{}},
		"nested":       {Name: "mcp_call", Input: map[string]any{"server": "s", "arguments": map[string]any{"b": []any{1.0, "x", nil, true}, "a": json.Number("1e0")}}},
		"escapes":      {Name: "n\"a<me>", Input: map[string]any{"é\u2028": "\x00<"}},
		"order-proof":  {Name: "x", Input: map[string]any{"z": 1, "a": 2}},
		"other fields": {Name: "x", Tenant: "t", SessionID: "s", Trusted: true},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := a.Hash()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := actionHash(a)
			if !ok || hex.EncodeToString(got[:]) != want {
				t.Fatalf("actionHash %x, Hash %s", got, want)
			}
		})
	}
	if _, ok := actionHash(action.Action{Name: "x", Input: map[string]any{"f": func() {}}}); ok {
		t.Fatal("an input without a canonical form was hashed")
	}
}
