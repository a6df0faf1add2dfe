package workspace

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/harness-runtime/harness/action"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"single word", "pwd", []string{"pwd"}},
		{"spaces and tabs", "  ls \t -la   src ", []string{"ls", "-la", "src"}},
		{"single quotes keep spaces", "rg 'a b' src", []string{"rg", "a b", "src"}},
		{"single quotes keep backslash", `rg 'a\b'`, []string{"rg", `a\b`}},
		{"double quotes", `rg "a b"`, []string{"rg", "a b"}},
		{"double quote escapes", `rg "a\"b\\c\d"`, []string{"rg", `a"b\c\d`}},
		{"backslash outside quotes", `rg a\ b`, []string{"rg", "a b"}},
		{"adjacent quoted parts join", `rg a'b'"c"`, []string{"rg", "abc"}},
		{"empty quoted word", `git log --grep ''`, []string{"git", "log", "--grep", ""}},
		{"no glob expansion", "ls *.go", []string{"ls", "*.go"}},
		{"no tilde expansion", "ls ~", []string{"ls", "~"}},
		{"no brace expansion", "ls {a,b}", []string{"ls", "{a,b}"}},
		{"utf-8 words", "rg héllo", []string{"rg", "héllo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Tokenize(tt.in)
			if err != nil {
				t.Fatalf("Tokenize(%q): %v", tt.in, err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTokenizeRefusesMetacharacters(t *testing.T) {
	tests := []struct {
		name string
		in   string
		code action.Code
		word string // named in the error payload, when set
	}{
		{"semicolon", "ls; rm -rf x", action.CodeArgumentNotAllowed, ";"},
		{"pipe", "ls | cat", action.CodeArgumentNotAllowed, "|"},
		{"and", "ls && touch x", action.CodeArgumentNotAllowed, "&"},
		{"background", "ls &", action.CodeArgumentNotAllowed, "&"},
		{"dollar variable", "ls $HOME", action.CodeArgumentNotAllowed, "$"},
		{"command substitution", "ls $(id)", action.CodeArgumentNotAllowed, "$"},
		{"backticks", "ls `id`", action.CodeArgumentNotAllowed, "`"},
		{"redirect out", "ls > x", action.CodeArgumentNotAllowed, ">"},
		{"redirect in", "cat < /etc/passwd", action.CodeArgumentNotAllowed, "<"},
		{"subshell", "(ls)", action.CodeArgumentNotAllowed, "("},
		{"newline", "ls\ntouch x", action.CodeArgumentNotAllowed, `\n`},
		{"carriage return", "ls\rx", action.CodeArgumentNotAllowed, `\r`},
		{"inside single quotes too", "rg 'a;b'", action.CodeArgumentNotAllowed, ";"},
		{"inside double quotes too", `rg "$x"`, action.CodeArgumentNotAllowed, "$"},
		{"escaped metachar too", `rg a\;b`, action.CodeArgumentNotAllowed, ";"},
		{"NUL byte", "ls \x00", action.CodeArgumentNotAllowed, ""},
		{"escape sequence", "ls \x1b[2J", action.CodeArgumentNotAllowed, ""},
		{"invalid utf-8", "ls \xff", action.CodeInvalidInput, ""},
		{"unterminated single quote", "rg 'abc", action.CodeInvalidInput, ""},
		{"unterminated double quote", `rg "abc`, action.CodeInvalidInput, ""},
		{"trailing backslash", `rg abc\`, action.CodeInvalidInput, ""},
		{"empty", "", action.CodeInvalidInput, ""},
		{"only blanks", " \t ", action.CodeInvalidInput, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Tokenize(tt.in)
			if err == nil {
				t.Fatalf("Tokenize(%q) = %q, want error %s", tt.in, got, tt.code)
			}
			if c := action.CodeOf(err); c != tt.code {
				t.Fatalf("Tokenize(%q) code = %s, want %s (%v)", tt.in, c, tt.code, err)
			}
			if tt.word != "" {
				assertNamesWord(t, err, tt.word)
			}
		})
	}
}

// assertNamesWord checks that a refusal names the offending word both in
// its message and in its payload.
func assertNamesWord(t *testing.T, err error, word string) {
	t.Helper()
	var e *action.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *action.Error", err)
	}
	if e.Payload["word"] != word {
		t.Errorf("payload word = %v, want %q", e.Payload["word"], word)
	}
	if !strings.Contains(e.Message, word) {
		t.Errorf("message %q does not name %q", e.Message, word)
	}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"pwd", `rg "a b" 'c d' e\ f`, "ls; id", `"unterminated`, "a\\", "git log --grep=''", "ls \x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := Tokenize(s)
		if err != nil {
			if action.CodeOf(err) == action.CodeInternal {
				t.Fatalf("Tokenize(%q): uncoded error %v", s, err)
			}
			return
		}
		if len(words) == 0 {
			t.Fatalf("Tokenize(%q) accepted with no words", s)
		}
		for _, w := range words {
			if strings.ContainsAny(w, refusedMetachars) || strings.ContainsRune(w, 0) {
				t.Fatalf("Tokenize(%q) let a metacharacter through in %q", s, w)
			}
			if !utf8.ValidString(w) {
				t.Fatalf("Tokenize(%q) produced invalid UTF-8 %q", s, w)
			}
		}
	})
}
