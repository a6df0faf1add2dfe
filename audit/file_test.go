package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenJSONLRefusesSymlink plants a symbolic link at the log's path, as
// code in the workspace did when the log lived there: opening (and
// verifying) must fail, naming the link, and the link's target must be
// neither written nor created.
func TestOpenJSONLRefusesSymlink(t *testing.T) {
	const sentinel = "outside file: must stay as it is\n"
	cases := []struct {
		name string
		// plant makes what sits at path; it returns the file outside that
		// must stay unchanged ("" content: must not exist afterwards).
		plant func(t *testing.T, dir, path string) (target, content string)
	}{
		{"link to an existing file", func(t *testing.T, dir, path string) (string, string) {
			target := writeOutside(t, dir, "victim.txt", sentinel)
			symlink(t, target, path)
			return target, sentinel
		}},
		{"link to an existing audit log", func(t *testing.T, dir, path string) (string, string) {
			other, lines := writeLog(t, 2)
			symlink(t, other, path)
			return other, string(join(lines...))
		}},
		{"dangling link", func(t *testing.T, dir, path string) (string, string) {
			target := filepath.Join(dir, "outside", "created.jsonl")
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, target, path)
			return target, ""
		}},
		{"relative link", func(t *testing.T, dir, path string) (string, string) {
			target := writeOutside(t, dir, "rel.txt", sentinel)
			symlink(t, "../outside/rel.txt", path)
			return target, sentinel
		}},
		{"chain of links", func(t *testing.T, dir, path string) (string, string) {
			target := writeOutside(t, dir, "end.txt", sentinel)
			mid := filepath.Join(dir, "outside", "mid")
			symlink(t, target, mid)
			symlink(t, mid, path)
			return target, sentinel
		}},
		{"link to a directory", func(t *testing.T, dir, path string) (string, string) {
			target := filepath.Join(dir, "outside", "d")
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			symlink(t, target, path)
			return filepath.Join(target, "audit.jsonl"), ""
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "state"), 0o700); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, "state", "audit.jsonl")
			target, content := tc.plant(t, dir, path)

			l, err := OpenJSONL(path, WithKey(testKey))
			if err == nil {
				l.Append(context.Background(), map[string]any{"kind": "pre_action"}, true)
				l.Close()
				t.Fatal("OpenJSONL opened a log through a symbolic link")
			}
			if !errors.Is(err, ErrNotLogFile) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), path) {
				t.Errorf("error %q: want ErrNotLogFile naming the link at %s", err, path)
			}
			if _, err := Open(context.Background(), path, "x"); !errors.Is(err, ErrNotLogFile) {
				t.Errorf("Open: %v, want ErrNotLogFile", err)
			}
			if _, err := VerifyJSONLFile(context.Background(), path); !errors.Is(err, ErrNotLogFile) {
				t.Errorf("VerifyJSONLFile: %v, want ErrNotLogFile", err)
			}
			assertUntouched(t, target, content)
			if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link at %s was replaced: %v", path, err)
			}
		})
	}
}

// TestOpenJSONLThroughLinkedDirectory: a link above the log is followed (it
// is CheckOutside's job to refuse one into the workspace), and the log is
// created where it leads with mode 0600.
func TestOpenJSONLThroughLinkedDirectory(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	symlink(t, real, filepath.Join(dir, "state"))
	l, err := OpenJSONL(filepath.Join(dir, "state", "audit.jsonl"), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), "x", true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	fi, err := os.Lstat(filepath.Join(real, "audit.jsonl"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log in the linked directory: %v %v", fi, err)
	}
}

func writeOutside(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, "outside", name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// assertUntouched checks that the file at p holds content, or does not
// exist when content is "".
func assertUntouched(t *testing.T, p, content string) {
	t.Helper()
	got, err := os.ReadFile(p)
	if content == "" {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created (%q, %v)", p, got, err)
		}
		return
	}
	if err != nil || string(got) != content {
		t.Errorf("%s changed: %q, %v; want %q", p, got, err, content)
	}
}
