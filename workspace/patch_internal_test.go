package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// TestApplyPlanRollsBack fails each commit step of a multi-file plan in
// turn and checks that the tree is left exactly as it was.
func TestApplyPlanRollsBack(t *testing.T) {
	files := map[string]string{"a.txt": "a\n", "old.txt": "o\n", "gone.txt": "g\n"}
	patchText := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+A\n" +
		"diff --git a/old.txt b/sub/new.txt\nrename from old.txt\nrename to sub/new.txt\n" +
		"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-g\n" +
		"diff --git a/made.txt b/made.txt\nnew file mode 100644\n--- /dev/null\n+++ b/made.txt\n@@ -0,0 +1 @@\n+m\n"
	steps := []string{"a.txt", "sub/new.txt", "made.txt", "old.txt", "gone.txt"}
	for _, failAt := range steps {
		t.Run("fail-at-"+failAt, func(t *testing.T) {
			opts := DefaultOptions()
			opts.Sandbox = "off"
			fx := newFixture(t, opts, files)
			w, dir := fx.w, fx.root
			before := listTreeForPatch(t, dir)
			var seen []string
			testHookCommitStep = func(rel string) error {
				seen = append(seen, rel)
				if rel == failAt {
					return errors.New("injected failure")
				}
				return nil
			}
			defer func() { testHookCommitStep = nil }()
			_, err := w.Run(context.Background(), action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": patchText}})
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("err = %v, want the injected failure", err)
			}
			if seen[len(seen)-1] != failAt {
				t.Fatalf("steps %v did not reach %s", seen, failAt)
			}
			if after := listTreeForPatch(t, dir); after != before {
				t.Fatalf("tree changed after rollback:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func listTreeForPatch(t *testing.T, dir string) string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		b, err := os.ReadFile(p)
		out = append(out, rel+"="+string(b)+"@"+fi.Mode().String())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
