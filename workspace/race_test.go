package workspace

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

// TestRaceSwapDirectoryForSymlink runs searches, reads and listings while
// another goroutine keeps swapping a directory (and, separately, a nested
// directory) for a symlink to outside the root. Whatever interleaving
// happens, nothing outside may be read or listed: results come from the
// real directory or the operation is refused.
func TestRaceSwapDirectoryForSymlink(t *testing.T) {
	files := map[string]string{}
	for i := range 40 {
		files[fmt.Sprintf("d/f%02d.txt", i)] = "needle inside\n"
		files[fmt.Sprintf("e/sub/g%02d.txt", i)] = "needle nested\n"
	}
	f := newFixture(t, DefaultOptions(), files)
	watch := newAccessWatch(t, f.outside, f.secret)

	swap := func(dir string) (real, tmp string) { return dir + ".real", dir + ".tmp" }
	var stop atomic.Bool
	var attackers sync.WaitGroup
	for _, dir := range []string{filepath.Join(f.root, "d"), filepath.Join(f.root, "e", "sub")} {
		attackers.Add(1)
		go func() {
			defer attackers.Done()
			real, tmp := swap(dir)
			for !stop.Load() {
				// dir becomes a symlink to outside ...
				_ = os.Symlink(f.outside, tmp)
				_ = os.Rename(dir, real)
				_ = os.Rename(tmp, dir)
				time.Sleep(50 * time.Microsecond)
				// ... and back to the real directory.
				_ = os.Remove(dir)
				_ = os.Rename(real, dir)
				time.Sleep(50 * time.Microsecond)
			}
		}()
	}

	var okReads, refused atomic.Int64
	check := func(name string, in map[string]any) {
		out, err := f.run(t, name, in)
		b, _ := json.Marshal(out)
		if strings.Contains(string(b), sentinelText) || strings.Contains(string(b), "secret.txt") {
			t.Errorf("%s %v leaked: %s", name, in, b)
		}
		switch code := action.CodeOf(err); code {
		case action.CodeNone:
			if name == "workspace_read_file" {
				okReads.Add(1)
			}
		case action.CodePathOutsideRoot, action.CodeNotFound, action.CodeInvalidInput:
			refused.Add(1)
		default:
			t.Errorf("%s %v: unexpected %v", name, in, err)
		}
	}
	deadline := time.Now().Add(1500 * time.Millisecond)
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for time.Now().Before(deadline) && !t.Failed() {
				check("workspace_search_text", map[string]any{"query": "SENTINEL", "max_results": 1000})
				check("workspace_search_text", map[string]any{"query": "needle", "path": "d", "max_results": 1000})
				check("workspace_search_text", map[string]any{"query": "S.NTINEL", "regex": true, "path": "e"})
				check("workspace_read_file", map[string]any{"path": "d/f01.txt"})
				check("workspace_read_file", map[string]any{"path": "d/secret.txt"})
				check("workspace_read_file", map[string]any{"path": "e/sub/secret.txt"})
				check("workspace_read_file", map[string]any{"path": "e/sub/g01.txt"})
				check("workspace_list_files", map[string]any{"path": "d"})
				check("workspace_list_files", map[string]any{"recursive": true, "max_entries": 10000})
			}
		}()
	}
	readers.Wait()
	stop.Store(true)
	attackers.Wait()

	watch.assertUntouched(t)
	if okReads.Load() == 0 || refused.Load() == 0 {
		t.Fatalf("race not exercised: %d successful reads, %d refusals", okReads.Load(), refused.Load())
	}
	t.Logf("%d successful reads, %d refusals", okReads.Load(), refused.Load())
}
