package workspace

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// gitConfigEntry is one variable of a git configuration file, named the
// way git names it: section and key lower-cased, subsection as written.
// A nil value is a bare key ("[core] bare" means true).
type gitConfigEntry struct {
	section    string
	subsection *string
	key        string
	value      *string
}

// name is the canonical "section[.subsection].key".
func (e gitConfigEntry) name() string {
	if e.section == "" { // a key before any section header
		return e.key
	}
	if e.subsection == nil {
		return e.section + "." + e.key
	}
	return e.section + "." + *e.subsection + "." + e.key
}

// errGitConfigSyntax is what git would call "bad config line".
var errGitConfigSyntax = errors.New("bad config line")

// parseGitConfig reads a configuration file with git's grammar (config.c,
// parse_source): case-insensitive section and key names, case-sensitive
// quoted subsections, the legacy "[section.sub]" form (lower-cased),
// quotes, the escapes \\ \" \n \t \b, continuation lines, '#' and ';'
// comments, bare keys, a UTF-8 byte order mark, CRLF. git's isspace is
// space, tab, CR and LF only.
//
// A file with a NUL byte is refused although git reads one (it cuts the
// value there): such a file is not something a person wrote. Whatever the
// parser makes of a file, git never reads the file itself, only the copy
// written from the entries (writeGitConfig), so a difference between this
// parser and git's can garble an inert value but cannot smuggle a key.
func parseGitConfig(data []byte) ([]gitConfigEntry, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errors.New("NUL byte in configuration")
	}
	p := configParser{data: bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), line: 1}
	return p.parse()
}

type configParser struct {
	data []byte
	pos  int
	line int
	eof  bool
}

func gitIsSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func gitIsKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func gitIsAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func gitLower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// next mirrors git's get_next_char: CRLF reads as LF, the end of the data
// as a final LF with eof set.
func (p *configParser) next() byte {
	if p.pos >= len(p.data) {
		p.eof = true
		return '\n'
	}
	c := p.data[p.pos]
	p.pos++
	if c == '\r' && p.pos < len(p.data) && p.data[p.pos] == '\n' {
		p.pos++
		c = '\n'
	}
	if c == '\n' {
		p.line++
	}
	return c
}

func (p *configParser) errorf() error {
	return fmt.Errorf("%w %d", errGitConfigSyntax, p.line)
}

func (p *configParser) parse() ([]gitConfigEntry, error) {
	var out []gitConfigEntry
	var base []byte // the section stem: lower-cased name, then '.' subsection
	haveBase := false
	comment := false
	for {
		c := p.next()
		if c == '\n' {
			if p.eof {
				return out, nil
			}
			comment = false
			continue
		}
		if comment || gitIsSpace(c) {
			continue
		}
		if c == '#' || c == ';' {
			comment = true
			continue
		}
		if c == '[' {
			b, err := p.baseVar()
			if err != nil {
				return nil, err
			}
			base, haveBase = b, true
			continue
		}
		if !gitIsAlpha(c) {
			return nil, p.errorf()
		}
		e, err := p.entry(c)
		if err != nil {
			return nil, err
		}
		if haveBase {
			// The stem is "name" or "name" + "\x00" + subsection: the
			// subsection may hold dots, which the canonical string
			// cannot tell apart from the name's own.
			name, sub, hasSub := bytes.Cut(base, []byte{0})
			full := string(name)
			if hasSub {
				full += "." + string(sub)
			}
			e = splitGitConfigName(full, e)
		}
		out = append(out, e)
	}
}

// splitGitConfigName splits "stem" as git does a canonical name: section
// up to the first dot, subsection up to the key (git's parse_config_key).
func splitGitConfigName(stem string, e gitConfigEntry) gitConfigEntry {
	section, sub, ok := strings.Cut(stem, ".")
	e.section = section
	if ok {
		e.subsection = &sub
	}
	return e
}

// baseVar reads a section header after '['. It returns the lower-cased
// name, and for the quoted form a NUL and the subsection as written.
func (p *configParser) baseVar() ([]byte, error) {
	var name []byte
	for {
		c := p.next()
		if p.eof {
			return nil, p.errorf()
		}
		if c == ']' {
			if len(name) == 0 {
				return nil, p.errorf()
			}
			return name, nil
		}
		if gitIsSpace(c) {
			return p.extendedBaseVar(name)
		}
		if !gitIsKeyChar(c) && c != '.' {
			return nil, p.errorf()
		}
		name = append(name, gitLower(c))
	}
}

