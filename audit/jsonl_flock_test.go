//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestJSONLTwoWritersShareOneChain(t *testing.T) {
	// Two logs on one file hold separate open file descriptions, so their
	// flocks exclude each other exactly as two processes' would.
	path := filepath.Join(t.TempDir(), "a.jsonl")
	logs := make([]*JSONL, 2)
	for i := range logs {
		l, err := OpenJSONL(path, WithInstance(fmt.Sprintf("process-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		logs[i] = l
	}
	ctx := context.Background()
	a, err := logs[0].Append(ctx, "a1", false)
	if err != nil {
		t.Fatal(err)
	}
	b, err := logs[1].Append(ctx, "b1", true)
	if err != nil {
		t.Fatal(err)
	}
	if b.Seq != a.Seq+1 || b.PrevHash != a.Hash {
		t.Fatalf("second writer did not continue the first's chain: %d/%s after %d/%s", b.Seq, b.PrevHash, a.Seq, a.Hash)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 100 {
				if _, err := logs[w%2].Append(ctx, map[string]any{"w": w, "i": i}, i%25 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if rep := verifyFile(t, path); !rep.OK() || rep.Records != 402 {
		t.Fatalf("two writers: %s", rep)
	}
}

func TestJSONLAppendWaitsForTheFileLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	holder, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	unlock, err := lockFile(context.Background(), holder)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(context.Background(), "x", true)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("append finished while another writer held the lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("append after the lock was released: %v", err)
	}
	if rep := verifyFile(t, path); !rep.OK() || rep.Records != 1 {
		t.Fatalf("%s", rep)
	}
}

func TestVerifyJSONLFileWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const writers, each = 2, 100 // 1.6 MB in all
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			big := map[string]any{"w": w, "pad": string(make([]byte, 8000))}
			for range each {
				if _, err := l.Append(context.Background(), big, false); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	for verifies := 0; ; verifies++ {
		rep, err := VerifyJSONLFile(context.Background(), path)
		if err != nil || !rep.OK() {
			<-finished
			t.Fatalf("verify %d while writing: %s, %v", verifies, rep, err)
		}
		if rep.Records == writers*each {
			break
		}
	}
	<-finished
	if _, err := VerifyJSONLFile(context.Background(), filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
