//go:build linux

package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
)

// heldFor returns the file the workspace holds open for rel, nil if none.
func heldFor(w *Workspace, rel string) *os.File {
	w.held.mu.Lock()
	defer w.held.mu.Unlock()
	return w.held.files[rel].f
}

// readOutcome is what a read of rel gives: its payload, or its error's
// code and message.
func readOutcome(t *testing.T, w *Workspace, in map[string]any) string {
	t.Helper()
	out, err := w.Run(context.Background(), action.Action{Name: "workspace_read_file", Input: in})
	if err != nil {
		return fmt.Sprintf("error %s: %s", action.CodeOf(err), action.MessageOf(err))
	}
	return fmt.Sprintf("%v", out)
}

// heldAfter is what becomes of the file held for a path after a change.
type heldAfter int

const (
	heldKept    heldAfter = iota // the very file, unchanged: read again
	heldDropped                  // another file, or another mode, owner or size: closed
	// heldEither: only the change time tells, which a kernel with a
	// coarse clock may leave as it was within one tick; either way the
	// read gives the file's content now.
	heldEither
)

// TestHeldFileReadsWhatIsThereNow: once a file has been read, the
// workspace holds it open; whatever then happens at its path, the next
// read (whole, or a range) gives what a workspace that never read it
// gives, refusals included, and nothing from outside the root. The file
// held is used again only when it is the one there, unchanged since the
// last read.
func TestHeldFileReadsWhatIsThereNow(t *testing.T) {
	const text = "one\ntwo\nthree\n"
	changes := []struct {
		name   string
		rel    string
		change func(t *testing.T, f *fixture, path string)
		reused heldAfter // whether the held file may be read again
	}{
		{"nothing", "f.txt", func(*testing.T, *fixture, string) {}, heldKept},
		{"read again at once", "dir/g.txt", func(*testing.T, *fixture, string) {}, heldKept},
		{"the same bytes written", "f.txt", func(t *testing.T, _ *fixture, p string) { require.NoError(t, os.WriteFile(p, []byte(text), 0o644)) }, heldEither},
		{"rewritten, same size", "f.txt", func(t *testing.T, _ *fixture, p string) {
			require.NoError(t, os.WriteFile(p, []byte("ONE\nTWO\nTHREE\n"), 0o644))
		}, heldEither},
		{"rewritten, times put back", "f.txt", func(t *testing.T, _ *fixture, p string) {
			fi, err := os.Stat(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, []byte("xxx\nyyy\nzzzzz\n"), 0o644))
			require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))
		}, heldEither},
		{"appended", "f.txt", func(t *testing.T, _ *fixture, p string) { lcAppend(t, p, "four\n") }, heldDropped},
		{"truncated", "f.txt", func(t *testing.T, _ *fixture, p string) { require.NoError(t, os.Truncate(p, 4)) }, heldDropped},
		{"emptied", "f.txt", func(t *testing.T, _ *fixture, p string) { require.NoError(t, os.Truncate(p, 0)) }, heldDropped},
		{"renamed over", "f.txt", func(t *testing.T, _ *fixture, p string) {
			require.NoError(t, os.WriteFile(p+".new", []byte("new\n"), 0o644))
			require.NoError(t, os.Rename(p+".new", p))
		}, heldDropped},
		{"deleted", "f.txt", func(t *testing.T, _ *fixture, p string) { require.NoError(t, os.Remove(p)) }, heldDropped},
		{"deleted and made again", "f.txt", func(t *testing.T, _ *fixture, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		}, heldDropped},
		{"a symlink to a file inside", "f.txt", func(t *testing.T, f *fixture, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink("dir/g.txt", p))
		}, heldDropped},
		{"a symlink to the file outside", "f.txt", func(t *testing.T, f *fixture, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Symlink(f.secret, p))
		}, heldDropped},
		{"a symlinked parent outside", "dir/g.txt", func(t *testing.T, f *fixture, p string) {
			require.NoError(t, os.Rename(filepath.Dir(p), filepath.Dir(p)+".old"))
			require.NoError(t, os.WriteFile(filepath.Join(f.outside, "g.txt"), []byte(f.sentinel+"\n"), 0o644))
			require.NoError(t, os.Symlink(f.outside, filepath.Dir(p)))
		}, heldDropped},
		{"a parent replaced", "dir/g.txt", func(t *testing.T, _ *fixture, p string) {
			require.NoError(t, os.Rename(filepath.Dir(p), filepath.Dir(p)+".old"))
			lcWrite(t, p, "another g\n")
		}, heldDropped},
		{"a directory", "f.txt", func(t *testing.T, _ *fixture, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, os.Mkdir(p, 0o755))
		}, heldDropped},
		{"a FIFO", "f.txt", func(t *testing.T, _ *fixture, p string) {
			require.NoError(t, os.Remove(p))
			require.NoError(t, syscall.Mkfifo(p, 0o644))
		}, heldDropped},
		{"no permissions", "f.txt", func(t *testing.T, _ *fixture, p string) { require.NoError(t, os.Chmod(p, 0)) }, heldDropped},
		{"another owner", "f.txt", func(t *testing.T, _ *fixture, p string) {
			if os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			require.NoError(t, os.Chown(p, 65534, 65534))
		}, heldDropped},
		{"a hard link made", "f.txt", func(t *testing.T, _ *fixture, p string) { require.NoError(t, os.Link(p, p+".link")) }, heldEither},
		{"its times set", "f.txt", func(t *testing.T, _ *fixture, p string) {
			require.NoError(t, os.Chtimes(p, time.Unix(1e9, 0), time.Unix(1e9, 0)))
		}, heldEither},
	}
	reads := []map[string]any{{}, {"offset": 1, "limit": 1}, {"offset": 2}}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, DefaultOptions(), map[string]string{"f.txt": text, "dir/g.txt": "g\n"})
			path := filepath.Join(f.root, filepath.FromSlash(c.rel))
			checkRead(t, f, c.rel, "first read")
			held := heldFor(f.w, c.rel)
			require.NotNil(t, held, "a file read is held open")
			c.change(t, f, path)
			for _, r := range reads {
				in := map[string]any{"path": c.rel}
				for k, v := range r {
					in[k] = v
				}
				fresh, err := New(f.root, DefaultOptions())
				require.NoError(t, err)
				want := readOutcome(t, fresh, in)
				fresh.Close()
				out, err := f.run(t, "workspace_read_file", in)
				f.assertNoLeak(t, out, err)
				got := readOutcome(t, f.w, in)
				require.Equal(t, want, got, "read %v", r)
			}
			now := heldFor(f.w, c.rel)
			switch c.reused {
			case heldKept:
				assert.Same(t, held, now, "the file there is the one held: it is read again")
			case heldDropped:
				assert.NotSame(t, held, now, "the file held is not the one there, or changed: it is not read again")
				_, err := held.Stat()
				assert.ErrorIs(t, err, os.ErrClosed, "the file held before is closed")
			}
		})
	}
}

