package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestJSONLCreatesFileWithMode0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode %v, want 0600", perm)
	}
	if seq, hash := l.Head(); seq != 0 || hash != ZeroHash {
		t.Errorf("head of a new log = %d %s", seq, hash)
	}
}

func TestJSONLFirstRecord(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path, WithInstance("host-1"))
	if err != nil {
		t.Fatal(err)
	}
	rec, err := l.Append(context.Background(), map[string]any{"kind": "pre_action"}, true)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	if rec.Seq != 1 || rec.PrevHash != ZeroHash || rec.Instance != "host-1" || string(rec.Event) != `{"kind":"pre_action"}` {
		t.Errorf("first record %+v", rec)
	}
	data, _ := os.ReadFile(path)
	want, _ := rec.MarshalJSON()
	if string(data) != string(want)+"\n" {
		t.Errorf("file holds %q, want the record's text and a newline %q", data, want)
	}
}

func TestJSONLContinuesAfterReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	ctx := context.Background()
	var last Record
	for round := range 3 {
		l, err := OpenJSONL(path, WithInstance("restart-"+string(rune('a'+round))))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if seq, hash := l.Head(); seq != last.Seq || (seq > 0 && hash != last.Hash) {
			t.Fatalf("round %d: head %d %s, want %d %s", round, seq, hash, last.Seq, last.Hash)
		}
		for i := range 5 {
			rec, err := l.Append(ctx, map[string]any{"round": round, "i": i}, i == 4)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Seq != last.Seq+1 || (last.Seq > 0 && rec.PrevHash != last.Hash) {
				t.Fatalf("round %d: record %d does not follow %d", round, rec.Seq, last.Seq)
			}
			last = rec
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rep := verifyFile(t, path)
	if !rep.OK() || rep.Records != 15 || rep.LastHash != last.Hash {
		t.Fatalf("after 3 restarts: %s", rep)
	}
}

func TestJSONLConcurrentAppenders(t *testing.T) {
	const writers, each = 8, 200
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	seqs := make(chan uint64, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rec, err := l.Append(context.Background(), map[string]any{"writer": w, "i": i}, i%50 == 0)
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- rec.Seq
			}
		})
	}
	wg.Wait()
	close(seqs)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Fatalf("seq %d handed out twice", s)
		}
		seen[s] = true
	}
	rep := verifyFile(t, path)
	if !rep.OK() || rep.Records != writers*each {
		t.Fatalf("concurrent log: %s", rep)
	}
}

func TestJSONLTornTailRepairedOnReopen(t *testing.T) {
	cases := []struct {
		name string
		keep int // complete records kept before the torn bytes
		torn func(next []byte) []byte
	}{
		{"half a record", 3, func(next []byte) []byte { return next[:len(next)/2] }},
		{"record without newline", 3, func(next []byte) []byte { return next[:len(next)-1] }},
		{"garbage", 2, func([]byte) []byte { return []byte("\x00\x00garbage") }},
		{"torn first record", 0, func(next []byte) []byte { return next[:7] }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, L := writeLog(t, tc.keep+1)
			torn := tc.torn(L[tc.keep])
			path := filepath.Join(t.TempDir(), "a.jsonl")
			if err := os.WriteFile(path, join(append(L[:tc.keep:tc.keep], torn)...), 0o600); err != nil {
				t.Fatal(err)
			}
			if rep := verifyFile(t, path); rep.Problem != ProblemTorn || rep.FirstBad != uint64(tc.keep+1) {
				t.Fatalf("before repair: %s", rep)
			}

			l, err := OpenJSONL(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(context.Background(), "after", true); err != nil {
				t.Fatal(err)
			}
			l.Close()

			rep := verifyFile(t, path)
			if !rep.OK() || rep.Records != tc.keep+2 {
				t.Fatalf("after repair: %s", rep)
			}
			data, _ := os.ReadFile(path)
			lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			var rec Record
			if err := json.Unmarshal(lines[tc.keep], &rec); err != nil {
				t.Fatal(err)
			}
			var ev struct {
				Kind    string `json:"kind"`
				Bytes   int    `json:"bytes"`
				SHA256  string `json:"sha256"`
				SavedTo string `json:"saved_to"`
			}
			if err := json.Unmarshal(rec.Event, &ev); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(torn)
			if ev.Kind != TornTailKind || ev.Bytes != len(torn) || ev.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("torn-tail record %s does not describe the %d dropped bytes", rec.Event, len(torn))
			}
			saved, err := os.ReadFile(filepath.Join(filepath.Dir(path), ev.SavedTo))
			if err != nil || !bytes.Equal(saved, torn) {
				t.Errorf("saved_to %q holds %q (%v), want the torn bytes %q", ev.SavedTo, saved, err, torn)
			}
		})
	}
}

