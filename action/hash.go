package action

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Hash returns the canonical hash of the action: the hex SHA-256 of the
// canonical JSON of {"input": …, "name": …}. Only the name and the input
// decide what runs, so only they are hashed; tenant, principal and ids are
// bound separately by whoever needs them (the trusted token store does).
//
// Equal actions hash equally across processes, key orders, whitespace and
// number spellings (1, 1.0 and 1e0 are one number).
func (a Action) Hash() (string, error) {
	sum, _, err := a.AppendSum(make([]byte, 0, 128))
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}

// AppendSum returns the SHA-256 that Hash writes in hex, using buf (its
// contents are replaced) for the canonical JSON, and buf as it grew, so
// that a caller hashing many actions can reuse one buffer.
func (a *Action) AppendSum(buf []byte) (sum [sha256.Size]byte, out []byte, err error) {
	b, err := a.AppendHashed(buf)
	if err != nil {
		return sum, buf, err
	}
	return sha256.Sum256(b), b, nil
}

// AppendHashed returns buf (its contents replaced) holding the canonical
// JSON that Hash hashes, {"input": …, "name": …}: two actions have the
// same hash exactly when these bytes are equal. On error buf is returned
// as it was.
func (a *Action) AppendHashed(buf []byte) ([]byte, error) {
	b := append(buf[:0], `{"input":`...)
	// One level down, as in the object {"input", "name"} Hash encodes.
	b, err := appendCanonical(b, a.Input, 1)
	if err != nil {
		return buf, err
	}
	b = append(b, `,"name":`...)
	b = AppendJSONString(b, a.Name)
	return append(b, '}'), nil
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
	return AppendCanonical(make([]byte, 0, 128), v)
}

// AppendCanonical appends the canonical JSON form of v (see Canonical) to
// dst. On error dst is returned as it was, with nothing appended.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	out, err := appendCanonical(dst, v, 0)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// CanonicalValuer is implemented by types that can give their JSON form as
// the generic values encoding/json decodes into (maps with string keys,
// slices, strings, numbers, bools, nil), so that Canonical needs no JSON
// round trip for them. The value must encode exactly as the type's own
// JSON encoding does; the audit log relies on it.
type CanonicalValuer interface {
	CanonicalValue() any
}

// CanonicalAppender is implemented by types that write their own
// canonical JSON: AppendCanonical appends to b exactly the bytes Canonical
// would write for the value's JSON form, or returns an error (b as it
// was, nothing appended) where Canonical would fail. The audit log hashes
// these bytes, so they must never differ from the JSON form's; an
// appender that is also a CanonicalValuer is held to its CanonicalValue.
// Canonical prefers an appender to a CanonicalValuer: it builds no
// generic values to sort.
//
// Nesting is counted up to the appender, not inside it: values the
// appender writes through AppendCanonical count their depth afresh, so a
// type whose values can hold the type itself must bound its own nesting.
type CanonicalAppender interface {
	AppendCanonical(b []byte) ([]byte, error)
}

const maxCanonicalDepth = 256

// smallObject is how many keys an object may have for its keys and values
// to be sorted together on the stack, each map entry read once, rather
// than its keys sorted and each value looked up again.
const smallObject = 16

type keyValue struct {
	k string
	v any
}

func appendSmallObject(b []byte, x map[string]any, depth int) ([]byte, error) {
	// The pairs live on the stack, which must be cleared first: for the
	// most common objects, a few keys, a smaller array clears faster.
	if len(x) <= 4 {
		var kv [4]keyValue
		return appendSortedPairs(b, x, kv[:], depth)
	}
	var kv [smallObject]keyValue
	return appendSortedPairs(b, x, kv[:], depth)
}

