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
