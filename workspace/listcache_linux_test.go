//go:build linux

package workspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
)

// listPair opens two workspaces on one root: one with the listing cache,
// one that reads every directory (the truth the cache must match).
func listPair(t *testing.T, root string) (cached, fresh *Workspace) {
	t.Helper()
	opts := DefaultOptions()
	opts.Sandbox = "off"
	cached, err := New(root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { cached.Close() })
	require.NotNil(t, cached.lists)
	opts.NoListCache = true
	fresh, err = New(root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { fresh.Close() })
	return cached, fresh
}

func lcList(t *testing.T, w *Workspace, path string, details bool) map[string]any {
	t.Helper()
	p, err := w.Run(context.Background(), action.Action{Name: "workspace_list_files", Input: map[string]any{"path": path, "details": details}})
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	return p
}

// hits is the number of listings the cache answered.
func lcHits(w *Workspace) uint64 {
	w.lists.mu.Lock()
	defer w.lists.mu.Unlock()
	return w.lists.hits
}

// TestListCacheSeesEveryChange lists a directory (filling the cache),
// changes the tree one way, and lists again: the second listing must be
// what a workspace without a cache lists, for each kind of change, made
// by this process or by another one, with and without details, at the top
// and two levels down.
func TestListCacheSeesEveryChange(t *testing.T) {
	changes := map[string]func(t *testing.T, dir string){
		"create": func(t *testing.T, d string) { lcWrite(t, filepath.Join(d, "new.txt"), "n") },
		"delete": func(t *testing.T, d string) { require.NoError(t, os.Remove(filepath.Join(d, "f1.txt"))) },
		"rename inside": func(t *testing.T, d string) {
			require.NoError(t, os.Rename(filepath.Join(d, "f1.txt"), filepath.Join(d, "g.txt")))
		},
		"rename over": func(t *testing.T, d string) {
			require.NoError(t, os.Rename(filepath.Join(d, "f1.txt"), filepath.Join(d, "f2.txt")))
		},
		"move out": func(t *testing.T, d string) {
			require.NoError(t, os.Rename(filepath.Join(d, "f1.txt"), filepath.Join(d, "..", "out.txt")))
		},
		"mkdir":   func(t *testing.T, d string) { require.NoError(t, os.Mkdir(filepath.Join(d, "nd"), 0o755)) },
		"rmdir":   func(t *testing.T, d string) { require.NoError(t, os.Remove(filepath.Join(d, "emptydir"))) },
		"symlink": func(t *testing.T, d string) { require.NoError(t, os.Symlink("f1.txt", filepath.Join(d, "ln"))) },
		"hard link": func(t *testing.T, d string) {
			require.NoError(t, os.Link(filepath.Join(d, "f1.txt"), filepath.Join(d, "hl")))
		},
		"append":        func(t *testing.T, d string) { lcAppend(t, filepath.Join(d, "f1.txt"), "more") },
		"truncate":      func(t *testing.T, d string) { require.NoError(t, os.Truncate(filepath.Join(d, "f2.txt"), 0)) },
		"chmod":         func(t *testing.T, d string) { require.NoError(t, os.Chmod(filepath.Join(d, "f1.txt"), 0o600)) },
		"touch in past": func(t *testing.T, d string) { lcTouch(t, filepath.Join(d, "f1.txt"), time.Unix(1e9, 0)) },
		"touch subdir":  func(t *testing.T, d string) { lcTouch(t, filepath.Join(d, "emptydir"), time.Unix(1e9, 0)) },
		"file into dir": func(t *testing.T, d string) { lcWrite(t, filepath.Join(d, "emptydir", "x"), "x") },
		"dir to file": func(t *testing.T, d string) {
			require.NoError(t, os.Remove(filepath.Join(d, "emptydir")))
			lcWrite(t, filepath.Join(d, "emptydir"), "now a file")
		},
		"other process": func(t *testing.T, d string) { lcSh(t, d, "echo hello >> f1.txt && touch made-by-sh") },
		"same size write": func(t *testing.T, d string) {
			require.NoError(t, os.WriteFile(filepath.Join(d, "f2.txt"), []byte("ZZ"), 0o644)) // f2 held "bb": same size, new time
		},
		"write kept open": func(t *testing.T, d string) {
			f, err := os.OpenFile(filepath.Join(d, "f1.txt"), os.O_WRONLY|os.O_APPEND, 0)
			require.NoError(t, err)
			_, err = f.WriteString("still open")
			require.NoError(t, err)
			t.Cleanup(func() { f.Close() })
		},
	}
	changed := 0
	t.Cleanup(func() {
		if !t.Failed() {
			require.Greater(t, changed, 2*len(changes), "most changes show in a listing")
		}
	})
	for _, at := range []string{".", "a/b"} {
		for name, change := range changes {
			for _, details := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/details=%v", at, name, details), func(t *testing.T) {
					root := t.TempDir()
					dir := filepath.Join(root, filepath.FromSlash(at))
					lcWrite(t, filepath.Join(dir, "f1.txt"), "a")
					lcWrite(t, filepath.Join(dir, "f2.txt"), "bb")
					require.NoError(t, os.Mkdir(filepath.Join(dir, "emptydir"), 0o755))
					cached, fresh := listPair(t, root)
					first := lcList(t, cached, at, details)
					require.Equal(t, lcList(t, fresh, at, details), first)
					require.Equal(t, first, lcList(t, cached, at, details))
					require.Equal(t, uint64(1), lcHits(cached), "an unchanged directory is answered from the cache (the test root is on a file system the cache serves)")

					change(t, dir)
					want := lcList(t, fresh, at, details)
					if !assert.ObjectsAreEqual(first, want) {
						changed++
					}
					require.Equal(t, want, lcList(t, cached, at, details))
				})
			}
		}
	}
}