// appendSortedPairs appends x, whose keys fit in kv, with its keys and
// values sorted together in kv.
func appendSortedPairs(b []byte, x map[string]any, kv []keyValue, depth int) ([]byte, error) {
	n := 0
	for k, e := range x { // insertion sort: a few keys
		i := n
		for ; i > 0 && kv[i-1].k > k; i-- {
			kv[i] = kv[i-1]
		}
		kv[i] = keyValue{k, e}
		n++
	}
	b = append(b, '{')
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, kv[i].k)
		b = append(b, ':')
		var err error
		if b, err = appendCanonical(b, kv[i].v, depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendCanonical(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxCanonicalDepth {
		return b, fmt.Errorf("canonical json: nesting deeper than %d", maxCanonicalDepth)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return AppendJSONString(b, x), nil
	case json.Number:
		return appendNumberString(b, string(x))
	case float64:
		return appendFloat(b, x)
	case float32:
		return appendFloat(b, float64(x))
	case int:
		return appendInt(b, int64(x))
	case int8:
		return appendInt(b, int64(x))
	case int16:
		return appendInt(b, int64(x))
	case int32:
		return appendInt(b, int64(x))
	case int64:
		return appendInt(b, x)
	case uint:
		return appendUint(b, uint64(x))
	case uint8:
		return appendInt(b, int64(x))
	case uint16:
		return appendInt(b, int64(x))
	case uint32:
		return appendInt(b, int64(x))
	case uint64:
		return appendUint(b, x)
	case map[string]any:
		if len(x) <= smallObject {
			return appendSmallObject(b, x, depth)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendCanonical(b, x[k], depth+1); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendCanonical(b, e, depth+1); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	case []string:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, e)
		}
		return append(b, ']'), nil
	case json.RawMessage:
		return appendViaJSON(b, x, depth)
	case CanonicalAppender:
		return x.AppendCanonical(b)
	case CanonicalValuer:
		return appendCanonical(b, x.CanonicalValue(), depth+1)
	default:
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			return append(b, "null"...), nil
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return b, fmt.Errorf("canonical json: %w", err)
		}
		return appendViaJSON(b, raw, depth)
	}
}

func appendViaJSON(b []byte, raw []byte, depth int) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return b, fmt.Errorf("canonical json: %w", err)
	}
	return appendCanonical(b, generic, depth+1)
}

func appendNumberString(b []byte, s string) ([]byte, error) {
	// Integers a float64 holds exactly are written as integers; larger
	// ones go through float64 like every other number, so that a decoder
	// with and without UseNumber sees the same canonical form.
	if i, err := strconv.ParseInt(s, 10, 64); err == nil && i <= 1<<53 && i >= -(1<<53) {
		return strconv.AppendInt(b, i, 10), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return b, fmt.Errorf("canonical json: bad number %q", s)
	}
	return appendFloat(b, f)
}

func appendInt(b []byte, i int64) ([]byte, error) {
	if i > 1<<53 || i < -(1<<53) {
		return appendFloat(b, float64(i))
	}
	return strconv.AppendInt(b, i, 10), nil
}

func appendUint(b []byte, u uint64) ([]byte, error) {
	if u > 1<<53 {
		return appendFloat(b, float64(u))
	}
	return strconv.AppendInt(b, int64(u), 10), nil
}

func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("canonical json: %v is not a JSON number", f)
	}
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return strconv.AppendInt(b, int64(f), 10), nil
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64), nil
}

const hexDigits = "0123456789abcdef"

// safeASCII marks the bytes below 0x80 that a JSON string holds as they are.
var safeASCII = func() (t [128]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// lookMask has the high bit set in the bytes of x (little endian) that
// AppendJSONString cannot copy blindly: below 0x20, a quote, a backslash
// or not ASCII. (x-ones*n) & ^x & highs marks the bytes below n, and a
// byte equal to c is a byte of x ^ ones*c below 1. A borrow may also mark
// a byte above a marked one, never below: the lowest mark is exact.
func lookMask(x uint64) uint64 {
	q := x ^ (ones * '"')
	bs := x ^ (ones * '\\')
	return ((x-ones*0x20)&^x | (q-ones)&^q | (bs-ones)&^bs | x) & highs
}

// AppendJSONString appends s to b as a JSON string, escaped as
// encoding/json escapes it without HTML escaping: invalid UTF-8 becomes
// U+FFFD, so equal decoded strings append equally. Runs of bytes that need
// no escape are copied at once.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time up to the first byte that needs a look.
		for i+8 <= len(s) {
			m := lookMask(uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56)
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if safeASCII[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