func (p *configParser) extendedBaseVar(name []byte) ([]byte, error) {
	c := p.next()
	for gitIsSpace(c) && !p.eof {
		c = p.next()
	}
	if c != '"' || len(name) == 0 {
		return nil, p.errorf()
	}
	name = append(name, 0)
	for {
		c := p.next()
		if c == '\n' {
			return nil, p.errorf()
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			c = p.next()
			if c == '\n' {
				return nil, p.errorf()
			}
		}
		name = append(name, c)
	}
	if p.next() != ']' {
		return nil, p.errorf()
	}
	return name, nil
}

// entry reads "key [= value]" whose first letter is first.
func (p *configParser) entry(first byte) (gitConfigEntry, error) {
	key := []byte{gitLower(first)}
	var c byte
	for {
		c = p.next()
		if p.eof || !gitIsKeyChar(c) {
			break
		}
		key = append(key, gitLower(c))
	}
	for c == ' ' || c == '\t' {
		c = p.next()
	}
	e := gitConfigEntry{key: string(key)}
	if c == '\n' {
		return e, nil
	}
	if c != '=' {
		return e, p.errorf()
	}
	v, err := p.value()
	if err != nil {
		return e, err
	}
	e.value = &v
	return e, nil
}

// value mirrors git's parse_value.
func (p *configParser) value() (string, error) {
	var v []byte
	quote, comment := false, false
	space := 0
	for {
		c := p.next()
		if c == '\n' {
			if quote {
				return "", p.errorf()
			}
			return string(v), nil
		}
		if comment {
			continue
		}
		if gitIsSpace(c) && !quote {
			if len(v) > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			v = append(v, ' ')
		}
		if c == '\\' {
			c = p.next()
			switch c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", p.errorf()
			}
			v = append(v, c)
			continue
		}
		if c == '"' {
			quote = !quote
			continue
		}
		v = append(v, c)
	}
}

// writeGitConfig renders entries so that git reads back exactly these
// names and values. An entry that cannot be written so (a name that is not
// a git name, a control character other than tab, newline or backspace in
// a value, a newline in a subsection) is left out and reported false.
func writeGitConfig(entries []gitConfigEntry) ([]byte, []bool) {
	var b bytes.Buffer
	written := make([]bool, len(entries))
	var cur string
	for i, e := range entries {
		if !gitWritable(e) {
			continue
		}
		head := "[" + e.section
		if e.subsection != nil {
			head += ` "` + escapeGitConfig(*e.subsection, false) + `"`
		}
		head += "]\n"
		if head != cur {
			b.WriteString(head)
			cur = head
		}
		b.WriteString("\t" + e.key)
		if e.value != nil {
			b.WriteString(` = "` + escapeGitConfig(*e.value, true) + `"`)
		}
		b.WriteByte('\n')
		written[i] = true
	}
	return b.Bytes(), written
}

func gitWritable(e gitConfigEntry) bool {
	if e.section == "" || e.key == "" || !gitIsAlpha(e.key[0]) {
		return false
	}
	for i := 0; i < len(e.section); i++ {
		if !gitIsKeyChar(e.section[i]) {
			return false
		}
	}
	for i := 0; i < len(e.key); i++ {
		if !gitIsKeyChar(e.key[i]) {
			return false
		}
	}
	if e.section != strings.ToLower(e.section) || e.key != strings.ToLower(e.key) {
		return false
	}
	if e.subsection != nil && strings.ContainsFunc(*e.subsection, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	if e.value != nil && strings.ContainsFunc(*e.value, func(r rune) bool {
		return (r < 0x20 && r != '\t' && r != '\n' && r != '\b') || r == 0x7f
	}) {
		return false
	}
	return true
}

func escapeGitConfig(s string, value bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' || c == '"':
			b.WriteByte('\\')
			b.WriteByte(c)
		case value && c == '\n':
			b.WriteString(`\n`)
		case value && c == '\t':
			b.WriteString(`\t`)
		case value && c == '\b':
			b.WriteString(`\b`)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
