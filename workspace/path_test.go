package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

func TestParsePath(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		rel     string
		wantDir bool
		code    action.Code
	}{
		{"empty is root", "", ".", true, ""},
		{"dot", ".", ".", true, ""},
		{"plain", "a/b.txt", "a/b.txt", false, ""},
		{"trailing slash", "a/", "a", true, ""},
		{"trailing slash dot", "a.txt/.", "a.txt", true, ""},
		{"trailing dotdot", "a/b/..", "a", true, ""},
		{"doubled slashes", "a//b", "a/b", false, ""},
		{"inner dotdot", "a/../b", "b", false, ""},
		{"dotdot to root", "a/..", ".", true, ""},
		{"dot prefix", "./a", "a", false, ""},
		{"dots in names", "...", "...", false, ""},
		{"dotdot-like name", "..a/b", "..a/b", false, ""},
		{"backslash is a name byte", `a\..\..\b`, `a\..\..\b`, false, ""},
		{"absolute", "/etc/passwd", "", false, action.CodePathOutsideRoot},
		{"double slash absolute", "//etc", "", false, action.CodePathOutsideRoot},
		{"parent", "..", "", false, action.CodePathOutsideRoot},
		{"parent slash", "../", "", false, action.CodePathOutsideRoot},
		{"leaves then returns", "a/../../root/a", "", false, action.CodePathOutsideRoot},
		{"dot parent", "./..", "", false, action.CodePathOutsideRoot},
		{"nul", "a\x00b", "", false, action.CodeInvalidInput},
		{"name of 255 bytes", strings.Repeat("n", 255), strings.Repeat("n", 255), false, ""},
		{"name of 256 bytes", strings.Repeat("n", 256), "", false, action.CodeInvalidInput},
		{"path of 4097 bytes", strings.Repeat("a/", 2048) + "b", "", false, action.CodeInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rel, wantDir, err := parsePath(tc.in)
			if got := action.CodeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			if err == nil && (rel != tc.rel || wantDir != tc.wantDir) {
				t.Fatalf("parsePath(%q) = %q, %v; want %q, %v", tc.in, rel, wantDir, tc.rel, tc.wantDir)
			}
		})
	}
}

func TestResolveInRoot(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{"a/b.txt": "x", ".git/config": "y"})
	for name, target := range map[string]string{"l1": "a", "l2": "l1/b.txt", "g": "a/../.git", "abs": "/etc", "up": "a/../../x"} {
		if err := os.Symlink(target, filepath.Join(f.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, in, want string
		code           action.Code
	}{
		{"plain", "a/b.txt", "a/b.txt", ""},
		{"dir link", "l1/b.txt", "a/b.txt", ""},
		{"chain", "l2", "a/b.txt", ""},
		{"into git", "g/config", ".git/config", ""},
		{"missing tail kept", "l1/new/x", "a/new/x", ""},
		{"absolute target", "abs/passwd", "", action.CodePathOutsideRoot},
		{"climbing target", "up", "", action.CodePathOutsideRoot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.w.resolveInRoot(tc.in)
			if action.CodeOf(err) != tc.code || (err == nil && got != tc.want) {
				t.Fatalf("resolveInRoot(%q) = %q, %v; want %q, %q", tc.in, got, err, tc.want, tc.code)
			}
		})
	}
}

// FuzzCheckPath feeds arbitrary paths to checkPath, checkWritePath and the
// read and list actions of a root holding symlinks that lead outside. It
// must never panic, never accept a path that is not local, never return
// the sentinel, and an accepted path must resolve inside the root.
func FuzzCheckPath(f *testing.F) {
	for _, seed := range []string{"", ".", "a.txt", "../x", "/etc/passwd", "esc/secret.txt", "in/../esc/../a.txt",
		"a.txt/.", "loop", ".git/config", "gitlink/x", "a\x00b", "sub//../..", "esc/", "x/../../.."} {
		f.Add(seed)
	}
	fx := newFixture(f, DefaultOptions(), map[string]string{"a.txt": "inside\n", "in/b.txt": "b\n", ".git/config": "c\n"})
	for name, target := range map[string]string{"esc": "../outside", "escabs": fx.outside, "loop": "loop", "gitlink": ".git", "in/up": "../../outside/secret.txt"} {
		if err := os.Symlink(target, filepath.Join(fx.root, name)); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, p string) {
		rel, err := fx.w.checkPath(p)
		if err == nil {
			if rel != "." && !filepath.IsLocal(rel) {
				t.Fatalf("checkPath(%q) accepted non-local %q", p, rel)
			}
			if real, err := filepath.EvalSymlinks(filepath.Join(fx.root, rel)); err == nil {
				if r, err := filepath.Rel(fx.root, real); err != nil || !filepath.IsLocal(r) && r != "." {
					t.Fatalf("checkPath(%q) = %q resolves outside the root to %q", p, rel, real)
				}
			}
		} else if c := action.CodeOf(err); c != action.CodePathOutsideRoot && c != action.CodeInvalidInput {
			t.Fatalf("checkPath(%q): unexpected code %q (%v)", p, c, err)
		}
		if wrel, err := fx.w.checkWritePath(p); err == nil {
			if err := refuseProtected(wrel); err != nil {
				t.Fatalf("checkWritePath(%q) accepted protected %q", p, wrel)
			}
		}
		for _, name := range []string{"workspace_read_file", "workspace_list_files"} {
			out, err := fx.w.Run(context.Background(), action.Action{Name: name, Input: map[string]any{"path": p}})
			fx.assertNoLeak(t, out, err)
			if c := action.CodeOf(err); c == action.CodeInternal {
				t.Fatalf("%s(%q): internal error %v", name, p, err)
			}
		}
	})
}

func TestStatNoFollow(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{"a.txt": "x"})
	for name, target := range map[string]string{"in": "a.txt", "out": "../outside/secret.txt", "outdir": "../outside"} {
		if err := os.Symlink(target, filepath.Join(f.root, name)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, path string
		symlink    bool
		code       action.Code
	}{
		{"regular", "a.txt", false, ""},
		{"symlink inside", "in", true, ""},
		{"symlink outside is not followed", "out", true, ""},
		{"through outward parent", "outdir/secret.txt", false, action.CodePathOutsideRoot},
		{"missing", "nope", false, action.CodeNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fi, err := f.w.statNoFollow(tc.path)
			if action.CodeOf(err) != tc.code {
				t.Fatalf("code = %q (%v), want %q", action.CodeOf(err), err, tc.code)
			}
			if err == nil && (fi.Mode()&os.ModeSymlink != 0) != tc.symlink {
				t.Fatalf("mode = %v, symlink want %v", fi.Mode(), tc.symlink)
			}
		})
	}
}
