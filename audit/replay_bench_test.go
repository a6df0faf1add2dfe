package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/internal/testkit"
)

// benchSessions is how many sessions the benchmark logs interleave.
const benchSessions = 50

// fillReplayLog appends n AHP events of benchSessions sessions, then one
// of session "rare" at the end.
func fillReplayLog(b *testing.B, l Appender, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		s := fmt.Sprintf("sess-%d", i%benchSessions)
		ev := event(ahp.PreAction, s, "task-"+s, "acme", "workspace_read_file", map[string]any{"path": fmt.Sprintf("src/file%d.go", i)})
		if _, err := l.Append(ctx, ev, false); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := l.Append(ctx, event(ahp.PreAction, "rare", "t", "acme", "workspace_read_file", nil), false); err != nil {
		b.Fatal(err)
	}
}

func benchReplay(b *testing.B, r Replayer, q Query, want int) {
	b.Helper()
	b.ReportAllocs()
	for b.Loop() {
		page, err := r.Replay(context.Background(), q)
		if err != nil || len(page.Events) != want {
			b.Fatalf("%d records, %v", len(page.Events), err)
		}
	}
}

// BenchmarkReplayJSONL reads pages of a 50 000-record log: the first page
// of a session, a page deep in the file after a cursor (the sparse index
// finds where to start), and a session whose only record is at the end
// (a scan of the whole file; bytes/s is the scan's speed).
func BenchmarkReplayJSONL(b *testing.B) {
	path := filepath.Join(b.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const n = 50000
	fillReplayLog(b, l, n)
	st, _ := os.Stat(path)
	b.Run("first-page", func(b *testing.B) { benchReplay(b, l, Query{SessionID: "sess-7"}, 100) })
	b.Run("after-cursor", func(b *testing.B) { benchReplay(b, l, Query{SessionID: "sess-7", After: n - 20*benchSessions}, 20) })
	b.Run("whole-file", func(b *testing.B) {
		b.SetBytes(st.Size())
		benchReplay(b, l, Query{SessionID: "rare"}, 1)
	})
}

// BenchmarkReplayPostgres reads pages of a 20 000-row table through the
// session index.
func BenchmarkReplayPostgres(b *testing.B) {
	dsn := testkit.Postgres(b)
	table := testTable(b, dsn)
	p, err := OpenPostgres(context.Background(), dsn, "bench", WithTable(table))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	const n = 20000
	fillReplayLog(b, p, n)
	adminExec(b, dsn, "ANALYZE "+table)
	b.Run("first-page", func(b *testing.B) { benchReplay(b, p, Query{SessionID: "sess-7"}, 100) })
	b.Run("last-record", func(b *testing.B) { benchReplay(b, p, Query{SessionID: "rare"}, 1) })
}

// BenchmarkHubPublish publishes records to 16 subscribers and waits
// until each has received them: ns/record is the cost of one record's
// fan-out, delivery included.
func BenchmarkHubPublish(b *testing.B) {
	const subs, batch = 16, 256
	h := NewHub(HubOptions{Buffer: batch})
	got := make(chan struct{}, subs)
	for range subs {
		s, err := h.Subscribe()
		if err != nil {
			b.Fatal(err)
		}
		go func() {
			n := 0
			for range s.C {
				if n++; n%batch == 0 {
					got <- struct{}{}
				}
			}
		}()
	}
	rec := Record{Seq: 1, Event: []byte(`{"session_id":"s"}`)}
	b.ReportAllocs()
	for b.Loop() {
		for range batch {
			h.Publish(rec)
		}
		for range subs {
			<-got
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/record")
	if h.Dropped() != 0 {
		b.Fatalf("%d subscribers dropped", h.Dropped())
	}
	h.Close()
}
