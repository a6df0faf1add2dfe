package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

// lockFixture is a workspace whose commit step for one path can be held
// open, to see what other applies do meanwhile.
type lockFixture struct {
	t       *testing.T
	w       *Workspace
	dir     string
	holdAt  string        // the commit step that blocks
	entered chan struct{} // closed when holdAt is reached
	release chan struct{} // close to let it go on
	waits   chan string   // rel of every lock an apply had to wait for
}

func newLockFixture(t *testing.T, files map[string]string, holdAt string) *lockFixture {
	t.Helper()
	opts := DefaultOptions()
	opts.Sandbox = "off"
	fx := newFixture(t, opts, files)
	w, dir := fx.w, fx.root
	f := &lockFixture{t: t, w: w, dir: dir, holdAt: holdAt,
		entered: make(chan struct{}), release: make(chan struct{}), waits: make(chan string, 16)}
	var once sync.Once
	testHookCommitStep = func(rel string) error {
		if rel == f.holdAt {
			once.Do(func() {
				close(f.entered)
				<-f.release
			})
		}
		return nil
	}
	testHookLockWait = func(key string) {
		_, rel, _ := strings.Cut(key, "\x00")
		f.waits <- rel
	}
	t.Cleanup(func() { testHookCommitStep, testHookLockWait = nil, nil })
	return f
}

func (f *lockFixture) apply(in map[string]any) error {
	_, err := f.w.Run(context.Background(), action.Action{Name: "workspace_apply_patch", Input: in})
	return err
}

// start runs fn in a goroutine and returns a channel with its error.
func start(fn func() error) chan error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	return done
}

// wait returns what done delivers, failing the test after a generous
// bound (only reached when an apply is wrongly blocked).
func (f *lockFixture) wait(done chan error, what string) error {
	f.t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		f.t.Fatalf("%s did not finish: it waits for an apply it should not", what)
		return nil
	}
}

func (f *lockFixture) read(rel string) string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.dir, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

// TestPatchLockDifferentFilesConcurrent: while an apply to a.txt is held
// in its commit, an apply to another file runs to the end without
// waiting for any lock.
func TestPatchLockDifferentFilesConcurrent(t *testing.T) {
	f := newLockFixture(t, map[string]string{"a.txt": "a\n"}, "a.txt")
	// Another file whose lock stripe is not a.txt's (most are).
	other := ""
	for i := 0; other == ""; i++ {
		if n := fmt.Sprintf("b%d.txt", i); stripeOf(f.w.lockKey(n)) != stripeOf(f.w.lockKey("a.txt")) {
			other = n
		}
	}
	first := start(func() error { return f.apply(map[string]any{"path": "a.txt", "content": "A\n"}) })
	<-f.entered
	if err := f.wait(start(func() error { return f.apply(map[string]any{"path": other, "content": "B\n"}) }), "apply to "+other); err != nil {
		t.Fatalf("apply to %s: %v", other, err)
	}
	if got := f.read(other); got != "B\n" {
		t.Fatalf("%s = %q while a.txt's apply is held", other, got)
	}
	select {
	case rel := <-f.waits:
		t.Fatalf("an apply waited for the lock of %s", rel)
	default:
	}
	close(f.release)
	if err := f.wait(first, "apply to a.txt"); err != nil {
		t.Fatalf("apply to a.txt: %v", err)
	}
	if got := f.read("a.txt"); got != "A\n" {
		t.Fatalf("a.txt = %q", got)
	}
}

