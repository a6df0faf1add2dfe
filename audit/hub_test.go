package audit

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/harness-runtime/harness/internal/testkit"
)

func recordOf(t *testing.T, v any) Record {
	t.Helper()
	ev, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return Record{Event: ev}
}

// Every subscriber gets every record, and each publisher's records in the
// order it published them, while publishers and subscribers run at once.
func TestHubFanOutKeepsOrder(t *testing.T) {
	const publishers, each, subscribers = 4, 200, 3
	h := NewHub(HubOptions{Buffer: publishers * each})
	var subs []*Subscription
	for range subscribers {
		s, err := h.Subscribe()
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, s)
	}
	type msg struct{ P, I int }
	var got [subscribers][]msg
	var rd sync.WaitGroup
	for i, s := range subs {
		rd.Go(func() {
			for rec := range s.C {
				var m msg
				if err := json.Unmarshal(rec.Event, &m); err != nil {
					t.Error(err)
				}
				got[i] = append(got[i], m)
				if len(got[i]) == publishers*each {
					s.Close()
				}
			}
		})
	}
	var wr sync.WaitGroup
	for p := range publishers {
		wr.Go(func() {
			for i := range each {
				h.Publish(recordOf(t, msg{p, i}))
			}
		})
	}
	wr.Wait()
	rd.Wait()
	for i := range subscribers {
		next := make([]int, publishers)
		for _, m := range got[i] {
			if m.I != next[m.P] {
				t.Fatalf("subscriber %d: publisher %d's record %d arrived when %d was due", i, m.P, m.I, next[m.P])
			}
			next[m.P]++
		}
		for p, n := range next {
			if n != each {
				t.Fatalf("subscriber %d got %d of publisher %d's %d records", i, n, p, each)
			}
		}
		if subs[i].Dropped() {
			t.Fatalf("subscriber %d dropped", i)
		}
	}
	if h.Dropped() != 0 || h.Subscribers() != 0 {
		t.Fatalf("dropped %d, %d subscribers left", h.Dropped(), h.Subscribers())
	}
}

// A subscriber that does not read is dropped once its buffer is full; the
// publisher never waits for it, and the others go on receiving.
func TestHubDropsSlowSubscriber(t *testing.T) {
	h := NewHub(HubOptions{Buffer: 4})
	slow, err := h.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	fast, err := h.Subscribe()
	if err != nil {
		t.Fatal(err)
	}
	var fastGot int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range fast.C {
			fastGot++
		}
	}()
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range 1000 {
			h.Publish(recordOf(t, map[string]int{"i": i}))
			if i%4 == 0 {
				// Let the fast reader keep up; the slow one never reads.
				time.Sleep(50 * time.Microsecond)
			}
		}
	}()
	select {
	case <-published:
	case <-time.After(30 * time.Second):
		t.Fatal("Publish blocked on a subscriber that does not read")
	}
	n := 0
	for range slow.C { // closed after what it buffered
		n++
	}
	if n != 4 || !slow.Dropped() || h.Dropped() < 1 {
		t.Fatalf("slow subscriber: %d records buffered, dropped %v, hub dropped %d", n, slow.Dropped(), h.Dropped())
	}
	slow.Close() // after a drop: nothing happens
	h.Close()
	<-done
	if fast.Dropped() {
		// Only possible if the reader was descheduled for a whole
		// buffer's worth; then it must have been counted.
		if h.Dropped() != 2 {
			t.Fatalf("fast subscriber dropped without being counted")
		}
	} else if fastGot != 1000 {
		t.Fatalf("fast subscriber got %d of 1000", fastGot)
	}
}

func TestHubBounds(t *testing.T) {
	h := NewHub(HubOptions{MaxSubscribers: 2})
	a, _ := h.Subscribe()
	if _, err := h.Subscribe(); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe(); !errors.Is(err, ErrHubFull) {
		t.Fatalf("third subscriber: %v", err)
	}
	a.Close()
	a.Close()
	if _, err := h.Subscribe(); err != nil {
		t.Fatalf("after one left: %v", err)
	}
	h.Close()
	if _, err := h.Subscribe(); !errors.Is(err, ErrHubClosed) {
		t.Fatalf("after close: %v", err)
	}
	h.Publish(Record{}) // nobody: nothing happens
	if h.Subscribers() != 0 {
		t.Fatalf("%d subscribers after close", h.Subscribers())
	}
}

// collect reads n records from s, or fails.
func collect(t *testing.T, s *Subscription, n int) []Record {
	t.Helper()
	var out []Record
	timeout := time.After(30 * time.Second)
	for len(out) < n {
		select {
		case r, ok := <-s.C:
			if !ok {
				t.Fatalf("subscription ended after %d of %d records (dropped %v)", len(out), n, s.Dropped())
			}
			out = append(out, r)
		case <-timeout:
			t.Fatalf("%d of %d records", len(out), n)
		}
	}
	return out
}

// A JSONL log WithHub publishes every record it writes, in chain order,
// also when appends run at once.
func TestJSONLWithHubPublishesInChainOrder(t *testing.T) {
	h := NewHub(HubOptions{Buffer: 1000})
	s, _ := h.Subscribe()
	l, err := OpenJSONL(filepath.Join(t.TempDir(), "audit.jsonl"), WithHub(h))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				if _, err := l.Append(context.Background(), map[string]int{"g": g, "i": i}, i%10 == 0); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for i, r := range collect(t, s, 400) {
		if r.Seq != uint64(i+1) {
			t.Fatalf("record %d published has seq %d", i, r.Seq)
		}
	}
}

func TestPostgresWithHubPublishes(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	h := NewHub(HubOptions{})
	s, _ := h.Subscribe()
	p, err := OpenPostgres(context.Background(), dsn, "replica-a", WithTable(table), WithHub(h))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := appendN(t, p, 3)
	got := collect(t, s, 3)
	if got[2].Hash != want.Hash || got[0].Seq != 1 {
		t.Fatalf("published %+v, last appended %+v", got, want)
	}
}

func TestPublishingWrapsAnAppender(t *testing.T) {
	h := NewHub(HubOptions{})
	s, _ := h.Subscribe()
	l, err := OpenJSONL(filepath.Join(t.TempDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	a := Publishing(l, h)
	rec, err := a.Append(context.Background(), "x", true)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(t, s, 1); got[0].Hash != rec.Hash {
		t.Fatalf("published %+v", got[0])
	}
	l.Close()
	if _, err := a.Append(context.Background(), "y", false); err == nil {
		t.Fatal("append after close")
	}
	select {
	case r := <-s.C:
		t.Fatalf("a failed append was published: %+v", r)
	default:
	}
}
