package sanitize

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Inert returns s made safe to show a person: every character that can
// change how the text around it is displayed without being visible itself
// is replaced by a visible escape such as ⟨U+202E⟩. That is every control
// character but newline and tab (carriage returns and escape sequences can
// overwrite what a terminal shows), every Unicode format character
// (bidirectional overrides and isolates, zero-width characters, the byte
// order mark, tag characters), the line and paragraph separators, and
// invalid UTF-8 (⟨0xNN⟩). A diff shown for approval that adds
// "curl … | sh" can then not be displayed as "# harmless".
//
// Text that needs none of this is returned unchanged, without copying.
func Inert(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, size) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString("⟨0x")
			b.WriteString(strconv.FormatUint(uint64(s[i]), 16))
			b.WriteString("⟩")
		case needsEscape(r, size):
			b.WriteString("⟨U+")
			h := strings.ToUpper(strconv.FormatUint(uint64(r), 16))
			b.WriteString(strings.Repeat("0", max(0, 4-len(h))))
			b.WriteString(h)
			b.WriteString("⟩")
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsEscape(r rune, size int) bool {
	switch {
	case r == utf8.RuneError && size == 1:
		return true
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		return true
	case r == '\u2028' || r == '\u2029':
		return true
	}
	return r >= 0xa0 && unicode.Is(unicode.Cf, r)
}