// TestListCacheSeesChangedAncestors: a cached listing of a/b must follow
// a, b and the path to them being renamed, replaced or made symlinks.
func TestListCacheSeesChangedAncestors(t *testing.T) {
	changes := map[string]func(t *testing.T, root string){
		"rename a": func(t *testing.T, r string) { lcMv(t, r, "a", "z") },
		"rename b": func(t *testing.T, r string) { lcMv(t, r, "a/b", "a/z") },
		"swap a":   func(t *testing.T, r string) { lcMv(t, r, "a", "a-old"); lcMv(t, r, "other", "a") },
		"swap b":   func(t *testing.T, r string) { lcMv(t, r, "a/b", "a/b-old"); lcMv(t, r, "other/b", "a/b") },
		"b to symlink": func(t *testing.T, r string) {
			lcMv(t, r, "a/b", "b-old")
			lcSymlink(t, "../other/b", filepath.Join(r, "a", "b"))
		},
		"a to symlink": func(t *testing.T, r string) { lcMv(t, r, "a", "a-old"); lcSymlink(t, "other", filepath.Join(r, "a")) },
		"a to symlink out": func(t *testing.T, r string) {
			out := t.TempDir()
			lcWrite(t, filepath.Join(out, "b", "outside.txt"), "3")
			lcMv(t, r, "a", "a-old")
			lcSymlink(t, out, filepath.Join(r, "a"))
		},
		"b to file": func(t *testing.T, r string) { lcMv(t, r, "a/b", "b-old"); lcWrite(t, filepath.Join(r, "a", "b"), "f") },
		"b to fifo": func(t *testing.T, r string) {
			lcMv(t, r, "a/b", "b-old")
			require.NoError(t, syscall.Mkfifo(filepath.Join(r, "a", "b"), 0o644))
		},
		"delete a":         func(t *testing.T, r string) { require.NoError(t, os.RemoveAll(filepath.Join(r, "a"))) },
		"chmod a 000":      func(t *testing.T, r string) { require.NoError(t, os.Chmod(filepath.Join(r, "a"), 0)) },
		"delete b":         func(t *testing.T, r string) { require.NoError(t, os.RemoveAll(filepath.Join(r, "a", "b"))) },
		"chmod a":          func(t *testing.T, r string) { require.NoError(t, os.Chmod(filepath.Join(r, "a"), 0o700)) },
		"rename by others": func(t *testing.T, r string) { lcSh(t, r, "mv a z && mv other a") },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			lcWrite(t, filepath.Join(root, "a", "b", "in-a-b.txt"), "1")
			lcWrite(t, filepath.Join(root, "other", "b", "in-other-b.txt"), "2")
			cached, fresh := listPair(t, root)
			for _, details := range []bool{true, false} {
				require.Equal(t, lcList(t, fresh, "a/b", details), lcList(t, cached, "a/b", details))
			}
			change(t, root)
			t.Cleanup(func() { os.Chmod(filepath.Join(root, "a"), 0o755) })
			for _, details := range []bool{true, false} {
				for _, p := range []string{"a/b", "a/b/", "a/./b/.", "a", "a/"} {
					require.Equal(t, lcList(t, fresh, p, details), lcList(t, cached, p, details), "%s details=%v", p, details)
				}
			}
		})
	}
}

// TestListCacheSkipsSymlinkedPaths: a listing through a symlinked
// directory is read every time (the cache keys what it watched by path).
func TestListCacheSkipsSymlinkedPaths(t *testing.T) {
	root := t.TempDir()
	lcWrite(t, filepath.Join(root, "real", "f.txt"), "x")
	lcSymlink(t, "real", filepath.Join(root, "link"))
	cached, fresh := listPair(t, root)
	for range 3 {
		require.Equal(t, lcList(t, fresh, "link", true), lcList(t, cached, "link", true))
	}
	require.Zero(t, lcHits(cached))
	lcWrite(t, filepath.Join(root, "real", "g.txt"), "y")
	require.Equal(t, lcList(t, fresh, "link", false), lcList(t, cached, "link", false))
}

