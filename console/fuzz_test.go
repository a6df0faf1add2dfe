package console

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzInert: whatever an action carries, in a value or a key, the JSON
// the console answers with holds no control, format or separator
// character but newline and tab, and is valid UTF-8.
func FuzzInert(f *testing.F) {
	f.Add("plain", "key")
	f.Add("<script>alert(1)</script>\u202e# harmless", "k\u200bey")
	f.Add("\x1b[2J\r\u2066\u2069\ufeff\xff", "\u0085")
	f.Add("tab\tand\nnewline", "")
	f.Fuzz(func(t *testing.T, value, key string) {
		v, err := inert(map[string]any{key: []any{value, map[string]any{"nested": value}}})
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var back any
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatal(err)
		}
		var walk func(any)
		check := func(s string) {
			if !utf8.ValidString(s) {
				t.Fatalf("invalid UTF-8 in %q", s)
			}
			for _, r := range s {
				if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029') {
					t.Fatalf("%U left in %q", r, s)
				}
			}
		}
		walk = func(x any) {
			switch y := x.(type) {
			case string:
				check(y)
			case []any:
				for _, e := range y {
					walk(e)
				}
			case map[string]any:
				for k, e := range y {
					check(k)
					walk(e)
				}
			}
		}
		walk(back)
		if strings.ContainsRune(value, '\u202e') && !strings.Contains(string(data), "⟨U+202E⟩") {
			t.Fatalf("no marker for U+202E in %s", data)
		}
	})
}
