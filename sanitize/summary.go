package sanitize

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Summarize describes payload without its values: {"keys": the top-level
// keys sorted ([]string), "bytes": the approximate size of payload encoded
// as JSON (int)}. The size counts escapes for quotes, backslashes and
// control bytes but not HTML escaping, so it can differ slightly from
// json.Marshal's. Keys are returned as they are: when they may hold
// secrets, pass the summary through Sanitizer.Value.
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
		var buf [32]byte
		return len(strconv.AppendFloat(buf[:0], t, 'g', -1, 64))
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

func stringSize(s string) int {
	n := 2 + len(s)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t':
			n++
		case c < 0x20:
			n += 5
		}
	}
	if !utf8.ValidString(s) {
		// Invalid bytes are encoded as U+FFFD (3 bytes each).
		for i := 0; i < len(s); {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				n += 2
			}
			i += size
		}
	}
	return n
}
