package workspace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// targetFixtures builds the same tree under two workspaces, writes enabled
// and disabled: plain files and directories, a FIFO, protected names, and
// symlinks inside, outside, into .git, to a directory and in a loop.
func targetFixtures(t testing.TB) []*fixture {
	t.Helper()
	files := map[string]string{"a.txt": "a\n", "d/b.txt": "b\n", "d/e/c.txt": "c\n", "empty/": "",
		".git/config": "c\n", "sub/.git/HEAD": "h\n", ".harness/x": "x\n", "d/.harness/y": "y\n"}
	links := map[string]string{"esc": "../outside", "escabs": "/etc", "loop": "loop", "gitlink": ".git",
		"d/up": "../a.txt", "dlink": "d", "d/e/deep": "../../dlink/b.txt", "d/hgit": "../sub/.git"}
	var out []*fixture
	for _, write := range []bool{true, false} {
		opts := DefaultOptions()
		opts.WriteEnabled = write
		fx := newFixture(t, opts, files)
		for name, target := range links {
			if err := os.Symlink(target, filepath.Join(fx.root, filepath.FromSlash(name))); err != nil {
				t.Fatal(err)
			}
		}
		_ = mkfifo(filepath.Join(fx.root, "d", "fifo")) // where supported
		out = append(out, fx)
	}
	return out
}

// checkTargetAgrees fails unless checkTarget, with its one-walk fast path,
// answers p exactly as the step-by-step checkTargetSlow does.
func checkTargetAgrees(t *testing.T, fxs []*fixture, p string) {
	t.Helper()
	for _, fx := range fxs {
		for _, write := range []bool{true, false} {
			rel, at, err := fx.w.checkTargetSeen(p, write)
			wantRel, wantErr := fx.w.checkTargetSlow(p, write)
			if rel != wantRel || action.CodeOf(err) != action.CodeOf(wantErr) || action.MessageOf(err) != action.MessageOf(wantErr) {
				t.Fatalf("checkTarget(%q, write=%v) with writes enabled=%v = %q, %v; step by step: %q, %v",
					p, write, fx.w.opts.WriteEnabled, rel, err, wantRel, wantErr)
			}
			if !at.known {
				continue
			}
			// What the walk saw is what reading the target finds.
			seenCur, seenErr := fx.w.readSeen(rel, at)
			cur, curErr := fx.w.readCurrent(rel)
			if seenCur.exists != cur.exists || string(seenCur.content) != string(cur.content) || seenCur.mode != cur.mode ||
				action.CodeOf(seenErr) != action.CodeOf(curErr) || action.MessageOf(seenErr) != action.MessageOf(curErr) {
				t.Fatalf("reading %q as seen by the walk: %v %q %v; with its own lstat: %v %q %v",
					rel, seenCur.exists, seenCur.content, seenErr, cur.exists, cur.content, curErr)
			}
		}
	}
}

var targetSeeds = []string{"", ".", "a.txt", "new.txt", "d", "d/", "d/.", "d/b.txt", "d/e/c.txt", "d/new/x.txt",
	"a.txt/x", "a.txt/", "empty/n", "d/fifo", "d/fifo/x", "esc", "esc/secret.txt", "escabs/passwd", "loop", "loop/x",
	"gitlink", "gitlink/config", ".git/config", ".GIT/new", "sub/.git/HEAD", ".harness/x", ".Harness/z", "d/.harness/y",
	"d/up", "dlink/b.txt", "dlink/new.txt", "d/e/deep", "d/hgit/x", "../x", "/etc/passwd", "d/../a.txt", "d//b.txt",
	"a\x00b", "x/../../y"}

func TestCheckTargetFastPathAgrees(t *testing.T) {
	fxs := targetFixtures(t)
	for _, p := range targetSeeds {
		checkTargetAgrees(t, fxs, p)
	}
	// The fast path does take the plain cases.
	fx := fxs[0]
	for _, p := range []string{"a.txt", "new.txt", "d/b.txt", "d/new/x.txt", "d/e/c.txt", "a.txt/x"} {
		if _, _, ok := fx.w.plainTarget(p, true); !ok {
			t.Errorf("plainTarget(%q) left a plain path to the slow path", p)
		}
	}
	for _, p := range []string{"esc/x", "dlink/b.txt", ".git/config", "d/fifo", "d/", "loop", "d/up"} {
		if _, _, ok := fx.w.plainTarget(p, true); ok {
			t.Errorf("plainTarget(%q) took a path the slow path must decide", p)
		}
	}
}

// FuzzCheckTarget checks the fast path against the slow one on any path.
func FuzzCheckTarget(f *testing.F) {
	for _, p := range targetSeeds {
		f.Add(p)
	}
	fxs := targetFixtures(f)
	f.Fuzz(func(t *testing.T, p string) {
		checkTargetAgrees(t, fxs, p)
	})
}
