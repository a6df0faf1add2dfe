package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

func TestPlanWritesAndRunsNothing(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.Sandbox = SandboxOff
	w, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ctx := context.Background()

	pl, err := w.Plan(ctx, action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": "one\nthree\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff, _ := pl.Preview["diff"].(string); !strings.Contains(diff, "-two") || !strings.Contains(diff, "+three") {
		t.Fatalf("patch preview diff: %v", pl.Preview["diff"])
	}
	if len(pl.Preconditions) != 1 || pl.Preconditions[0].Path != "f.txt" || !pl.Preconditions[0].Exists || len(pl.Preconditions[0].SHA256) != 64 {
		t.Fatalf("patch preconditions: %+v", pl.Preconditions)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != "one\ntwo\n" {
		t.Fatal("plan wrote the file")
	}

	pl, err = w.Plan(ctx, action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "ls -la"}})
	if err != nil {
		t.Fatal(err)
	}
	if argv, _ := pl.Preview["argv"].([]string); len(argv) != 2 || argv[0] != "ls" {
		t.Fatalf("command preview argv: %#v", pl.Preview["argv"])
	}
	if len(pl.Preconditions) != 1 || !pl.Preconditions[0].Tree || pl.Preview["bound"] == nil {
		t.Fatalf("a command is bound to the tree, and says so: %+v %v", pl.Preconditions, pl.Preview["bound"])
	}

	_, err = w.Plan(ctx, action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "ls; rm -rf /"}})
	if action.CodeOf(err) != action.CodeCommandNotAllowed && action.CodeOf(err) != action.CodeArgumentNotAllowed {
		t.Fatalf("metacharacter plan: %v", err)
	}
	for _, a := range []action.Action{
		{Name: "workspace_apply_patch", Input: map[string]any{"path": "../x", "content": "x"}},
		{Name: "workspace_read_file", Input: map[string]any{"path": "../x"}},
		{Name: "workspace_list_files", Input: map[string]any{"path": "/etc"}},
		{Name: "workspace_search_text", Input: map[string]any{"query": "x", "path": "a/../../x"}},
	} {
		if _, err := w.Plan(ctx, a); action.CodeOf(err) != action.CodePathOutsideRoot {
			t.Errorf("%s %v: a plan of a path that will be refused must be refused: %v", a.Name, a.Input, err)
		}
	}
}

// A command's plan is bound to the files it reads as code: a Makefile (or
// any file, or .git's configuration) changed after the preview makes the
// redeemed run stale, and the changed recipe never runs.
func TestCommandPlanIsBoundToTheTree(t *testing.T) {
	if _, err := lookCommand("make"); err != nil {
		t.Skip("make is not installed")
	}
	changes := []struct {
		name   string
		change func(t *testing.T, root string)
	}{
		{"Makefile rewritten", func(t *testing.T, root string) {
			write(t, root, "Makefile", "all:\n\ttouch pwned\n")
		}},
		{"Makefile rewritten to the same size with its mtime set back", func(t *testing.T, root string) {
			p := filepath.Join(root, "Makefile")
			fi, _ := os.Stat(p)
			write(t, root, "Makefile", "all:\n\ttouch pwnd\n")
			if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
		}},
		{"an included file added", func(t *testing.T, root string) { write(t, root, "sub/inc.mk", "x") }},
		{"a file removed", func(t *testing.T, root string) { os.Remove(filepath.Join(root, "other.txt")) }},
		{".git/config changed", func(t *testing.T, root string) { write(t, root, ".git/config", "[core]\n\tpager = x\n") }},
		{"a directory renamed", func(t *testing.T, root string) { os.Rename(filepath.Join(root, "sub"), filepath.Join(root, "sub2")) }},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			write(t, root, "Makefile", "all:\n\ttouch ran\n")
			write(t, root, "other.txt", "x")
			write(t, root, "sub/keep.txt", "x")
			write(t, root, ".git/config", "[core]\n")
			opts := DefaultOptions()
			opts.Sandbox = SandboxOff
			w, err := New(root, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			a := action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "make"}}
			pl, err := w.Plan(context.Background(), a)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.checkPreconditions(context.Background(), pl.Preconditions); err != nil {
				t.Fatalf("an unchanged tree is stale: %v", err)
			}
			c.change(t, root)
			_, err = w.Run(action.WithPreconditions(context.Background(), pl.Preconditions), a)
			if action.CodeOf(err) != action.CodeStalePreview {
				t.Fatalf("want stale_preview, got %v", err)
			}
			for _, f := range []string{"ran", "pwned", "pwnd"} {
				if _, err := os.Stat(filepath.Join(root, f)); err == nil {
					t.Fatalf("the recipe ran (%s exists)", f)
				}
			}
		})
	}
}

func TestPatchPlanPreconditionsAreCheckedAtTheWrite(t *testing.T) {
	root := t.TempDir()
	write(t, root, "f.txt", "one\n")
	opts := DefaultOptions()
	opts.Sandbox = SandboxOff
	w, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": "two\n"}}
	pl, err := w.Plan(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, "f.txt", "changed by someone\n")
	_, err = w.Run(action.WithPreconditions(context.Background(), pl.Preconditions), a)
	if action.CodeOf(err) != action.CodeStalePreview {
		t.Fatalf("want stale_preview, got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != "changed by someone\n" {
		t.Fatalf("a stale apply wrote: %q", b)
	}
	// As previewed: applies.
	write(t, root, "f.txt", "one\n")
	if _, err := w.Run(action.WithPreconditions(context.Background(), pl.Preconditions), a); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != "two\n" {
		t.Fatalf("file: %q", b)
	}
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCloseRemovesCommandTempDirWithLastWorkspace(t *testing.T) {
	root := t.TempDir()
	opts := DefaultOptions()
	opts.Sandbox = SandboxOff
	w1, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w1.Run(context.Background(), action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "pwd"}}); err != nil {
		t.Fatal(err)
	}
	dir, err := privateDir(w1.Root())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("no private dir after a command: %v", err)
	}
	if err := w1.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal("closing one of two workspaces on a root removed their shared temp dir")
	}
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir left after the last Close: %v", err)
	}
}

// Nothing is left in the temporary directory: a workspace that ran no
// command makes nothing there, and the last Close removes what commands
// made.
func TestNoTemporaryDirectoryIsLeftBehind(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	removePrivateBase()
	opts := DefaultOptions()
	opts.Sandbox = SandboxOff
	for _, runCommand := range []bool{false, true} {
		root := t.TempDir()
		w, err := New(root, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Run(context.Background(), action.Action{Name: "workspace_list_files", Input: map[string]any{}}); err != nil {
			t.Fatal(err)
		}
		if runCommand {
			if _, err := w.Run(context.Background(), action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "pwd"}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Fatalf("command ran %v: left in TMPDIR: %v", runCommand, left)
		}
	}
}
