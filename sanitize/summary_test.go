package sanitize

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		name    string
		payload map[string]any
		keys    []string
	}{
		{"nil", nil, []string{}},
		{"empty", map[string]any{}, []string{}},
		{"flat", map[string]any{"stdout": "hello\n", "exit_code": 0.0, "ok": true}, []string{"exit_code", "ok", "stdout"}},
		{
			"nested", map[string]any{
				"files": []any{map[string]any{"path": "a\"b", "size": 12.0}, nil},
				"tags":  []string{"x", "y\\"}, "env": map[string]string{"A": "\x01"}, "n": json.Number("12.5"), "i": 7, "big": int64(1) << 40,
			},
			[]string{"big", "env", "files", "i", "n", "tags"},
		},
		{"other type", map[string]any{"t": struct{ A int }{3}}, []string{"t"}},
		{"unicode", map[string]any{"s": "héllo ✓"}, []string{"s"}},
		{"escapes", map[string]any{"s": "<a href=\"x\">&</a>\b\f\x01\x7f\xff\u2028\u2029\\"}, []string{"s"}},
		{"floats", map[string]any{"a": 1e6, "b": 1e21, "c": 1e-7, "d": 0.0, "e": -2.5e-9, "f": 123456789.125, "g": 1e100}, []string{"a", "b", "c", "d", "e", "f", "g"}},
		{"escaped keys", map[string]any{"<k>": "v", "\n": nil}, []string{"\n", "<k>"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Summarize(tc.payload)
			if !reflect.DeepEqual(got["keys"], tc.keys) {
				t.Errorf("keys = %#v, want %#v", got["keys"], tc.keys)
			}
			enc, err := json.Marshal(tc.payload)
			if err != nil {
				t.Fatal(err)
			}
			if got["bytes"] != len(enc) {
				t.Errorf("bytes = %v, want %d (%s)", got["bytes"], len(enc), enc)
			}
			if len(got) != 2 {
				t.Errorf("summary has extra fields: %v", got)
			}
		})
	}
}

// FuzzSummarize holds the computed size to json.Marshal's.
func FuzzSummarize(f *testing.F) {
	f.Add("k", "v", 1.5)
	f.Add("<", "\xff\u2028\x00", 1e21)
	f.Add("", "\\\"", -1e-7)
	f.Fuzz(func(t *testing.T, k, v string, x float64) {
		payload := map[string]any{k: v, k + "x": x, k + "y": []any{v, x, nil, true}}
		enc, err := json.Marshal(payload)
		if err != nil {
			t.Skip("not encodable")
		}
		if got := Summarize(payload)["bytes"]; got != len(enc) {
			t.Fatalf("bytes = %v, want %d (%s)", got, len(enc), enc)
		}
	})
}
