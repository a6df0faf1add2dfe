package policy

import (
	"crypto/sha256"
	"hash/maphash"
	"sync"

	"github.com/harness-runtime/harness/action"
)

var hashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// withHashed returns f of the canonical JSON that the canonical hash
// hashes ({"input": …, "name": …}, action.Action.AppendHashed), written
// in a pooled buffer, or false when a's input has no canonical form.
func withHashed[T any](a *action.Action, f func([]byte) T) (T, bool) {
	bp := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(bp)
	b, err := a.AppendHashed(*bp)
	*bp = b
	if err != nil {
		var zero T
		return zero, false
	}
	return f(b), true
}

// actionHash is action.Action.Hash as bytes, without its allocations.
func actionHash(a *action.Action) ([sha256.Size]byte, bool) {
	return withHashed(a, sha256.Sum256)
}

// A Print tells actions apart within this process: a keyed 128-bit hash
// of the canonical JSON that the canonical hash hashes with SHA-256 (see
// action.Action.AppendHashed). Two actions have the same Print when they
// have the same canonical hash; two that do not have the same Print with
// a probability of about 2⁻¹²⁸, and whoever chooses the actions cannot
// make it more likely: the keys are random, made when the process starts,
// and never leave it. MemoryCounters compares Prints, which cost a
// fraction of a SHA-256; a store shared between processes needs the
// canonical hash, which every process computes alike.
type Print [2]uint64

var printSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

// actionPrint is the Print of a, or false when its input has no canonical
// form.
func actionPrint(a *action.Action) (Print, bool) {
	return withHashed(a, printOf)
}

func printOf(b []byte) Print {
	return Print{maphash.Bytes(printSeeds[0], b), maphash.Bytes(printSeeds[1], b)}
}

// ActionSum identifies one action for the repeat checks: its canonical
// hash (action.Action.Hash as bytes) or its Print, each computed the first
// time a store needs it and then kept, so that an action the repeat checks
// have no reason to compare is never hashed: a read that succeeds while no
// failing streak is open. A store that must always send the hash
// (RedisCounters) asks for it every time; MemoryCounters asks only for the
// Print. A nil ActionSum is an action governance does not hash (no repeat
// limit is configured). It is not safe for concurrent use; one action's
// admit and settle do not overlap.
type ActionSum struct {
	action *action.Action
	sum    once[[sha256.Size]byte]
	print  once[Print]
}

// once is a value of an action computed the first time it is asked for,
// and kept.
type once[T any] struct {
	v     T
	state uint8 // sumUnknown, sumKnown or sumNone
}

const (
	sumUnknown uint8 = iota
	sumKnown
	sumNone // the input has no canonical form
)

// get returns o's value, computing it of a with compute the first time,
// and whether there is one.
func (o *once[T]) get(a *action.Action, compute func(*action.Action) (T, bool)) (T, bool) {
	if o.state == sumUnknown {
		var ok bool
		if o.v, ok = compute(a); ok {
			o.state = sumKnown
		} else {
			o.state = sumNone
		}
	}
	return o.v, o.state == sumKnown
}

// Sum returns the action's canonical hash and whether it has one (an
// input without a canonical form has none). Nil has none.
func (h *ActionSum) Sum() ([sha256.Size]byte, bool) {
	if h == nil || h.action == nil {
		return [sha256.Size]byte{}, false
	}
	return h.sum.get(h.action, actionHash)
}

// Print returns the action's Print and whether it has one (exactly when
// it has a canonical hash). Nil has none.
func (h *ActionSum) Print() (Print, bool) {
	if h == nil || h.action == nil {
		return Print{}, false
	}
	return h.print.get(h.action, actionPrint)
}

// is reports whether the action has a Print and it is p.
func (h *ActionSum) is(p *Print) bool {
	v, ok := h.Print()
	return ok && v == *p
}

// known is the canonical hash when it was already computed.
func (h *ActionSum) known() ([sha256.Size]byte, bool) {
	if h == nil || h.sum.state != sumKnown {
		return [sha256.Size]byte{}, false
	}
	return h.sum.v, true
}
