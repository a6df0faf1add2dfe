package action

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// Hash returns the canonical hash of the action: the hex SHA-256 of the
// canonical JSON of {"input": …, "name": …}. Only the name and the input
// decide what runs, so only they are hashed; tenant, principal and ids are
// bound separately by whoever needs them (the trusted token store does).
//
// Equal actions hash equally across processes, key orders, whitespace and
// number spellings (1, 1.0 and 1e0 are one number).
func (a Action) Hash() (string, error) {
	b, err := Canonical(map[string]any{"name": a.Name, "input": a.Input})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Canonical returns the canonical JSON form of v: object keys sorted by
// their UTF-8 bytes, no insignificant whitespace, numbers in one spelling
// (integers as decimal integers, other numbers in Go's shortest 'g' form),
// and strings escaped as encoding/json does without HTML escaping.
//
// v may hold what encoding/json decodes into (with or without UseNumber),
// Go integers and floats, and any value that encoding/json can marshal,
// which is first converted to its JSON form. NaN and infinities are errors.
func Canonical(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(128)
	if err := writeCanonical(&buf, v, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// CanonicalValuer is implemented by types that can give their JSON form as
// the generic values encoding/json decodes into (maps with string keys,
// slices, strings, numbers, bools, nil), so that Canonical needs no JSON
// round trip for them. The value must encode exactly as the type's own
// JSON encoding does; the audit log relies on it.
type CanonicalValuer interface {
	CanonicalValue() any
}

const maxCanonicalDepth = 256

func writeCanonical(buf *bytes.Buffer, v any, depth int) error {
	if depth > maxCanonicalDepth {
		return fmt.Errorf("canonical json: nesting deeper than %d", maxCanonicalDepth)
	}
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case string:
		writeString(buf, x)
	case json.Number:
		return writeNumberString(buf, string(x))
	case float64:
		return writeFloat(buf, x)
	case float32:
		return writeFloat(buf, float64(x))
	case int:
		return writeInt(buf, int64(x))
	case int8:
		return writeInt(buf, int64(x))
	case int16:
		return writeInt(buf, int64(x))
	case int32:
		return writeInt(buf, int64(x))
	case int64:
		return writeInt(buf, x)
	case uint:
		return writeInt(buf, int64(x))
	case uint8:
		return writeInt(buf, int64(x))
	case uint16:
		return writeInt(buf, int64(x))
	case uint32:
		return writeInt(buf, int64(x))
	case uint64:
		if x > 1<<53 {
			return writeFloat(buf, float64(x))
		}
		return writeInt(buf, int64(x))
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k], depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e, depth+1); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case []string:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, e)
		}
		buf.WriteByte(']')
	case json.RawMessage:
		return writeViaJSON(buf, x, depth)
	case CanonicalValuer:
		return writeCanonical(buf, x.CanonicalValue(), depth+1)
	default:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			buf.WriteString("null")
			return nil
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("canonical json: %w", err)
		}
		return writeViaJSON(buf, raw, depth)
	}
	return nil
}

func writeViaJSON(buf *bytes.Buffer, raw []byte, depth int) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return fmt.Errorf("canonical json: %w", err)
	}
	return writeCanonical(buf, generic, depth+1)
}

func writeNumberString(buf *bytes.Buffer, s string) error {
	// Integers a float64 holds exactly are written as integers; larger
	// ones go through float64 like every other number, so that a decoder
	// with and without UseNumber sees the same canonical form.
	if i, err := strconv.ParseInt(s, 10, 64); err == nil && i <= 1<<53 && i >= -(1<<53) {
		buf.WriteString(strconv.FormatInt(i, 10))
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("canonical json: bad number %q", s)
	}
	return writeFloat(buf, f)
}

func writeInt(buf *bytes.Buffer, i int64) error {
	if i > 1<<53 || i < -(1<<53) {
		return writeFloat(buf, float64(i))
	}
	buf.WriteString(strconv.FormatInt(i, 10))
	return nil
}

func writeFloat(buf *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("canonical json: %v is not a JSON number", f)
	}
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		buf.WriteString(strconv.FormatInt(int64(f), 10))
		return nil
	}
	buf.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	return nil
}

const hexDigits = "0123456789abcdef"

// writeString writes s as a JSON string. Invalid UTF-8 is replaced by
// U+FFFD, as encoding/json does, so equal decoded strings write equally.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			buf.WriteString(`\u`)
			buf.WriteByte(hexDigits[(r>>12)&0xf])
			buf.WriteByte(hexDigits[(r>>8)&0xf])
			buf.WriteByte(hexDigits[(r>>4)&0xf])
			buf.WriteByte(hexDigits[r&0xf])
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
}
