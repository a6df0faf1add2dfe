package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

func TestPreviewWritesAndRunsNothing(t *testing.T) {
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

	p, err := w.Preview(ctx, action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": "one\nthree\n"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff, _ := p["diff"].(string); !strings.Contains(diff, "-two") || !strings.Contains(diff, "+three") {
		t.Fatalf("patch preview diff: %v", p["diff"])
	}
	if b, _ := os.ReadFile(filepath.Join(root, "f.txt")); string(b) != "one\ntwo\n" {
		t.Fatal("preview wrote the file")
	}

	p, err = w.Preview(ctx, action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "ls -la"}})
	if err != nil {
		t.Fatal(err)
	}
	if argv, _ := p["argv"].([]string); len(argv) != 2 || argv[0] != "ls" {
		t.Fatalf("command preview argv: %#v", p["argv"])
	}

	_, err = w.Preview(ctx, action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "ls; rm -rf /"}})
	if action.CodeOf(err) != action.CodeCommandNotAllowed && action.CodeOf(err) != action.CodeArgumentNotAllowed {
		t.Fatalf("metacharacter preview: %v", err)
	}
	_, err = w.Preview(ctx, action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "../x", "content": "x"}})
	if action.CodeOf(err) != action.CodePathOutsideRoot {
		t.Fatalf("escape preview: %v", err)
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