// TestHeldFilesBounds: at most heldFilesMax files are held, none larger
// than heldFileMaxBytes; a file found gone is let go of; and closing the
// workspace closes every file it held, and any taken at the time when it
// is put back.
func TestHeldFilesBounds(t *testing.T) {
	files := map[string]string{"big.txt": strings.Repeat("x", heldFileMaxBytes+1)}
	for i := range 2 * heldFilesMax {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	opts := DefaultOptions()
	opts.MaxFileBytes = 4 << 20
	f := newFixture(t, opts, files)
	var seen []*os.File
	for i := range 2 * heldFilesMax {
		rel := fmt.Sprintf("f%02d.txt", i)
		checkRead(t, f, rel, "read")
		seen = append(seen, heldFor(f.w, rel))
		f.w.held.mu.Lock()
		n := len(f.w.held.files)
		f.w.held.mu.Unlock()
		require.LessOrEqual(t, n, heldFilesMax)
	}
	checkRead(t, f, "big.txt", "a large file")
	assert.Nil(t, heldFor(f.w, "big.txt"), "a file over heldFileMaxBytes is not held")

	last := fmt.Sprintf("f%02d.txt", 2*heldFilesMax-1)
	require.NotNil(t, heldFor(f.w, last))
	require.NoError(t, os.Remove(filepath.Join(f.root, last)))
	_, err := f.run(t, "workspace_read_file", map[string]any{"path": last})
	require.Equal(t, action.CodeNotFound, action.CodeOf(err))
	assert.Nil(t, heldFor(f.w, last), "a file found gone is let go of")

	kept := fmt.Sprintf("f%02d.txt", 2*heldFilesMax-2)
	checkRead(t, f, kept, "read again") // held now, whichever files were let go of
	fi, err := os.Stat(filepath.Join(f.root, kept))
	require.NoError(t, err)
	taken := f.w.held.take(kept, fi)
	require.NotNil(t, taken)
	require.NoError(t, f.w.Close())
	for i, h := range seen {
		if h == nil || h == taken {
			continue
		}
		_, err := h.Stat()
		assert.True(t, errors.Is(err, os.ErrClosed), "file %d held is closed with the workspace", i)
	}
	if _, err := taken.Stat(); err != nil {
		t.Fatal("a file taken is closed by its reader, not under it")
	}
	f.w.held.put(kept, taken, fi)
	_, err = taken.Stat()
	assert.ErrorIs(t, err, os.ErrClosed, "a file put back after the workspace closed is closed")
}

// TestHeldFilesConcurrentReads: reads of a few files from several
// goroutines while each is replaced by renames always give one of the
// versions written, whole (go test -race).
func TestHeldFilesConcurrentReads(t *testing.T) {
	versions := func(name string, v int) string { return strings.Repeat(fmt.Sprintf("%s version %d\n", name, v), 100+v) }
	files := map[string]string{}
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		files[n] = versions(n, 0)
	}
	f := newFixture(t, DefaultOptions(), files)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for v := 1; ; v++ {
			select {
			case <-stop:
				return
			default:
			}
			n := []string{"a.txt", "b.txt", "c.txt"}[v%3]
			tmp := filepath.Join(f.root, n+".tmp")
			if os.WriteFile(tmp, []byte(versions(n, v)), 0o644) != nil || os.Rename(tmp, filepath.Join(f.root, n)) != nil {
				t.Error("replace failed")
				return
			}
		}
	})
	var readers sync.WaitGroup
	for g := range 4 {
		readers.Go(func() {
			for i := range 300 {
				n := []string{"a.txt", "b.txt", "c.txt"}[(g+i)%3]
				out, err := f.run(t, "workspace_read_file", map[string]any{"path": n})
				if err != nil {
					t.Errorf("read %s: %v", n, err)
					return
				}
				content := out["content"].(string)
				var v int
				if _, err := fmt.Sscanf(content, n+" version %d\n", &v); err != nil || content != versions(n, v) {
					t.Errorf("read %s: not a version written whole: %.60q", n, content)
					return
				}
			}
		})
	}
	readers.Wait()
	close(stop)
	wg.Wait()
}
