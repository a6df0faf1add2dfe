package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// holdFirstSync makes l's first fsync wait until all n appenders have
// written their line, so that the others queue behind it; fail decides
// what every fsync returns after the real one (nil: the real result).
// It returns the number of fsyncs done so far and the number of lines the
// last completed good fsync covered.
func holdFirstSync(t *testing.T, l *JSONL, n uint64, fail error) (syncs *atomic.Int64, covered *atomic.Uint64) {
	t.Helper()
	syncs, covered = new(atomic.Int64), new(atomic.Uint64)
	l.syncFile = func(f *os.File) error {
		if syncs.Add(1) == 1 {
			deadline := time.Now().Add(20 * time.Second)
			for {
				if l.written.Load() >= n || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
		}
		// Lines in the file now: this fsync covers at least those.
		data, err := os.ReadFile(f.Name())
		if err != nil {
			return err
		}
		lines := uint64(bytes.Count(data, []byte("\n")))
		if fail != nil {
			return fail
		}
		if err := f.Sync(); err != nil {
			return err
		}
		for {
			c := covered.Load()
			if lines <= c || covered.CompareAndSwap(c, lines) {
				break
			}
		}
		return nil
	}
	return syncs, covered
}

// TestJSONLGroupCommit runs many durable appends at once: each returns
// only after an fsync covering its record completed, and they share
// fsyncs (fewer fsyncs than appends).
func TestJSONLGroupCommit(t *testing.T) {
	const n = 32
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	syncs, covered := holdFirstSync(t, l, n, nil)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := l.Append(context.Background(), map[string]any{"i": i}, true)
			if err != nil {
				t.Errorf("append %d: %v", i, err)
				return
			}
			// A fresh log: record seq k is line k.
			if c := covered.Load(); rec.Seq > c {
				t.Errorf("append of seq %d returned when fsyncs had covered only %d lines", rec.Seq, c)
			}
		}()
	}
	wg.Wait()
	if got := syncs.Load(); got >= n || got < 1 {
		t.Errorf("%d fsyncs for %d durable appends, want at least 1 and fewer than %d", got, n, n)
	}
	if rep := verifyFile(t, path); !rep.OK() || rep.Records != n {
		t.Fatalf("%s", rep)
	}
}

// TestJSONLGroupCommitFailure: when the shared fsync fails, every append
// waiting for it fails with that error, and later appends with ErrBroken.
func TestJSONLGroupCommitFailure(t *testing.T) {
	const n = 16
	l, err := OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	boom := errors.New("EIO")
	syncs, _ := holdFirstSync(t, l, n, boom)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := l.Append(context.Background(), map[string]any{"i": i}, true)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, boom) {
			t.Errorf("durable append while the fsync failed = %v, want the fsync error", err)
		}
	}
	if got := syncs.Load(); got != 1 {
		t.Errorf("%d fsyncs, want 1: after a failed fsync none is tried again", got)
	}
	tests := []struct {
		name    string
		durable bool
	}{{"durable", true}, {"not-durable", false}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := l.Append(context.Background(), "next", tc.durable); !errors.Is(err, ErrBroken) {
				t.Errorf("append after the failed fsync = %v, want ErrBroken", err)
			}
			if err := l.Sync(); err == nil {
				t.Error("Sync after the failed fsync succeeded")
			}
		})
	}
}

// TestJSONLCloseReleasesWaiters: Close fsyncs everything written, so an
// append waiting behind an fsync in flight returns without error.
func TestJSONLCloseReleasesWaiters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	inSync, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	l.syncFile = func(f *os.File) error {
		if first.CompareAndSwap(false, true) {
			close(inSync)
			<-release
		}
		return f.Sync()
	}
	done := make(chan error, 2)
	go func() { _, err := l.Append(context.Background(), "first", true); done <- err }()
	<-inSync
	go func() { _, err := l.Append(context.Background(), "second", true); done <- err }()
	// Wait until the second line is written, then close.
	for l.written.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("second append: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("first append: %v", err)
	}
	if rep := verifyFile(t, path); !rep.OK() || rep.Records != 2 {
		t.Fatalf("%s", rep)
	}
}

// TestJSONLBatchesQueuedAppends: appends that queue while one append waits
// for the file lock (held by another writer) are written together in one
// batch once it is free, each as its own record of one unforked chain.
func TestJSONLBatchesQueuedAppends(t *testing.T) {
	const n = 16
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var batches []int
	testHookBatch = func(k int) { batches = append(batches, k) } // called under l.mu
	defer func() { testHookBatch = nil }()
	holder, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	unlock, err := lockFile(context.Background(), holder)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make(chan uint64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec, err := l.Append(context.Background(), map[string]any{"i": i}, i%2 == 0)
			if err != nil {
				t.Errorf("append %d: %v", i, err)
			}
			seqs <- rec.Seq
		}()
	}
	// One append is writing (waiting for the flock); the rest queue.
	for {
		l.qmu.Lock()
		queued := len(l.queue)
		l.qmu.Unlock()
		if queued == n-1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	unlock()
	wg.Wait()
	close(seqs)
	seen := map[uint64]bool{}
	for s := range seqs {
		if seen[s] || s < 1 || s > n {
			t.Errorf("seq %d repeated or out of range", s)
		}
		seen[s] = true
	}
	l.mu.Lock()
	got := append([]int(nil), batches...)
	l.mu.Unlock()
	if len(got) != 2 || got[0] != 1 || got[1] != n-1 {
		t.Errorf("batches %v, want [1 %d]", got, n-1)
	}
	if rep := verifyFile(t, path); !rep.OK() || rep.Records != n {
		t.Fatalf("%s", rep)
	}
}
