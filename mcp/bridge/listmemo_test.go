package bridge

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-runtime/harness/action"
)

// memoListing is a listing of n entries, detailed or not, long enough to
// be remembered.
func memoListing(n int, detailed bool) action.Entries {
	es := make(action.Entries, n)
	for i := range es {
		name := fmt.Sprintf("f%04d.txt", i)
		es[i] = action.Entry{Path: "many/" + name, Name: name, Type: "file"}
		if detailed {
			es[i].Detailed, es[i].Size, es[i].ModTime = true, int64(i), "2026-11-28T13:00:00Z"
		}
	}
	return es
}

// checkRendered renders es through the memo and fails unless the text and
// exactness are those of a fresh rendering.
func checkRendered(t *testing.T, es action.Entries, truncated bool, what string) {
	t.Helper()
	gotText, gotExact := renderTypedEntries(es, truncated, false)
	wantText, wantExact := renderTypedEntriesNew(es, truncated)
	if gotText != wantText || gotExact != wantExact {
		t.Fatalf("%s: the memo answered a listing it does not match (exact %v, want %v)", what, gotExact, wantExact)
	}
}

// TestListingMemoAnswersOnlyEqualListings: after a listing is remembered,
// a change of any one field of any entry, of the length, of the order or
// of truncated gets the new listing's own text; the same entries in a new
// slice get the remembered text, the very same string.
func TestListingMemoAnswersOnlyEqualListings(t *testing.T) {
	for _, detailed := range []bool{false, true} {
		base := memoListing(200, detailed)
		checkRendered(t, base, false, "first sight")
		first, _ := renderTypedEntries(slices.Clone(base), false, false)
		again, _ := renderTypedEntries(slices.Clone(base), false, false)
		if first != again || unsafe.StringData(first) != unsafe.StringData(again) {
			t.Fatal("an equal listing in a new slice was not answered with the remembered text")
		}
		changes := map[string]func(es action.Entries){
			"path":        func(es action.Entries) { es[137].Path = "many/g0137.txt" },
			"name":        func(es action.Entries) { es[137].Name = "g0137.txt" },
			"type":        func(es action.Entries) { es[137].Type = "dir" },
			"detailed":    func(es action.Entries) { es[137].Detailed = !es[137].Detailed },
			"size":        func(es action.Entries) { es[137].Size++ },
			"mod_time":    func(es action.Entries) { es[137].ModTime = "2026-11-28T13:00:01Z" },
			"first entry": func(es action.Entries) { es[0].Path = "many/z" },
			"last entry":  func(es action.Entries) { es[len(es)-1].Type = "symlink" },
			"order":       func(es action.Entries) { es[3], es[4] = es[4], es[3] },
		}
		for what, change := range changes {
			es := slices.Clone(base)
			change(es)
			checkRendered(t, es, false, fmt.Sprintf("detailed %v, %s changed", detailed, what))
		}
		checkRendered(t, base[:199], false, "one entry fewer")
		checkRendered(t, append(slices.Clone(base), base[0]), false, "one entry more")
		checkRendered(t, base, true, "truncated")
	}
}

// TestListingMemoKeepsItsOwnCopy: a caller that changes its entries after
// they were rendered does not change what the memo answers for them.
func TestListingMemoKeepsItsOwnCopy(t *testing.T) {
	es := memoListing(100, true)
	renderTypedEntries(es, false, false)
	want, _ := renderTypedEntriesNew(memoListing(100, true), false)
	for i := range es {
		es[i].Size = -1
		es[i].Path = "changed/" + es[i].Name
	}
	checkRendered(t, es, false, "the caller's entries changed in place")
	if got, _ := renderTypedEntries(memoListing(100, true), false, false); got != want {
		t.Fatal("a listing equal to the first one got another text after the first one's entries were changed")
	}
}

