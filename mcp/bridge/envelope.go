package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"
)

// envelope is what the transport reads of a message to route it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// messageKind is how the transport treats a message.
type messageKind int

const (
	kindOther    messageKind = iota // a notification, or anything else the dispatcher answers at once
	kindRequest                     // a method and an id: served on its own goroutine
	kindResponse                    // an id and a result or an error, no method: an answer to the bridge
	kindInvalid                     // not JSON: a parse error
)

// classify reads the envelope of one line. JSON that is not a message
// object (a batch, say) is kindOther: the dispatcher answers it with the
// error it answers everywhere.
//
// A line of the usual shape (an object whose keys are the fields' names
// as written, plain ASCII, and whose method is a string without escapes)
// is read by scanEnvelope, without encoding/json's reflection, which cost
// about 5% of the server's instructions for a 64 KiB read; any other line
// goes to encoding/json, which decides what the scan cannot. Both read
// every line the same (FuzzClassifyMatchesDecoder).
func classify(line []byte) (envelope, messageKind) {
	m, ok := scanEnvelope(line)
	if !ok {
		return classifyDecoded(line)
	}
	return m, kindOf(m)
}

// classifyDecoded is classify through encoding/json.
func classifyDecoded(line []byte) (envelope, messageKind) {
	var m envelope
	if err := json.Unmarshal(line, &m); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return envelope{}, kindInvalid
		}
		return envelope{}, kindOther
	}
	return m, kindOf(m)
}

func kindOf(m envelope) messageKind {
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		return kindRequest
	case m.Method == "" && hasID && (m.Result != nil || m.Error != nil):
		return kindResponse
	}
	return kindOther
}

// scanEnvelope reads the envelope of line as encoding/json would, or
// reports false when it cannot be sure to: line is not valid JSON or not
// an object, a key has an escape or a byte outside ASCII or names a field
// in other letters' case (encoding/json matches those too), or the method
// is not a string of valid UTF-8 without escapes. The fields alias line.
func scanEnvelope(line []byte) (envelope, bool) {
	var m envelope
	if !json.Valid(line) {
		return m, false
	}
	i := skipSpace(line, 0)
	if line[i] != '{' {
		return m, false
	}
	i = skipSpace(line, i+1)
	if line[i] == '}' {
		return m, true
	}
	for {
		// A key: the line is valid, so a string ends at the first quote
		// that is not escaped, and a member's colon follows it.
		end := i + 1 + bytes.IndexByte(line[i+1:], '"')
		key := line[i+1 : end]
		if !plainASCII(key) {
			return m, false
		}
		i = skipSpace(line, skipSpace(line, end+1)+1)
		start := i
		i = skipValue(line, i)
		val := line[start:i]
		switch string(key) {
		case "id":
			m.ID = val
		case "method":
			if val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 || !utf8.Valid(val) {
				return m, false
			}
			m.Method = string(val[1 : len(val)-1])
		case "result":
			m.Result = val
		case "error":
			m.Error = val
		default:
			for _, f := range [...]string{"id", "method", "result", "error"} {
				if strings.EqualFold(string(key), f) {
					return m, false
				}
			}
		}
		i = skipSpace(line, i)
		if line[i] == '}' {
			return m, true
		}
		i = skipSpace(line, i+1) // past the comma
	}
}

// plainASCII reports whether a string's bytes, between its quotes, are
// printable ASCII without a backslash: the string is those bytes.
func plainASCII(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= utf8.RuneSelf || c == '\\' {
			return false
		}
	}
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value at b[i] of a valid text.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			for i++; b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			i++
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			if depth--; depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\r', '\n':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	return i
}