func TestJSONLRefusesCorruptTail(t *testing.T) {
	_, L := writeLog(t, 3)
	cases := []struct {
		name string
		log  []byte
	}{
		{"edited last record", join(L[0], L[1], edit(t, L[2], `"seq":3`, `"seq":4`))},
		{"not json", join(L[0], L[1], []byte("oops\n"))},
		{"blank last line", join(L[0], L[1], L[2], []byte("\n"))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.jsonl")
			if err := os.WriteFile(path, tc.log, 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := OpenJSONL(path)
			if !errors.Is(err, ErrCorrupt) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("OpenJSONL = %v, want ErrCorrupt", err)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, tc.log) {
				t.Error("a refused open changed the file")
			}
		})
	}
}

func TestJSONLDurableAppendSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	syncs := 0
	l.syncFile = func(f *os.File) error { syncs++; return f.Sync() }
	ctx := context.Background()
	if _, err := l.Append(ctx, "fast", false); err != nil {
		t.Fatal(err)
	}
	if syncs != 0 {
		t.Errorf("non-durable append synced %d times", syncs)
	}
	rec, err := l.Append(ctx, "durable", true)
	if err != nil {
		t.Fatal(err)
	}
	if syncs != 1 {
		t.Errorf("durable append synced %d times, want 1", syncs)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(rec.Hash)) {
		t.Error("durable record not in the file after Append returned")
	}
}

func TestJSONLFailsClosedAfterSyncError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	boom := errors.New("EIO")
	l.syncFile = func(*os.File) error { return boom }
	ctx := context.Background()
	if _, err := l.Append(ctx, "trusted action", true); !errors.Is(err, boom) {
		t.Fatalf("durable append with failing fsync = %v, want the fsync error", err)
	}
	for _, durable := range []bool{false, true} {
		if _, err := l.Append(ctx, "next", durable); !errors.Is(err, ErrBroken) {
			t.Errorf("append (durable=%v) after a failed fsync = %v, want ErrBroken", durable, err)
		}
	}
}

func TestJSONLAppendAfterClose(t *testing.T) {
	l, err := OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := l.Append(context.Background(), "x", true); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
}

func TestJSONLAppendCanceledContext(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Append(ctx, "x", true); !errors.Is(err, context.Canceled) {
		t.Errorf("Append with a canceled context = %v", err)
	}
	if seq, _ := l.Head(); seq != 0 {
		t.Errorf("a canceled append wrote seq %d", seq)
	}
}

func TestJSONLRefusesUnencodableEvent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(context.Background(), map[string]any{"c": make(chan int)}, true); err == nil {
		t.Fatal("appended an event that has no JSON form")
	}
	if _, err := l.Append(context.Background(), "ok", true); err != nil {
		t.Fatalf("a refused event broke the log: %v", err)
	}
}

func TestJSONLRepairsTornTailOfAnotherWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if _, err := l.Append(ctx, "before", true); err != nil {
		t.Fatal(err)
	}
	// Another process died in the middle of its write.
	other, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	other.WriteString(`{"seq":2,"time":"2026-`)
	other.Close()
	rec, err := l.Append(ctx, "after", true)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq != 3 {
		t.Errorf("append after the repair has seq %d, want 3 (2 is the torn-tail record)", rec.Seq)
	}
	rep := verifyFile(t, path)
	if !rep.OK() || rep.Records != 3 {
		t.Fatalf("after repair: %s", rep)
	}
	if data, _ := os.ReadFile(path); !bytes.Contains(data, []byte(`"kind":"`+TornTailKind+`"`)) {
		t.Error("no torn-tail record in the chain")
	}
}

func TestJSONLOpenErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, path string
	}{
		{"missing directory", filepath.Join(dir, "no", "such", "a.jsonl")},
		{"a directory", dir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := OpenJSONL(tc.path)
			if err == nil {
				l.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q does not name the path", err)
			}
		})
	}
}

func TestOpenPicksStoreByTarget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := Open(context.Background(), path, "inst-7")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := l.Append(context.Background(), "x", true)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.(*JSONL); !ok || rec.Instance != "inst-7" {
		t.Errorf("Open(file) = %T with instance %q", l, rec.Instance)
	}
	if _, err := Open(context.Background(), "", ""); err == nil {
		t.Error("Open with no target succeeded")
	}
}

