package workspace

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/harness-runtime/harness/action"
)

// refusedMetachars are the characters a shell would give meaning to
// (sequencing, pipes, background jobs, substitution, redirection,
// subshells). No shell ever sees the command, so they would only mislead a
// reader into thinking they do something; Tokenize refuses them anywhere,
// even inside quotes.
const refusedMetachars = ";|&$`><()\n\r"

// Tokenize splits a workspace_run_shell command into words the way a POSIX
// shell splits a simple command, and nothing more:
//
//   - words are separated by spaces and tabs;
//   - 'single quotes' keep everything up to the next single quote literally;
//   - "double quotes" keep everything literally except \" and \\, which
//     stand for " and \;
//   - outside quotes, a backslash makes the next character literal;
//   - an empty quoted string (” or "") is an empty word.
//
// It never expands anything: no variables, globs (* ? [), tildes, braces,
// command or arithmetic substitution, and it has no redirections, pipes or
// sequencing. The characters ; | & $ ` > < ( ) and newlines are refused
// wherever they appear (code argument_not_allowed, naming the character), as
// are NUL and other control characters. An unterminated quote, a trailing
// backslash or an empty command is invalid_input.
func Tokenize(command string) ([]string, error) {
	if !utf8.ValidString(command) {
		return nil, action.Errorf(action.CodeInvalidInput, "command is not valid UTF-8")
	}
	for i, r := range command {
		if strings.ContainsRune(refusedMetachars, r) {
			return nil, metacharError(r, i)
		}
		if r != '\t' && (unicode.IsControl(r) || r == 0x2028 || r == 0x2029) {
			return nil, action.Errorf(action.CodeArgumentNotAllowed,
				"control character %q at byte %d is not allowed in a command", r, i)
		}
	}

	var (
		words   []string
		cur     strings.Builder
		inWord  bool // a word has started (possibly empty, from quotes)
		quote   rune // 0, '\'' or '"'
		escaped bool
	)
	for _, r := range command {
		switch {
		case escaped:
			if quote == '"' && r != '"' && r != '\\' {
				cur.WriteRune('\\')
			}
			cur.WriteRune(r)
			escaped = false
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch r {
			case '"':
				quote = 0
			case '\\':
				escaped = true
			default:
				cur.WriteRune(r)
			}
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == '\\':
			escaped = true
			inWord = true
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	switch {
	case escaped:
		return nil, action.Errorf(action.CodeInvalidInput, "command ends with a backslash")
	case quote != 0:
		return nil, action.Errorf(action.CodeInvalidInput, "command has an unterminated %c quote", quote)
	}
	if inWord {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, action.Errorf(action.CodeInvalidInput, "command is empty")
	}
	return words, nil
}

func metacharError(r rune, at int) *action.Error {
	name := string(r)
	switch r {
	case '\n':
		name = `\n`
	case '\r':
		name = `\r`
	}
	e := action.Errorf(action.CodeArgumentNotAllowed,
		"shell metacharacter %q at byte %d is not allowed: the command is never given to a shell", name, at)
	e.Payload = map[string]any{"word": name}
	return e
}
