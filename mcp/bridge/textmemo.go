package bridge

import (
	"sync"
	"unsafe"

	"github.com/harness-runtime/harness/action"
)

// Bounds of the texts whose JSON the bridge remembers (encodedTexts).
const (
	memoTextMin     = 4 << 10
	memoTextMax     = 1 << 20
	memoTextEntries = 4
)

// encodedTexts remembers the JSON form of the last long texts the bridge
// sent, by the identity of the string: a file read again unchanged comes
// back as the very same string (the workspace's read memo hands out the
// bytes it compared), whose JSON is then copied instead of escaped again.
// An entry holds its string, so that its memory cannot be freed and used
// for another string while it is remembered: the same address and length
// are the same bytes. A text is encoded for the memo the second time it is
// seen, so that texts sent once cost no copy.
var encodedTexts struct {
	mu   sync.Mutex
	e    [memoTextEntries]encodedText
	next int
}

type encodedText struct {
	s    string
	json []byte // nil until the text is seen again
}

// appendTextOrMemo appends s as a JSON string, as action.AppendJSONString
// does, unless the bridge remembers that JSON: then it appends nothing and
// returns it.
// Nothing writes to a remembered JSON, and an entry that goes leaves it to
// the collector, so the caller may keep it as long as it needs it.
func appendTextOrMemo(b []byte, s string) ([]byte, []byte) {
	if len(s) < memoTextMin || len(s) > memoTextMax {
		return action.AppendJSONString(b, s), nil
	}
	m := &encodedTexts
	p := unsafe.StringData(s)
	m.mu.Lock()
	for i := range m.e {
		e := &m.e[i]
		if len(e.s) != len(s) || unsafe.StringData(e.s) != p {
			continue
		}
		if e.json != nil {
			j := e.json
			m.mu.Unlock()
			return b, j
		}
		m.mu.Unlock()
		start := len(b)
		b = action.AppendJSONString(b, s)
		enc := append([]byte(nil), b[start:]...)
		m.mu.Lock()
		if len(e.s) == len(s) && unsafe.StringData(e.s) == p {
			e.json = enc
		}
		m.mu.Unlock()
		return b, nil
	}
	m.e[m.next] = encodedText{s: s}
	m.next = (m.next + 1) % memoTextEntries
	m.mu.Unlock()
	return action.AppendJSONString(b, s), nil
}