// TestPatchLockSameFileSerialised: a second apply to the file held in its
// commit waits for its lock. Applying a plan made before the first apply
// then fails stale; applying input (which plans under the lock) writes on
// top of the first change.
func TestPatchLockSameFileSerialised(t *testing.T) {
	tests := []struct {
		name     string
		viaPlan  bool
		wantCode action.Code
		want     string
	}{
		{name: "apply-input-replans", want: "second\n"},
		{name: "apply-plan-is-stale", viaPlan: true, wantCode: action.CodeStalePreview, want: "first\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLockFixture(t, map[string]string{"a.txt": "a\n"}, "a.txt")
			second := map[string]any{"path": "a.txt", "content": "second\n"}
			plan, err := f.w.PlanPatch(context.Background(), second)
			if err != nil {
				t.Fatal(err)
			}
			first := start(func() error { return f.apply(map[string]any{"path": "a.txt", "content": "first\n"}) })
			<-f.entered
			other := start(func() error {
				if tc.viaPlan {
					return f.w.ApplyPlan(context.Background(), plan)
				}
				return f.apply(second)
			})
			if rel := <-f.waits; rel != "a.txt" {
				t.Fatalf("second apply waited for %s, want a.txt", rel)
			}
			if got := f.read("a.txt"); got != "a\n" {
				t.Fatalf("a.txt = %q before the first apply was let go", got)
			}
			close(f.release)
			if err := f.wait(first, "first apply"); err != nil {
				t.Fatalf("first apply: %v", err)
			}
			err = f.wait(other, "second apply")
			if code := action.CodeOf(err); (err == nil) != (tc.wantCode == "") || (err != nil && code != tc.wantCode) {
				t.Fatalf("second apply: err = %v (code %q), want code %q", err, code, tc.wantCode)
			}
			if got := f.read("a.txt"); got != tc.want {
				t.Fatalf("a.txt = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestPatchLockRenameLocksBoth: while a rename old.txt -> new.txt is held
// in its commit, an apply to either name waits for that name's lock.
func TestPatchLockRenameLocksBoth(t *testing.T) {
	rename := "diff --git a/old.txt b/new.txt\nsimilarity index 100%\nrename from old.txt\nrename to new.txt\n"
	tests := []struct {
		name  string
		input map[string]any
		lock  string
	}{
		{name: "source", input: map[string]any{"path": "old.txt", "content": "changed\n"}, lock: "old.txt"},
		{name: "destination", input: map[string]any{"path": "new.txt", "content": "made\n"}, lock: "new.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newLockFixture(t, map[string]string{"old.txt": "o\n"}, "new.txt")
			first := start(func() error { return f.apply(map[string]any{"patch": rename}) })
			<-f.entered
			other := start(func() error { return f.apply(tc.input) })
			if rel := <-f.waits; rel != tc.lock {
				t.Fatalf("apply waited for %s, want %s", rel, tc.lock)
			}
			close(f.release)
			if err := f.wait(first, "rename"); err != nil {
				t.Fatalf("rename: %v", err)
			}
			// Whatever the second apply does after the rename, it sees
			// the rename whole: old.txt gone and new.txt with its content.
			err := f.wait(other, "second apply")
			want := tc.input["content"].(string)
			if err != nil {
				t.Fatalf("second apply: %v", err)
			}
			if got := f.read(tc.lock); got != want {
				t.Fatalf("%s = %q, want %q", tc.lock, got, want)
			}
			if tc.lock == "old.txt" {
				if got := f.read("new.txt"); got != "o\n" {
					t.Fatalf("new.txt = %q, want the renamed content", got)
				}
			}
		})
	}
}

// TestPatchLockManyConcurrentApplies applies to a few shared files from
// many goroutines: every apply succeeds and each file ends with one of the
// contents written to it, with no temporary file left.
func TestPatchLockManyConcurrentApplies(t *testing.T) {
	opts := DefaultOptions()
	opts.Sandbox = "off"
	fx := newFixture(t, opts, nil)
	w, dir := fx.w, fx.root
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := []string{"x.txt", "sub/y.txt", "sub/z.txt"}[i%3]
			in := map[string]any{"path": name, "content": strings.Repeat("line\n", i+1)}
			_, err := w.Run(context.Background(), action.Action{Name: "workspace_apply_patch", Input: in})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("apply: %v", err)
		}
	}
	got := listTreeForPatch(t, dir)
	if strings.Contains(got, ".harness-patch-") {
		t.Fatalf("temporary file left: %s", got)
	}
	for _, n := range []string{"x.txt", "sub/y.txt", "sub/z.txt"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil || len(b) == 0 || strings.Count(string(b), "line\n")*5 != len(b) {
			t.Fatalf("%s = %q, %v", n, b, err)
		}
	}
	for i := range pathStripes {
		if !pathStripes[i].TryLock() {
			t.Fatalf("path lock stripe %d left held", i)
		}
		pathStripes[i].Unlock()
	}
}

// TestPatchLockRunsAloneAfterAttempts: an apply whose plan keeps touching
// paths it has not locked gives up on path locks after maxPatchAttempts
// and runs alone: while it commits, no other apply can start, and it
// writes the whole change.
func TestPatchLockRunsAloneAfterAttempts(t *testing.T) {
	defer func(n int) { maxPatchAttempts = n }(maxPatchAttempts)
	// With one attempt, a multi-file patch (whose first plan is made
	// before its paths are known) always ends up running alone.
	maxPatchAttempts = 1
	f := newLockFixture(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"}, "b.txt")
	two := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n"
	done := start(func() error { return f.apply(map[string]any{"patch": two}) })
	<-f.entered
	if patchAll.TryRLock() {
		patchAll.RUnlock()
		t.Error("another apply could start while one runs alone")
	}
	close(f.release)
	if err := f.wait(done, "apply running alone"); err != nil {
		t.Fatalf("apply: %v", err)
	}
	for rel, want := range map[string]string{"a.txt": "A\n", "b.txt": "B\n"} {
		if got := f.read(rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if !patchAll.TryLock() {
		t.Fatal("the apply left the workspace locked")
	}
	patchAll.Unlock()
}
