package workspace

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// attackFixture is a root full of traps: symlinks (absolute, relative,
// chained, through parents, dangling, looping) that lead outside, special
// files, a sibling directory whose name extends the root's ("root_x"), and
// when the test runs as root a device node and a mounted /proc.
type attackFixture struct {
	*fixture
	sibling string
	watch   *accessWatch
	hasDev  bool
	hasProc bool
	hasSys  bool
}

func newAttackFixture(t *testing.T, opts Options) *attackFixture {
	t.Helper()
	f := newFixture(t, opts, map[string]string{
		"a.txt":          "inside text\n",
		"inner/b.txt":    "inner text\n",
		".git/config":    "[core]\n",
		"procmnt/":       "",
		"envfile":        "placeholder\n",
		"sysfile":        "placeholder\n",
		"dir/keep.txt":   "keep\n",
		".harness/state": "x\n",
	})
	af := &attackFixture{fixture: f, sibling: filepath.Join(filepath.Dir(f.root), "root_x")}
	if err := os.Mkdir(af.sibling, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(af.sibling, "secret.txt"), []byte(sentinelText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"esc_abs":      f.secret,
		"esc_rel":      "../outside/secret.txt",
		"esc_dir":      "../outside",
		"esc_dir_abs":  f.outside,
		"chain1":       "chain2",
		"chain2":       "inner/chain3",
		"inner/chain3": "../../outside/secret.txt",
		"inner/up":     "../../outside",
		"loop1":        "loop2",
		"loop2":        "loop1",
		"dangling_out": "../outside/nonexistent",
		"rootlink":     "/",
		"proclink":     "/proc/self/environ",
		"devlink":      "/dev/zero",
		"siblink":      "../root_x/secret.txt",
		"gitlink":      ".git",
		"ok_link":      "a.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(f.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mkfifo(filepath.Join(f.root, "fifo")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	ln, err := net.Listen("unix", filepath.Join(f.root, "sock"))
	if err != nil {
		t.Fatalf("unix socket: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	af.hasDev = mknodZero(filepath.Join(f.root, "dev_zero")) == nil
	if unmount, err := mountProc(filepath.Join(f.root, "procmnt")); err == nil {
		af.hasProc = true
		t.Cleanup(unmount)
		// A single /proc file bind-mounted over a workspace file: it
		// looks like a regular file in the directory listing.
		if unbind, err := bindFile("/proc/self/environ", filepath.Join(f.root, "envfile")); err == nil {
			t.Cleanup(unbind)
		} else {
			af.hasProc = false
		}
	}
	// A sysfs file (text, with a non-zero size) bind-mounted the same way.
	if unbind, err := bindFile("/sys/kernel/mm/transparent_hugepage/enabled", filepath.Join(f.root, "sysfile")); err == nil {
		af.hasSys = true
		t.Cleanup(unbind)
	}
	af.watch = newAccessWatch(t, f.outside, f.secret, af.sibling, filepath.Join(af.sibling, "secret.txt"))
	return af
}

// TestAttackPaths runs path, symlink and special-file attacks against
// list, read and search. Each case asserts the refusal code, that the
// sentinel outside the root never appears in the result, and (on Linux,
// through inotify) that nothing outside the root was opened, read or
// changed.
func TestAttackPaths(t *testing.T) {
	af := newAttackFixture(t, DefaultOptions())
	long := strings.Repeat("n", 300)
	const (
		list   = "workspace_list_files"
		read   = "workspace_read_file"
		search = "workspace_search_text"
	)
	type attack struct {
		name   string
		action string
		in     map[string]any
		code   action.Code
		needs  string // "dev", "proc" or "sys": skipped without it
	}
	cases := []attack{
		// Reads: traversal spelled in the path.
		{"read absolute sentinel", read, map[string]any{"path": af.secret}, action.CodePathOutsideRoot, ""},
		{"read dotdot", read, map[string]any{"path": "../outside/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read dotdot after name", read, map[string]any{"path": "inner/../../outside/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read dot then dotdot", read, map[string]any{"path": "./../outside/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read doubled slashes", read, map[string]any{"path": "..//outside//secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read deep dotdot", read, map[string]any{"path": "inner/../inner/../../../../../outside/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read tilde dotdot", read, map[string]any{"path": "~/../../outside/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read sibling prefix dir", read, map[string]any{"path": "../root_x/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read proc absolute", read, map[string]any{"path": "/proc/self/environ"}, action.CodePathOutsideRoot, ""},
		{"read nul byte", read, map[string]any{"path": "a.txt\x00../../outside/secret.txt"}, action.CodeInvalidInput, ""},
		{"read nul at end", read, map[string]any{"path": "a.txt\x00"}, action.CodeInvalidInput, ""},
		{"read over-long name", read, map[string]any{"path": long}, action.CodeInvalidInput, ""},
		{"read over-long path", read, map[string]any{"path": strings.Repeat("a/", 2100) + "x"}, action.CodeInvalidInput, ""},
		{"read url-encoded dotdot is a name", read, map[string]any{"path": "%2e%2e/outside/secret.txt"}, action.CodeNotFound, ""},
		{"read backslash dotdot is a name", read, map[string]any{"path": `..\outside\secret.txt`}, action.CodeNotFound, ""},
		{"read symlink dotdot stays lexical", read, map[string]any{"path": "esc_dir/../outside/secret.txt"}, action.CodeNotFound, ""},
		// Reads: symlinks.
		{"read absolute symlink", read, map[string]any{"path": "esc_abs"}, action.CodePathOutsideRoot, ""},
		{"read relative symlink", read, map[string]any{"path": "esc_rel"}, action.CodePathOutsideRoot, ""},
		{"read through symlinked parent", read, map[string]any{"path": "esc_dir/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read through absolute symlinked parent", read, map[string]any{"path": "esc_dir_abs/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read symlink chain", read, map[string]any{"path": "chain1"}, action.CodePathOutsideRoot, ""},
		{"read nested symlinked parent", read, map[string]any{"path": "inner/up/secret.txt"}, action.CodePathOutsideRoot, ""},
		{"read symlink loop", read, map[string]any{"path": "loop1"}, action.CodeInvalidInput, ""},
		{"read dangling outward symlink", read, map[string]any{"path": "dangling_out"}, action.CodePathOutsideRoot, ""},
		{"read via root symlink", read, map[string]any{"path": "rootlink/etc/passwd"}, action.CodePathOutsideRoot, ""},
		{"read proc symlink", read, map[string]any{"path": "proclink"}, action.CodePathOutsideRoot, ""},
		{"read device symlink", read, map[string]any{"path": "devlink"}, action.CodePathOutsideRoot, ""},
		{"read sibling symlink", read, map[string]any{"path": "siblink"}, action.CodePathOutsideRoot, ""},
		{"read symlink with trailing slash", read, map[string]any{"path": "esc_rel/"}, action.CodePathOutsideRoot, ""},
		{"read symlinked dir dot", read, map[string]any{"path": "esc_dir/."}, action.CodePathOutsideRoot, ""},
		// Reads: special files inside the root.
		{"read fifo does not hang", read, map[string]any{"path": "fifo"}, action.CodeInvalidInput, ""},
		{"read socket", read, map[string]any{"path": "sock"}, action.CodeInvalidInput, ""},
		{"read device node", read, map[string]any{"path": "dev_zero"}, action.CodeInvalidInput, "dev"},
		{"read mounted proc file", read, map[string]any{"path": "procmnt/self/environ"}, action.CodeInvalidInput, "proc"},
		{"read mounted proc status", read, map[string]any{"path": "procmnt/self/status", "limit": 5}, action.CodeInvalidInput, "proc"},
		// Listings.
		{"list absolute root", list, map[string]any{"path": "/"}, action.CodePathOutsideRoot, ""},
		{"list parent", list, map[string]any{"path": ".."}, action.CodePathOutsideRoot, ""},
		{"list parent trailing slash", list, map[string]any{"path": "../"}, action.CodePathOutsideRoot, ""},
		{"list outside absolute", list, map[string]any{"path": af.outside}, action.CodePathOutsideRoot, ""},
		{"list symlinked dir", list, map[string]any{"path": "esc_dir", "recursive": true}, action.CodePathOutsideRoot, ""},
		{"list absolute symlinked dir", list, map[string]any{"path": "esc_dir_abs"}, action.CodePathOutsideRoot, ""},
		{"list nested symlinked dir", list, map[string]any{"path": "inner/up"}, action.CodePathOutsideRoot, ""},
		{"list root symlink", list, map[string]any{"path": "rootlink"}, action.CodePathOutsideRoot, ""},
		{"list sibling prefix dir", list, map[string]any{"path": "../root_x"}, action.CodePathOutsideRoot, ""},
		{"list symlinked dir dot", list, map[string]any{"path": "esc_dir/./"}, action.CodePathOutsideRoot, ""},
		{"list fifo", list, map[string]any{"path": "fifo"}, action.CodeInvalidInput, ""},
		{"list nul", list, map[string]any{"path": "inner\x00"}, action.CodeInvalidInput, ""},
		{"list recursive root stays inside", list, map[string]any{"recursive": true, "include_git": true, "max_entries": 10000}, action.CodeNone, ""},
		{"list mounted proc", list, map[string]any{"path": "procmnt"}, action.CodeInvalidInput, "proc"},
		// Searches.
		{"search symlinked dir", search, map[string]any{"query": "SENTINEL", "path": "esc_dir"}, action.CodePathOutsideRoot, ""},
		{"search dotdot", search, map[string]any{"query": "SENTINEL", "path": "../outside"}, action.CodePathOutsideRoot, ""},
		{"search absolute", search, map[string]any{"query": "SENTINEL", "path": af.outside}, action.CodePathOutsideRoot, ""},
		{"search symlinked file", search, map[string]any{"query": "SENTINEL", "path": "esc_rel"}, action.CodePathOutsideRoot, ""},
		{"search symlink chain", search, map[string]any{"query": "SENTINEL", "path": "chain1"}, action.CodePathOutsideRoot, ""},
		{"search nested symlinked dir", search, map[string]any{"query": "SENTINEL", "path": "inner/up"}, action.CodePathOutsideRoot, ""},
		{"search root symlink", search, map[string]any{"query": "root", "path": "rootlink/etc"}, action.CodePathOutsideRoot, ""},
		{"search proc symlink", search, map[string]any{"query": "PATH", "path": "proclink"}, action.CodePathOutsideRoot, ""},
		{"search sibling prefix", search, map[string]any{"query": "SENTINEL", "path": "../root_x"}, action.CodePathOutsideRoot, ""},
		{"search fifo does not hang", search, map[string]any{"query": "x", "path": "fifo"}, action.CodeInvalidInput, ""},
		{"search socket", search, map[string]any{"query": "x", "path": "sock"}, action.CodeInvalidInput, ""},
		{"search device node", search, map[string]any{"query": "x", "path": "dev_zero"}, action.CodeInvalidInput, "dev"},
		{"search whole root never follows links out", search, map[string]any{"query": "SENTINEL"}, action.CodeNone, ""},
		{"search glob with dotdot matches nothing outside", search, map[string]any{"query": "SENTINEL", "glob": "../outside/*"}, action.CodeNone, ""},
		{"search regex for sentinel", search, map[string]any{"query": "SENT.NEL", "regex": true, "max_results": 1000}, action.CodeNone, ""},
		{"search mounted proc", search, map[string]any{"query": "PATH", "path": "procmnt"}, action.CodeInvalidInput, "proc"},
		{"search mounted proc file", search, map[string]any{"query": "PATH", "path": "procmnt/self/environ"}, action.CodeInvalidInput, "proc"},
		{"read bind-mounted proc file", read, map[string]any{"path": "envfile"}, action.CodeInvalidInput, "proc"},
		{"search bind-mounted proc file", search, map[string]any{"query": "PATH", "path": "envfile"}, action.CodeInvalidInput, "proc"},
		{"read bind-mounted sysfs file", read, map[string]any{"path": "sysfile"}, action.CodeInvalidInput, "sys"},
		{"search root skips bind-mounted sysfs file", search, map[string]any{"query": "madvise", "max_results": 1000}, action.CodeNone, "sys"},
		{"search nul in path", search, map[string]any{"query": "x", "path": "a.txt\x00"}, action.CodeInvalidInput, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needs == "dev" && !af.hasDev {
				t.Skip("cannot create a device node here (needs CAP_MKNOD)")
			}
			if tc.needs == "proc" && !af.hasProc {
				t.Skip("cannot mount proc here (needs CAP_SYS_ADMIN)")
			}
			if tc.needs == "sys" && !af.hasSys {
				t.Skip("cannot bind-mount a sysfs file here (needs CAP_SYS_ADMIN and /sys)")
			}
			af.watch.events() // start clean
			out, err := af.run(t, tc.action, tc.in)
			if got := codeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			af.watch.assertUntouched(t) // before assertNoLeak, which reads the sentinel
			af.assertNoLeak(t, out, err)
			b, _ := json.Marshal(out)
			if strings.Contains(string(b), "secret.txt") || strings.Contains(string(b), "root_x") {
				t.Fatalf("payload names something outside the root: %s", b)
			}
			if tc.action == search && err == nil && len(out["matches"].([]any)) != 0 {
				t.Fatalf("search found matches: %s", b)
			}
		})
	}
}

// TestAttackWritePaths checks the write rules other workspace actions rely
// on: checkWritePath refuses, and nothing outside changes.
func TestAttackWritePaths(t *testing.T) {
	af := newAttackFixture(t, DefaultOptions())
	disabled := newFixture(t, Options{}, map[string]string{"a.txt": "x"})
	cases := []struct {
		name string
		w    *Workspace
		path string
		code action.Code
	}{
		{"git config", af.w, ".git/config", action.CodePathOutsideRoot},
		{"git upper case", af.w, ".GIT/hooks/pre-commit", action.CodePathOutsideRoot},
		{"git itself", af.w, ".git", action.CodePathOutsideRoot},
		{"nested git", af.w, "inner/.git/config", action.CodePathOutsideRoot},
		{"git via dot segments", af.w, "inner/../.git/./config", action.CodePathOutsideRoot},
		{"git via symlink", af.w, "gitlink/hooks/pre-commit", action.CodePathOutsideRoot},
		{"harness dir", af.w, ".harness/state", action.CodePathOutsideRoot},
		{"symlinked parent outside", af.w, "esc_dir/new.txt", action.CodePathOutsideRoot},
		{"symlink to outside file", af.w, "esc_rel", action.CodePathOutsideRoot},
		{"dangling symlink outside", af.w, "dangling_out", action.CodePathOutsideRoot},
		{"dotdot", af.w, "../outside/secret.txt", action.CodePathOutsideRoot},
		{"absolute", af.w, af.secret, action.CodePathOutsideRoot},
		{"sibling prefix", af.w, "../root_x/secret.txt", action.CodePathOutsideRoot},
		{"directory spelling", af.w, "dir/", action.CodeInvalidInput},
		{"root itself", af.w, ".", action.CodeInvalidInput},
		{"fifo", af.w, "fifo", action.CodeInvalidInput},
		{"writes disabled", disabled.w, "a.txt", action.CodeWriteDisabled},
		{"writes disabled even for bad paths", disabled.w, "../x", action.CodeWriteDisabled},
		{"ordinary file allowed", af.w, "dir/new.txt", action.CodeNone},
		{"symlink inside allowed", af.w, "ok_link", action.CodeNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			af.watch.events()
			_, err := tc.w.checkWritePath(tc.path)
			if got := codeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			af.watch.assertUntouched(t)
			af.assertNoLeak(t, nil, err)
		})
	}
}
