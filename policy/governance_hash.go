package policy

import (
	"crypto/sha256"
	"sync"

	"github.com/harness-runtime/harness/action"
)

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// actionHash is action.Action.Hash without its allocations: the SHA-256
// of the canonical JSON of {"input": …, "name": …}, in a pooled buffer.
// An input that has no canonical form gives the zero hash and false.
func actionHash(a *action.Action) ([sha256.Size]byte, bool) {
	bp := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(bp)
	sum, b, err := a.AppendSum(*bp)
	*bp = b
	return sum, err == nil
}

// ActionSum is the canonical hash of one action (action.Action.Hash as
// bytes), computed the first time a store needs it and then kept, so
// that an action the repeat checks have no reason to compare is never
// hashed: a read that succeeds while no failing streak is open. A store
// that must always send the hash (RedisCounters) asks for it every time.
// A nil ActionSum is an action governance does not hash (no repeat limit
// is configured). It is not safe for concurrent use; one action's admit
// and settle do not overlap.
type ActionSum struct {
	action *action.Action
	sum    [sha256.Size]byte
	state  uint8 // sumUnknown, sumKnown or sumNone
}

const (
	sumUnknown uint8 = iota
	sumKnown
	sumNone // the input has no canonical form
)

// Sum returns the action's hash and whether it has one (an input without
// a canonical form has none). Nil has none.
func (h *ActionSum) Sum() ([sha256.Size]byte, bool) {
	if h == nil || h.action == nil {
		return [sha256.Size]byte{}, false
	}
	if h.state == sumUnknown {
		var ok bool
		if h.sum, ok = actionHash(h.action); ok {
			h.state = sumKnown
		} else {
			h.state = sumNone
		}
	}
	return h.sum, h.state == sumKnown
}

// is reports whether the action has a hash and it is sum.
func (h *ActionSum) is(sum *[sha256.Size]byte) bool {
	v, ok := h.Sum()
	return ok && v == *sum
}

// known is the hash when it was already computed.
func (h *ActionSum) known() ([sha256.Size]byte, bool) {
	if h == nil || h.state != sumKnown {
		return [sha256.Size]byte{}, false
	}
	return h.sum, true
}
