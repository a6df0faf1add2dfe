package sanitize

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Summarize describes payload without its values: {"keys": the top-level
// keys sorted ([]string), "bytes": the length of json.Marshal(payload)
// (int)}. The length is computed without encoding for the types decoded
// JSON holds, []string and map[string]string; other values are encoded to
// be measured, and values that cannot be encoded count as 0 (where
// json.Marshal would fail). Keys are returned as they are: when they may
// hold secrets, pass the summary through Sanitizer.Value.
func Summarize(payload map[string]any) map[string]any {
	keys := make([]string, 0, len(payload))
	for k := range payload {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return map[string]any{"keys": keys, "bytes": jsonSize(payload)}
}

// jsonSize estimates the length of v encoded as JSON without encoding it.
func jsonSize(v any) int {
	switch t := v.(type) {
	case nil:
		return 4
	case bool:
		if t {
			return 4
		}
		return 5
	case string:
		return stringSize(t)
	case json.Number:
		return len(t)
	case float64:
		return floatSize(t)
	case int:
		var buf [24]byte
		return len(strconv.AppendInt(buf[:0], int64(t), 10))
	case int64:
		var buf [24]byte
		return len(strconv.AppendInt(buf[:0], t, 10))
	case map[string]any:
		if t == nil {
			return 4
		}
		n := 2
		for k, e := range t {
			n += stringSize(k) + 1 + jsonSize(e) + 1
		}
		if len(t) > 0 {
			n--
		}
		return n
	case []any:
		if t == nil {
			return 4
		}
		n := 2
		for _, e := range t {
			n += jsonSize(e) + 1
		}
		if len(t) > 0 {
			n--
		}
		return n
	case []string:
		if t == nil {
			return 4
		}
		n := 2
		for _, e := range t {
			n += stringSize(e) + 1
		}
		if len(t) > 0 {
			n--
		}
		return n
	case map[string]string:
		if t == nil {
			return 4
		}
		n := 2
		for k, e := range t {
			n += stringSize(k) + 1 + stringSize(e) + 1
		}
		if len(t) > 0 {
			n--
		}
		return n
	}
	b, err := json.Marshal(v)
	if err != nil {
		return 0
	}
	return len(b)
}

// floatSize is the length of f as encoding/json writes it: 'f' format
// between 1e-6 and 1e21, else 'e' with a one-digit negative exponent
// unpadded. NaN and infinities, which json.Marshal refuses, count as 0.
func floatSize(f float64) int {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		return n - 1
	}
	return len(b)
}

// stringSize is the length of s as encoding/json writes it: quotes,
// two-byte escapes for " \\ \n \r \t \b \f, six-byte ones for other
// control bytes, < > & (HTML-safe escaping), invalid UTF-8 bytes and
// U+2028, U+2029.
func stringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
				n += 2
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