// TestListingMemoKnowsKeptEntriesByAddress: entries that never change
// (kept: the listing cache's, handed to the tool handler) are held by the
// record itself, not copied, and the very same entries again, or equal
// ones elsewhere, are answered from the record; entries at the same
// address but of another length, or another truncation, are not. (That
// the very same entries are known by their address, without comparing
// them, is for speed only: BenchmarkBridgeList1000Names.)
func TestListingMemoKnowsKeptEntriesByAddress(t *testing.T) {
	es := memoListing(300, false)
	first, _ := renderTypedEntries(es, false, true)
	var rec *renderedListing
	for i := range renderedListings.slots {
		if r := renderedListings.slots[i].Load(); r != nil && r.text == first && unsafe.StringData(r.text) == unsafe.StringData(first) {
			rec = r
		}
	}
	if rec == nil || !rec.kept || unsafe.SliceData(rec.entries) != unsafe.SliceData(es) {
		t.Fatal("the record of kept entries does not hold them")
	}
	if again, _ := renderTypedEntries(es, false, true); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Fatal("the same kept entries were rendered again")
	}
	if clone, _ := renderTypedEntries(slices.Clone(es), false, true); unsafe.StringData(clone) != unsafe.StringData(first) {
		t.Fatal("equal kept entries elsewhere in memory were not compared with the record")
	}
	for what, got := range map[string]func() (string, bool){
		"one entry fewer": func() (string, bool) { return renderTypedEntries(es[:299], false, true) },
		"truncated":       func() (string, bool) { return renderTypedEntries(es, true, true) },
	} {
		text, _ := got()
		if text == first {
			t.Fatalf("%s: answered with the first listing's text", what)
		}
	}
}

// TestListingMemoRandom: listings drawn from a few, each changed at random
// (or not) before it is rendered, kept or not, always get a fresh
// rendering's text; also with several goroutines at once (go test -race).
func TestListingMemoRandom(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 11))
			pool := []action.Entries{memoListing(64, false), memoListing(300, true), memoListing(1000, false), memoListing(10, true)}
			for i := range 300 {
				es := slices.Clone(pool[rng.IntN(len(pool))])
				if len(es) > 0 && rng.IntN(2) == 0 {
					k := rng.IntN(len(es))
					switch rng.IntN(4) {
					case 0:
						es[k].Size += int64(rng.IntN(3))
					case 1:
						es[k].Name += "\n"
					case 2:
						es[k].Type = []string{"file", "dir", "other"}[rng.IntN(3)]
					case 3:
						es = es[:k]
					}
				}
				gotText, gotExact := renderTypedEntries(es, i%7 == 0, rng.IntN(2) == 0) // es is not changed after
				wantText, wantExact := renderTypedEntriesNew(es, i%7 == 0)
				if gotText != wantText || gotExact != wantExact {
					t.Errorf("goroutine %d, listing %d: the memo answered a listing it does not match", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestToolHandlerReadsPayloadsOnly: the tool handler runs an action under
// action.WithReadOnlyPayload (a runtime may hand it entries it shares,
// as the workspace's listing cache does), and typed entries that its
// result carries as structured content, rather than in the text, are a
// copy: the result is the transport's, or in process its client's.
func TestToolHandlerReadsPayloadsOnly(t *testing.T) {
	es := memoListing(100, false)
	es[3].Name, es[3].Path = "odd\nname", "many/odd\nname" // not told whole by the text
	var readOnly []bool
	srv := serverWithReadTool(t, "listing", func(ctx context.Context) (map[string]any, error) {
		readOnly = append(readOnly, action.ReadOnlyPayload(ctx))
		return map[string]any{"path": "many", "entries": es, "truncated": false}, nil
	})
	res, err := srv.handlerFor("listing")(context.Background(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "listing", Arguments: map[string]any{}}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	obs := srv.h.Execute(context.Background(), action.Action{Name: "listing", Input: map[string]any{}})
	if obs.Status != action.StatusOK || !slices.Equal(readOnly, []bool{true, false}) {
		t.Fatalf("read-only payload through the handler, then directly: %v, want [true false] (%s)", readOnly, obs.Message)
	}
	got, ok := res.StructuredContent.(action.Observation).Payload["entries"].(action.Entries)
	if !ok || !slices.Equal(got, es) {
		t.Fatalf("structured content does not carry the entries: %#v", res.StructuredContent)
	}
	if unsafe.SliceData(got) == unsafe.SliceData(es) {
		t.Fatal("the result carries the runtime's own entries, not a copy")
	}
}
