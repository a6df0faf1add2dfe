package workspace_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

func init() {
	// Another test file of this binary may own -update; share it then.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files in testdata/")
	}
}

func updatingGolden() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// renderTree prints a snapshot with contents quoted line by line, so CRLF
// and missing final newlines are visible.
func renderTree(tree map[string]string) string {
	names := make([]string, 0, len(tree))
	for n := range tree {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "== %s\n", n)
		for _, l := range strings.SplitAfter(tree[n], "\n") {
			if l != "" {
				b.WriteString(strconv.Quote(l) + "\n")
			}
		}
	}
	return b.String()
}

// TestApplyPatchGolden pins the observation payload and the resulting tree
// of workspace_apply_patch on disk (go test ./workspace -run
// TestApplyPatchGolden -update).
func TestApplyPatchGolden(t *testing.T) {
	files := map[string]string{
		"src/app.go":  "package app\n\nfunc Name() string {\n\treturn \"app\"\n}\n",
		"win.txt":     "alpha\r\nbeta\r\ngamma\r\n",
		"tail.txt":    "first\nlast",
		"old/name.md": "# Title\n\nBody.\n",
		"junk.txt":    "junk\n",
	}
	cases := []struct{ name, patch string }{
		{"git-create-delete-rename", "diff --git a/old/name.md b/docs/name.md\nsimilarity index 90%\nrename from old/name.md\nrename to docs/name.md\n--- a/old/name.md\n+++ b/docs/name.md\n@@ -1,3 +1,3 @@\n # Title\n \n-Body.\n+New body.\n" +
			"diff --git a/junk.txt b/junk.txt\ndeleted file mode 100644\n--- a/junk.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-junk\n" +
			"diff --git a/src/new.go b/src/new.go\nnew file mode 100644\n--- /dev/null\n+++ b/src/new.go\n@@ -0,0 +1 @@\n+package app\n"},
		{"crlf-and-no-trailing-newline", "--- a/win.txt\n+++ b/win.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n--- a/tail.txt\n+++ b/tail.txt\n@@ -1,2 +1,3 @@\n first\n-last\n\\ No newline at end of file\n+middle\n+last\n\\ No newline at end of file\n"},
		{"envelope-anchor-and-fuzzy", "*** Begin Patch\n*** Update File: src/app.go\n@@ func Name() string {\n-\treturn \"app\"\n+\treturn \"application\"\n }\n*** Update File: old/name.md\n@@\n # Titel\n \n-Body.\n+Text.\n*** End Patch\n"},
		{"multi-file-second-fails", "--- a/src/app.go\n+++ b/src/app.go\n@@ -4 +4 @@\n-\treturn \"app\"\n+\treturn \"x\"\n--- a/win.txt\n+++ b/win.txt\n@@ -2 +2 @@\n-delta\n+DELTA\n"},
		{"header-outside-root", "--- a/src/app.go\n+++ b/src/app.go\n@@ -4 +4 @@\n-\treturn \"app\"\n+\treturn \"x\"\n--- a/../../etc/hosts\n+++ b/../../etc/hosts\n@@ -1 +1 @@\n-a\n+b\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := patchRoot(t, files, true)
			before := snapshot(t, dir)
			out, err := run(w, "workspace_apply_patch", map[string]any{"patch": tc.patch})
			var b strings.Builder
			if err != nil {
				fmt.Fprintf(&b, "error %s: %s\n", action.CodeOf(err), action.MessageOf(err))
				sameTree(t, snapshot(t, dir), before)
			} else {
				js, _ := json.MarshalIndent(out, "", "  ")
				b.Write(js)
				b.WriteString("\n")
			}
			b.WriteString(renderTree(snapshot(t, dir)))
			golden := filepath.Join("testdata", "patch", tc.name+".golden")
			if updatingGolden() {
				must(t, os.WriteFile(golden, []byte(b.String()), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./workspace -run TestApplyPatchGolden -update)", err)
			}
			if string(want) != b.String() {
				t.Errorf("differs from %s:\n--- got\n%s\n--- want\n%s", golden, b.String(), want)
			}
		})
	}
}
