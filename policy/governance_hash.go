package policy

import (
	"crypto/sha256"
	"encoding/json"
	"math"
	"strconv"
	"sync"

	"github.com/harness-runtime/harness/action"
)

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// actionHash is action.Action.Hash without its allocations: the SHA-256
// of the canonical JSON of {"input": …, "name": …}. An input that has no
// canonical form gives the zero hash and false.
func actionHash(a *action.Action) ([sha256.Size]byte, bool) {
	bp := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(bp)
	b := append((*bp)[:0], `{"input":`...)
	in, ok := appendInput(b, a.Input, 1)
	if !ok {
		var err error
		if in, err = action.AppendCanonical(b, a.Input); err != nil {
			return [sha256.Size]byte{}, false
		}
	}
	b = append(in, `,"name":`...)
	b = action.AppendJSONString(b, a.Name)
	b = append(b, '}')
	*bp = b
	return sha256.Sum256(b), true
}

// canonicalDepth is how deep action.AppendCanonical nests.
const canonicalDepth = 256

// inputPairs is how many keys an object may have for appendInput to sort
// it on the stack.
const inputPairs = 16

type inputPair struct {
	k string
	v any
}

// appendInput appends the canonical JSON of v, found depth levels deep in
// the hashed object, as action.AppendCanonical does (the test holds the
// two to one output), for what inputs are made of: objects of up to
// inputPairs keys, arrays, strings and JSON scalars. It walks each object
// once, its keys and values together, where AppendCanonical sorts the
// keys and then looks each one up. For anything else it reports false,
// and the caller asks AppendCanonical for the whole input.
func appendInput(b []byte, v any, depth int) ([]byte, bool) {
	if depth > canonicalDepth {
		return b, false
	}
	switch x := v.(type) {
	case string:
		return action.AppendJSONString(b, x), true
	case map[string]any:
		if len(x) > inputPairs {
			return b, false
		}
		var kv [inputPairs]inputPair
		n := 0
		for k, e := range x {
			i := n
			for ; i > 0 && kv[i-1].k > k; i-- {
				kv[i] = kv[i-1]
			}
			kv[i] = inputPair{k, e}
			n++
		}
		b = append(b, '{')
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			b = action.AppendJSONString(b, kv[i].k)
			b = append(b, ':')
			var ok bool
			if b, ok = appendInput(b, kv[i].v, depth+1); !ok {
				return b, false
			}
		}
		return append(b, '}'), true
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var ok bool
			if b, ok = appendInput(b, e, depth+1); !ok {
				return b, false
			}
		}
		return append(b, ']'), true
	case bool:
		if x {
			return append(b, "true"...), true
		}
		return append(b, "false"...), true
	case nil:
		return append(b, "null"...), true
	case int:
		if x >= -exactInt && x <= exactInt {
			return strconv.AppendInt(b, int64(x), 10), true
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= exactInt {
			return strconv.AppendInt(b, int64(x), 10), true
		}
	}
	switch v.(type) {
	case float64, int, int64, json.Number: // the other spellings of numbers
		out, err := action.AppendCanonical(b, v)
		return out, err == nil
	}
	return b, false
}

// exactInt is the largest integer a float64 holds exactly, up to which
// canonical JSON writes a number as an integer.
const exactInt = 1 << 53