func TestJSONLRefusesOverlongLastLine(t *testing.T) {
	defer func(n int) { maxRecordBytes = n }(maxRecordBytes)
	maxRecordBytes = 1000
	_, L := writeLog(t, 2)
	path := filepath.Join(t.TempDir(), "a.jsonl")
	if err := os.WriteFile(path, join(L[0], L[1], bytes.Repeat([]byte("x"), 3000), []byte("\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := OpenJSONL(path)
	if !errors.Is(err, ErrCorrupt) {
		if l != nil {
			l.Close()
		}
		t.Fatalf("OpenJSONL = %v, want ErrCorrupt", err)
	}
}

func TestJSONLFollowsCopyTruncate(t *testing.T) {
	// logrotate's copytruncate empties the file under a running writer.
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	for range 3 {
		if _, err := l.Append(ctx, "before rotation", false); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	rec, err := l.Append(ctx, "after rotation", true)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Seq != 1 || rec.PrevHash != ZeroHash {
		t.Errorf("first record after the truncation: seq %d prev %s, want a new chain", rec.Seq, rec.PrevHash)
	}
	if rep := verifyFile(t, path); !rep.OK() || rep.Records != 1 {
		t.Fatalf("%s", rep)
	}
}

// TestJSONLAppendAllKeepsItsRecordsTogether: AppendAll's events become
// consecutive records, written in one batch, while other appenders write
// at the same time; the chain verifies, and an AppendAll whose event has no
// canonical form writes none of its events.
func TestJSONLAppendAllKeepsItsRecordsTogether(t *testing.T) {
	const writers, each = 6, 100
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				var err error
				if w%2 == 0 {
					_, err = l.AppendAll(context.Background(), []any{
						map[string]any{"w": w, "i": i, "part": 0}, map[string]any{"w": w, "i": i, "part": 1}, map[string]any{"w": w, "i": i, "part": 2},
					}, i%40 == 0)
				} else {
					_, err = l.Append(context.Background(), map[string]any{"w": w, "i": i, "part": 0}, false)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := l.AppendAll(context.Background(), []any{map[string]any{"ok": 1}, math.NaN()}, false); err == nil {
		t.Fatal("an AppendAll with an event that has no canonical form succeeded")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rep := verifyFile(t, path)
	if want := writers / 2 * each * 4; !rep.OK() || rep.Records != want {
		t.Fatalf("log: %s, want %d records", rep, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := 0; i < len(lines); i++ {
		var rec struct {
			Event struct{ W, I, Part int } `json:"event"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Event.W%2 != 0 {
			continue
		}
		// The first of a run of three: the next two are its parts 1 and 2.
		for part := 1; part <= 2; part++ {
			var next struct {
				Event struct{ W, I, Part int } `json:"event"`
			}
			if i+part >= len(lines) || json.Unmarshal([]byte(lines[i+part]), &next) != nil || next.Event.W != rec.Event.W || next.Event.I != rec.Event.I || next.Event.Part != part {
				t.Fatalf("line %d: the records of one AppendAll are not consecutive: %s / %v", i, lines[i], next.Event)
			}
		}
		i += 2
	}
	if strings.Contains(string(data), `"ok":1`) {
		t.Fatal("part of a failed AppendAll was written")
	}
}

// TestJSONLReusesItsBatchBufferWithinBounds appends records of every size
// through one log: each batch is written from the buffer the batch before
// used, unless a large record grew it past keptBufferBytes, and the chain
// verifies with every record's text as sealed.
func TestJSONLReusesItsBatchBufferWithinBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reuse.jsonl")
	l, err := OpenJSONL(path, WithKey(bytes.Repeat([]byte{3}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	sizes := []int{10, 2000, 2000, 10, keptBufferBytes, 10, 3 * keptBufferBytes, 10, 10}
	var kept []byte
	for i, n := range sizes {
		rec, err := l.AppendAll(context.Background(), []any{map[string]any{"i": i, "s": strings.Repeat("z", n)}, map[string]any{"i": i}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Seq != uint64(2*i+2) {
			t.Fatalf("append %d: seq %d", i, rec.Seq)
		}
		l.mu.Lock()
		batch := l.batch
		l.mu.Unlock()
		switch {
		case cap(batch) > keptBufferBytes:
			t.Fatalf("append %d (%d bytes): the log keeps a buffer of %d bytes", i, n, cap(batch))
		case n < keptBufferBytes/2 && batch == nil:
			t.Fatalf("append %d (%d bytes): no buffer kept", i, n)
		case i > 0 && n <= sizes[i-1] && sizes[i-1] < keptBufferBytes/2 && &batch[:1][0] != &kept[:1][0]:
			t.Fatalf("append %d: a new buffer where the last batch's had room", i)
		}
		kept = batch
	}
	rep, err := VerifyJSONLFile(context.Background(), path, WithKey(bytes.Repeat([]byte{3}, 32)))
	if err != nil || rep.Records != 2*len(sizes) || rep.FirstBad != 0 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}