// TestListCacheMatchesRandomChanges applies random changes to a small
// tree and, after each, compares a random directory's cached listing with
// a fresh one.
func TestListCacheMatchesRandomChanges(t *testing.T) {
	root := t.TempDir()
	dirs := []string{".", "d1", "d2", "d1/e1"}
	for _, d := range dirs {
		require.NoError(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	cached, fresh := listPair(t, root)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	pick := func() string { return filepath.Join(root, dirs[rng.IntN(len(dirs))], fmt.Sprintf("n%d", rng.IntN(4))) }
	for step := range 1500 {
		p := pick()
		switch rng.IntN(8) {
		case 0:
			os.WriteFile(p, []byte(fmt.Sprint(step)), 0o644)
		case 1:
			os.Remove(p)
		case 2:
			os.Rename(p, pick())
		case 3:
			os.Mkdir(p, 0o755)
		case 4:
			if f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0); err == nil {
				f.WriteString("+")
				f.Close()
			}
		case 5:
			os.Chtimes(p, time.Unix(int64(step), 0), time.Unix(int64(step), 0))
		case 6: // list without a change: the next check may hit
		case 7: // a directory moves between parents, and back
			if os.Rename(filepath.Join(root, "d1", "e1"), filepath.Join(root, "d2", "e1")) != nil {
				os.Rename(filepath.Join(root, "d2", "e1"), filepath.Join(root, "d1", "e1"))
			}
		}
		d := dirs[rng.IntN(len(dirs))]
		details := rng.IntN(2) == 0
		ctx := context.Background()
		if rng.IntN(2) == 0 {
			ctx = action.WithReadOnlyPayload(ctx) // the cache's own entries
		}
		got, err := cached.Run(ctx, action.Action{Name: "workspace_list_files", Input: map[string]any{"path": d, "details": details}})
		if err != nil {
			got = map[string]any{"error": err.Error()}
		}
		require.Equal(t, lcList(t, fresh, d, details), got, "step %d: %s details=%v", step, d, details)
	}
	require.NotZero(t, lcHits(cached), "some listings were answered from the cache")
}

func lcWrite(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(s), 0o644))
}

func lcAppend(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(s)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func lcTouch(t *testing.T, path string, at time.Time) {
	t.Helper()
	require.NoError(t, os.Chtimes(path, at, at))
}

func lcMv(t *testing.T, root, from, to string) {
	t.Helper()
	require.NoError(t, os.Rename(filepath.Join(root, from), filepath.Join(root, to)))
}

func lcSymlink(t *testing.T, target, at string) {
	t.Helper()
	require.NoError(t, os.Symlink(target, at))
}

func lcSh(t *testing.T, dir, script string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

// TestListCacheSharesEntriesOnlyWithReadOnlyCallers: a caller that only
// reads its payload (action.WithReadOnlyPayload) gets the cache's own
// entries, the same each time and capped at their length, so that an
// append makes a copy; any other caller gets a copy of its own, and what
// it does to it reaches no later listing. Both see every change.
func TestListCacheSharesEntriesOnlyWithReadOnlyCallers(t *testing.T) {
	root := t.TempDir()
	for i := range 10 {
		lcWrite(t, filepath.Join(root, "many", fmt.Sprintf("f%d", i)), "x")
	}
	cached, fresh := listPair(t, root)
	ro := action.WithReadOnlyPayload(context.Background())
	list := func(ctx context.Context, in map[string]any) action.Entries {
		t.Helper()
		p, err := cached.Run(ctx, action.Action{Name: "workspace_list_files", Input: in})
		require.NoError(t, err)
		return p["entries"].(action.Entries)
	}
	many := map[string]any{"path": "many"}
	want := lcList(t, fresh, "many", false)["entries"]
	list(ro, many) // fills the cache
	hits := lcHits(cached)
	a, b := list(ro, many), list(ro, many)
	require.Equal(t, hits+2, lcHits(cached))
	require.Equal(t, want, a)
	assert.Same(t, &a[0], &b[0], "read-only callers share the cache's entries")
	assert.Equal(t, len(a), cap(a), "shared entries are capped at their length")

	c, d := list(context.Background(), many), list(context.Background(), many)
	require.Equal(t, want, c)
	assert.NotSame(t, &c[0], &d[0], "each other caller gets a copy of its own")
	assert.NotSame(t, &c[0], &a[0])
	c[0].Path, c[1].Type = "many/changed", "dir"
	_ = append(a, action.Entry{Path: "many/appended"})
	require.Equal(t, want, list(ro, many), "a caller's changes and appends reach no later listing")
	require.Equal(t, want, list(context.Background(), many))

	two := list(ro, map[string]any{"path": "many", "max_entries": 2})
	require.Equal(t, want.(action.Entries)[:2], two)
	assert.Equal(t, 2, cap(two))

	lcWrite(t, filepath.Join(root, "many", "g"), "y")
	require.Equal(t, lcList(t, fresh, "many", false)["entries"], list(ro, many), "a change is seen by read-only callers too")
}
