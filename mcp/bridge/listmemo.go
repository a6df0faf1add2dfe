package bridge

import (
	"slices"
	"sync/atomic"

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
// Each record holds a copy of the entries it was rendered from, never
// changed after it is stored: what a caller does with its own entries
// later cannot make a record tell something else. That copy is what a
// miss costs beyond rendering: a directory that changes before every
// listing pays it every time. A record is kept only
// when its text is at most memoTextMax bytes, which bounds the memory
// of its paths and times too.
var renderedListings struct {
	slots [memoListingEntries]atomic.Pointer[renderedListing]
	next  atomic.Uint32
}

type renderedListing struct {
	entries   action.Entries
	truncated bool
	text      string
	exact     bool
}

// rememberedListing returns the text and exactness of a remembered
// listing of the same entries, and whether there was one.
func rememberedListing(es action.Entries, truncated bool) (string, bool, bool) {
	if len(es) < memoListingMin {
		return "", false, false
	}
	for i := range renderedListings.slots {
		r := renderedListings.slots[i].Load()
		if r != nil && r.truncated == truncated && slices.Equal(r.entries, es) {
			return r.text, r.exact, true
		}
	}
	return "", false, false
}

// rememberListing keeps text as the rendering of es, replacing the
// oldest record.
func rememberListing(es action.Entries, truncated bool, text string, exact bool) {
	if len(es) < memoListingMin || len(text) > memoTextMax {
		return
	}
	r := &renderedListing{entries: slices.Clone(es), truncated: truncated, text: text, exact: exact}
	i := (renderedListings.next.Add(1) - 1) % memoListingEntries
	renderedListings.slots[i].Store(r)
}
