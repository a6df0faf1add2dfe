package bridge

import (
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/harness-runtime/harness/action"
)

// Bounds of the listings whose text the bridge remembers (renderedListings).
const (
	memoListingMin     = 64 // entries; a shorter listing renders faster than it compares
	memoListingEntries = 4
)

// renderedListings remembers the text of the last long listings the
// bridge rendered. A listing whose entries equal a remembered one's, field
// by field, gets its text back: the very same string, so that the text
// memo (appendTextOrMemo) gives its JSON too. The workspace answers a listing
// of a directory that did not change from its listing cache, with entries
// equal to the last ones; comparing them costs a fraction of rendering
// and escaping them again, and a listing that changed in any field is
// rendered anew.
//
// Each record holds entries that are never changed after it is stored:
// what a caller does with its own entries later cannot make a record tell
// something else. They are a copy, unless the caller's own are never
// changed either (kept: a payload the bridge's tool handler owns, whose
// typed entries are either the workspace's listing cache's, which never
// change, or a listing of its own that nothing else holds). Such a record
// keeps the caller's entries, and a later kept listing of the very same
// entries (same array, same length, the cache answering again) is known
// by their address, without comparing them. The copy is what a miss costs
// beyond rendering, where there is one: a directory that changes before
// every listing pays it every time. A record is kept only when its text is
// at most memoTextMax bytes, which bounds the memory of its paths and
// times too.
var renderedListings struct {
	slots [memoListingEntries]atomic.Pointer[renderedListing]
	next  atomic.Uint32
}

type renderedListing struct {
	entries   action.Entries
	kept      bool // entries are the caller's own, and never change
	truncated bool
	text      string
	exact     bool
}

// rememberedListing returns the text and exactness of a remembered
// listing of the same entries, and whether there was one. kept says that
// es never changes (see renderedListings).
func rememberedListing(es action.Entries, truncated, kept bool) (string, bool, bool) {
	if len(es) < memoListingMin {
		return "", false, false
	}
	for i := range renderedListings.slots {
		r := renderedListings.slots[i].Load()
		if r != nil && r.truncated == truncated && (kept && r.kept && sameEntries(r.entries, es) || slices.Equal(r.entries, es)) {
			return r.text, r.exact, true
		}
	}
	return "", false, false
}

// sameEntries reports whether a and b are the same entries in memory.
func sameEntries(a, b action.Entries) bool {
	return len(a) == len(b) && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// rememberListing keeps text as the rendering of es, replacing the
// oldest record. kept says that es never changes, so that the record may
// hold es itself.
func rememberListing(es action.Entries, truncated, kept bool, text string, exact bool) {
	if len(es) < memoListingMin || len(text) > memoTextMax {
		return
	}
	r := &renderedListing{entries: es, kept: kept, truncated: truncated, text: text, exact: exact}
	if !kept {
		r.entries = slices.Clone(es)
	}
	i := (renderedListings.next.Add(1) - 1) % memoListingEntries
	renderedListings.slots[i].Store(r)
}
