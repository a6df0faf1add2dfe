package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// fixture is a workspace root next to an "outside" directory that holds a
// sentinel file. Nothing any workspace action returns may contain the
// sentinel's content.
type fixture struct {
	w        *Workspace
	root     string // absolute, symlinks resolved
	outside  string // absolute directory beside root
	secret   string // absolute path of the sentinel file
	sentinel string // its content
}

const sentinelText = "SENTINEL-7f3a9c-outside-the-root"

// newFixture builds a root with files (path -> content; a path ending in
// "/" makes a directory) and an outside directory with the sentinel.
func newFixture(t testing.TB, opts Options, files map[string]string) *fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte(sentinelText+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := New(root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &fixture{w: w, root: root, outside: outside, secret: secret, sentinel: sentinelText}
}

// run runs one action and returns its payload and error.
func (f *fixture) run(t testing.TB, name string, in map[string]any) (map[string]any, error) {
	t.Helper()
	return f.w.Run(context.Background(), action.Action{Name: name, Input: in})
}

// mustRun runs one action that must succeed.
func (f *fixture) mustRun(t testing.TB, name string, in map[string]any) map[string]any {
	t.Helper()
	out, err := f.run(t, name, in)
	if err != nil {
		t.Fatalf("%s %v: %v", name, in, err)
	}
	return out
}

// assertNoLeak fails if the sentinel appears in the payload or the error.
func (f *fixture) assertNoLeak(t testing.TB, out map[string]any, err error) {
	t.Helper()
	b, _ := json.Marshal(out)
	if strings.Contains(string(b), f.sentinel) {
		t.Fatalf("sentinel leaked into payload: %s", b)
	}
	if err != nil && strings.Contains(err.Error(), f.sentinel) {
		t.Fatalf("sentinel leaked into error: %v", err)
	}
	got, rerr := os.ReadFile(f.secret)
	if rerr != nil || string(got) != f.sentinel+"\n" {
		t.Fatalf("sentinel file changed: %q, %v", got, rerr)
	}
}

// entryPaths returns the "path" of every list entry.
func entryPaths(out map[string]any) []string {
	var ps []string
	for _, e := range out["entries"].(action.Entries) {
		ps = append(ps, e.Path)
	}
	return ps
}

// matchKeys returns "path:line:column" for every search match.
func matchKeys(out map[string]any) []string {
	var ks []string
	for _, m := range out["matches"].([]any) {
		mm := m.(map[string]any)
		ks = append(ks, mm["path"].(string)+":"+itoa(mm["line"].(int))+":"+itoa(mm["column"].(int)))
	}
	return ks
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func codeOf(err error) action.Code { return action.CodeOf(err) }

func asActionError(err error, target **action.Error) bool { return errors.As(err, target) }
