package audit

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
)

// scriptLog returns the text of a JSONL log holding the replay script.
func scriptLog(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path, WithClock(fixedClock()), WithInstance("test-host"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range script() {
		if _, err := l.Append(context.Background(), s.event, false); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	return readAll(t, path)
}

// replayModel is what a replay of data must return, read the simplest
// way: every complete line in order.
func replayModel(data []byte, q Query) []Record {
	var out []Record
	lines := bytes.Split(data, []byte("\n"))
	for _, line := range lines[:len(lines)-1] { // the last is not complete
		seq, ok := lineSeq(line)
		if !ok || seq <= q.After || len(line) > maxRecordBytes {
			continue
		}
		if rec, err := decodeStored(line); err == nil && q.matchesText(rec.Event, q.needle()) {
			out = append(out, rec)
		}
	}
	return out
}

// FuzzReplayJSONL replays arbitrary file contents: Replay must not fail
// or panic, and must return what a plain reading of the lines returns,
// page by page, also the second time (when its index is filled).
func FuzzReplayJSONL(f *testing.F) {
	L := scriptLog(f)
	lines := bytes.SplitAfter(L, []byte("\n"))
	f.Add(L, uint64(0), uint8(2))
	f.Add(L, uint64(3), uint8(1))
	f.Add(L[:len(L)-9], uint64(0), uint8(0))
	f.Add(bytes.Join([][]byte{lines[2], lines[0], []byte("junk \"s-1\"\n"), lines[8]}, nil), uint64(1), uint8(3))
	f.Add([]byte(`{"seq":1,"event":{"session_id":"s-1"}}`+"\n"+`{"seq":2`), uint64(0), uint8(1))
	f.Add([]byte("\n\n\n"), uint64(0), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, after uint64, limit uint8) {
		// The file's bytes in memory: the same reading without a file
		// per input.
		l := &JSONL{path: "fuzz"}
		q := Query{SessionID: "s-1", After: after % 16, Limit: int(limit % 5)}
		norm, _ := q.normalize()
		want := replayModel(data, q)
		for round := range 2 {
			page, err := l.replay(context.Background(), norm, bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			n := min(len(want), norm.Limit)
			if len(page.Events) != n {
				t.Fatalf("round %d: %d records, want %d", round, len(page.Events), n)
			}
			for i, rec := range page.Events {
				if rec.Seq != want[i].Seq || rec.Hash != want[i].Hash || !bytes.Equal(rec.Event, want[i].Event) {
					t.Fatalf("round %d: record %d is seq %d, want seq %d", round, i, rec.Seq, want[i].Seq)
				}
			}
			switch {
			case len(want) > n && page.Next != page.Events[n-1].Seq:
				t.Fatalf("round %d: next %d with more to come after seq %d", round, page.Next, page.Events[n-1].Seq)
			case len(want) <= n && page.Next != 0:
				t.Fatalf("round %d: next %d at the end", round, page.Next)
			}
		}
	})
}
