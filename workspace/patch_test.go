package workspace_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace"
)

// patchRoot makes a workspace over a fresh directory holding files.
func patchRoot(t testing.TB, files map[string]string, write bool) (*workspace.Workspace, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "root")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := workspace.DefaultOptions()
	opts.WriteEnabled = write
	opts.Sandbox = "off"
	w, err := workspace.New(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir
}

// snapshot reads every file under dir (symlinks as "-> target").
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		case d.IsDir():
			if rel != "." {
				out[rel+"/"] = ""
			}
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			diffs = append(diffs, "missing "+k)
		} else if g != v {
			diffs = append(diffs, "changed "+k+": "+quoteShort(g))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "extra "+k)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Errorf("tree differs:\n%s", strings.Join(diffs, "\n"))
	}
}

func quoteShort(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}

func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func run(w *workspace.Workspace, name string, in map[string]any) (map[string]any, error) {
	return w.Run(context.Background(), action.Action{Name: name, Input: in})
}

const mainGo = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"

func TestProposePatchWritesNothing(t *testing.T) {
	w, dir := patchRoot(t, map[string]string{"main.go": mainGo}, true)
	before := snapshot(t, dir)
	out, err := run(w, "workspace_propose_patch", map[string]any{
		"path": "main.go", "content": strings.Replace(mainGo, "hi", "hello", 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, snapshot(t, dir), before)
	wantDiff := "--- a/main.go\n+++ b/main.go\n@@ -1,5 +1,5 @@\n package main\n \n func main() {\n-\tprintln(\"hi\")\n+\tprintln(\"hello\")\n }\n"
	if out["diff"] != wantDiff || out["format"] != "content" || out["applied"] != false {
		t.Fatalf("payload = %#v", out)
	}
	f := out["files"].([]any)[0].(map[string]any)
	if f["op"] != "modify" || f["added"] != 1 || f["removed"] != 1 || f["stage"] != "exact" ||
		f["sha256_before"] != hexSum(mainGo) || f["sha256_after"] != hexSum(strings.Replace(mainGo, "hi", "hello", 1)) {
		t.Fatalf("file = %#v", f)
	}
}

func TestApplyPatch(t *testing.T) {
	crlf := "one\r\ntwo\r\nthree\r\n"
	cases := []struct {
		name  string
		files map[string]string
		in    map[string]any
		want  map[string]string // changed or new files; "" value = deleted
		ops   []string
	}{
		{name: "content-modify-keeps-crlf", files: map[string]string{"a.txt": crlf},
			in:   map[string]any{"path": "a.txt", "content": "one\nTWO\nthree\n"},
			want: map[string]string{"a.txt": "one\r\nTWO\r\nthree\r\n"}, ops: []string{"modify"}},
		{name: "content-create-in-new-dir", files: map[string]string{},
			in:   map[string]any{"path": "x/y/new.txt", "content": "new\n"},
			want: map[string]string{"x/": "", "x/y/": "", "x/y/new.txt": "new\n"}, ops: []string{"create"}},
		{name: "unified-with-path-bare-hunk", files: map[string]string{"main.go": mainGo},
			in:   map[string]any{"path": "main.go", "patch": "@@ -4 +4 @@\n-\tprintln(\"hi\")\n+\tprintln(\"bye\")\n"},
			want: map[string]string{"main.go": strings.Replace(mainGo, "hi", "bye", 1)}, ops: []string{"modify"}},
		{name: "path-with-creating-patch", files: map[string]string{},
			in:   map[string]any{"path": "new.txt", "patch": "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n"},
			want: map[string]string{"new.txt": "hi\n"}, ops: []string{"create"}},
		{name: "patch-crlf-file-lf-patch", files: map[string]string{"a.txt": crlf},
			in:   map[string]any{"patch": "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,4 @@\n one\n-two\n+2\n+2.5\n three\n"},
			want: map[string]string{"a.txt": "one\r\n2\r\n2.5\r\nthree\r\n"}, ops: []string{"modify"}},
		{name: "git-create-delete-rename", files: map[string]string{"old.txt": "a\nb\n", "gone.txt": "x\n"},
			in: map[string]any{"patch": "diff --git a/old.txt b/dir/new.txt\nsimilarity index 80%\nrename from old.txt\nrename to dir/new.txt\n--- a/old.txt\n+++ b/dir/new.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n" +
				"diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n" +
				"diff --git a/made.txt b/made.txt\nnew file mode 100644\n--- /dev/null\n+++ b/made.txt\n@@ -0,0 +1 @@\n+made\n"},
			want: map[string]string{"old.txt": "", "gone.txt": "", "dir/": "", "dir/new.txt": "a\nB\n", "made.txt": "made\n"},
			ops:  []string{"rename", "delete", "create"}},
		{name: "envelope-two-sections-same-file", files: map[string]string{"main.go": mainGo},
			in:   map[string]any{"patch": "*** Begin Patch\n*** Update File: main.go\n@@\n-package main\n+package app\n*** Update File: main.go\n@@\n-\tprintln(\"hi\")\n+\tprintln(\"yo\")\n*** End Patch\n"},
			want: map[string]string{"main.go": "package app\n\nfunc main() {\n\tprintln(\"yo\")\n}\n"}, ops: []string{"modify"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := patchRoot(t, tc.files, true)
			want := snapshot(t, dir)
			for k, v := range tc.want {
				if v == "" && !strings.HasSuffix(k, "/") {
					delete(want, k)
				} else {
					want[k] = v
				}
			}
			prop, err := run(w, "workspace_propose_patch", tc.in)
			if err != nil {
				t.Fatalf("propose: %v", err)
			}
			out, err := run(w, "workspace_apply_patch", tc.in)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if out["applied"] != true || out["diff"] != prop["diff"] {
				t.Errorf("apply payload differs from the proposal or not applied: %#v", out)
			}
			var ops []string
			for _, f := range out["files"].([]any) {
				ops = append(ops, f.(map[string]any)["op"].(string))
			}
			if strings.Join(ops, ",") != strings.Join(tc.ops, ",") {
				t.Errorf("ops = %v, want %v", ops, tc.ops)
			}
			sameTree(t, snapshot(t, dir), want)
		})
	}
}

func TestApplyPatchPreservesMode(t *testing.T) {
	w, dir := patchRoot(t, map[string]string{"run.sh": "#!/bin/sh\necho a\n"}, true)
	if err := os.Chmod(filepath.Join(dir, "run.sh"), 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := run(w, "workspace_apply_patch", map[string]any{"path": "run.sh", "content": "#!/bin/sh\necho b\n"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o750 {
		t.Fatalf("mode = %v, want 0750", fi.Mode().Perm())
	}
	// A git "new mode" line changes it.
	if _, err := run(w, "workspace_apply_patch", map[string]any{"patch": "diff --git a/run.sh b/run.sh\nold mode 100750\nnew mode 100755\n"}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "run.sh")); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode after new mode = %v, want 0755", fi.Mode().Perm())
	}
}

// TestApplyPatchAllOrNothing: when the second file of a patch fails, the
// first is unchanged and nothing is left behind.
func TestApplyPatchAllOrNothing(t *testing.T) {
	files := map[string]string{"a.txt": "a1\na2\na3\n", "b.txt": "b1\nb2\nb3\n"}
	cases := []struct {
		name  string
		patch string
		code  action.Code
	}{
		{"second-hunk-does-not-match", "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a1\n-a2\n+A2\n a3\n--- a/b.txt\n+++ b/b.txt\n@@ -1,3 +1,3 @@\n b1\n-XX\n+B2\n b3\n", action.CodePatchFailed},
		{"second-file-missing", "--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n a1\n-a2\n+A2\n a3\n--- a/c.txt\n+++ b/c.txt\n@@ -1 +1 @@\n-c\n+C\n", action.CodeNotFound},
		{"second-file-outside-root", "*** Begin Patch\n*** Add File: new/x.txt\n+x\n*** Update File: a.txt\n@@\n-a2\n+A2\n*** Add File: ../evil.txt\n+evil\n*** End Patch\n", action.CodePathOutsideRoot},
		{"second-file-create-exists", "*** Begin Patch\n*** Add File: new/x.txt\n+x\n*** Add File: b.txt\n+b\n*** End Patch\n", action.CodePatchFailed},
		{"second-file-absolute", "--- a/a.txt\n+++ b/a.txt\n@@ -2 +2 @@\n-a2\n+A2\n--- /etc/hosts\n+++ /etc/hosts\n@@ -1 +1 @@\n-x\n+y\n", action.CodePathOutsideRoot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := patchRoot(t, files, true)
			outside := snapshot(t, filepath.Dir(dir))
			_, err := run(w, "workspace_apply_patch", map[string]any{"patch": tc.patch})
			if got := action.CodeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			sameTree(t, snapshot(t, filepath.Dir(dir)), outside)
		})
	}
}

func TestApplyPatchRefusesSymlinksAndProtectedPaths(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		in    map[string]any
		code  action.Code
	}{
		{"symlink-file-target", func(t *testing.T, dir string) {
			must(t, os.Symlink("real.txt", filepath.Join(dir, "link.txt")))
		}, map[string]any{"patch": "--- a/link.txt\n+++ b/link.txt\n@@ -1 +1 @@\n-real\n+fake\n"}, action.CodePathOutsideRoot},
		{"symlink-file-target-with-path", func(t *testing.T, dir string) {
			must(t, os.Symlink("real.txt", filepath.Join(dir, "link.txt")))
		}, map[string]any{"path": "link.txt", "content": "fake\n"}, action.CodePathOutsideRoot},
		{"symlink-dir-parent", func(t *testing.T, dir string) {
			must(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
			must(t, os.Symlink("d", filepath.Join(dir, "ld")))
		}, map[string]any{"path": "ld/new.txt", "content": "x\n"}, action.CodePathOutsideRoot},
		{"symlink-leaving-root", func(t *testing.T, dir string) {
			must(t, os.Symlink(filepath.Dir(dir), filepath.Join(dir, "up")))
		}, map[string]any{"patch": "*** Begin Patch\n*** Add File: up/evil.txt\n+evil\n*** End Patch\n"}, action.CodePathOutsideRoot},
		{"dotdot-header", nil, map[string]any{"patch": "--- a/../real.txt\n+++ b/../real.txt\n@@ -1 +1 @@\n-real\n+x\n"}, action.CodePathOutsideRoot},
		{"absolute-header", nil, map[string]any{"patch": "--- /tmp/x\n+++ /tmp/x\n@@ -1 +1 @@\n-real\n+x\n"}, action.CodePathOutsideRoot},
		{"absolute-header-with-path", nil, map[string]any{"path": "real.txt", "patch": "--- /etc/passwd\n+++ /etc/passwd\n@@ -1 +1 @@\n-real\n+x\n"}, action.CodePathOutsideRoot},
		{"git-dir", func(t *testing.T, dir string) {
			must(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[core]\n"), 0o644))
		}, map[string]any{"patch": "*** Begin Patch\n*** Update File: .git/config\n@@\n-[core]\n+[core] hooksPath=/tmp\n*** End Patch\n"}, action.CodePathOutsideRoot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := patchRoot(t, map[string]string{"real.txt": "real\n"}, true)
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			before := snapshot(t, filepath.Dir(dir))
			for _, name := range []string{"workspace_propose_patch", "workspace_apply_patch"} {
				_, err := run(w, name, tc.in)
				if got := action.CodeOf(err); got != tc.code {
					t.Errorf("%s: code = %q (%v), want %q", name, got, err, tc.code)
				}
			}
			sameTree(t, snapshot(t, filepath.Dir(dir)), before)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestApplyPatchErrors(t *testing.T) {
	rep := strings.Repeat("x := 1\ny := 2\nz := 3\n", 5)
	cases := []struct {
		name  string
		write bool
		in    map[string]any
		code  action.Code
		check func(t *testing.T, e *action.Error)
	}{
		{"stale-expected-sha256", true, map[string]any{"path": "main.go", "content": "x", "expected_sha256": hexSum("other")}, action.CodeStalePreview, nil},
		{"bad-expected-sha256", true, map[string]any{"path": "main.go", "content": "x", "expected_sha256": "zz"}, action.CodeInvalidInput, nil},
		{"content-and-patch", true, map[string]any{"path": "main.go", "content": "x", "patch": "y"}, action.CodeInvalidInput, nil},
		{"neither", true, map[string]any{"path": "main.go"}, action.CodeInvalidInput, nil},
		{"fuzz-out-of-range", true, map[string]any{"path": "main.go", "content": "x", "fuzz": 1.5}, action.CodeInvalidInput, nil},
		{"strip-negative", true, map[string]any{"patch": "@@ -1 +1 @@\n-a\n+b\n", "strip": -1}, action.CodeInvalidInput, nil},
		{"malformed-patch", true, map[string]any{"patch": "this is not a patch"}, action.CodeInvalidInput, nil},
		{"write-disabled", false, map[string]any{"path": "main.go", "content": "x"}, action.CodeWriteDisabled, nil},
		{"missing-file", true, map[string]any{"patch": "--- a/nope.go\n+++ b/nope.go\n@@ -1 +1 @@\n-a\n+b\n"}, action.CodeNotFound, nil},
		{"missing-file-envelope", true, map[string]any{"patch": "*** Begin Patch\n*** Update File: nope.go\n@@\n-a\n+b\n*** End Patch\n"}, action.CodeNotFound, nil},
		{"ambiguous-hunk", true, map[string]any{"path": "rep.txt", "patch": "@@ -4,3 +4,3 @@\n x := 1\n-y := 2\n+y := 3\n z := 3\n"}, action.CodePatchFailed,
			func(t *testing.T, e *action.Error) {
				if e.Payload["ambiguous"] != true || len(e.Payload["places"].([]any)) != 5 || !strings.Contains(e.Message, "ambiguous") {
					t.Errorf("payload = %#v, message %q", e.Payload, e.Message)
				}
			}},
		{"removed-line-absent", true, map[string]any{"path": "main.go", "patch": "@@ -3,3 +3,3 @@\n func main() {\n-\tprintln(\"bye\")\n+\tprintln(\"x\")\n }\n"}, action.CodePatchFailed,
			func(t *testing.T, e *action.Error) {
				if e.Payload["closest_line"] != 3 || !strings.Contains(e.Message, `"\tprintln(\"hi\")"`) {
					t.Errorf("payload = %#v, message %q", e.Payload, e.Message)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := patchRoot(t, map[string]string{"main.go": mainGo, "rep.txt": rep}, tc.write)
			before := snapshot(t, dir)
			_, err := run(w, "workspace_apply_patch", tc.in)
			if got := action.CodeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
			var e *action.Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *action.Error: %T", err)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
			sameTree(t, snapshot(t, dir), before)
		})
	}
}

func TestApplyPatchExpectedSHA256Matches(t *testing.T) {
	w, dir := patchRoot(t, map[string]string{"main.go": mainGo}, true)
	if _, err := run(w, "workspace_apply_patch", map[string]any{"path": "main.go", "content": "package main\n", "expected_sha256": strings.ToUpper(hexSum(mainGo))}); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, dir)["main.go"]; got != "package main\n" {
		t.Fatalf("main.go = %q", got)
	}
}

// TestApplyPlanStale: a plan is applied only to the files it was made
// from.
func TestApplyPlanStale(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		in     map[string]any
		change func(dir string) error
	}{
		{"modified-file-changed", map[string]any{"path": "main.go", "content": "x\n"},
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "main.go"), []byte("changed\n"), 0o644) }},
		{"modified-file-deleted", map[string]any{"path": "main.go", "content": "x\n"},
			func(dir string) error { return os.Remove(filepath.Join(dir, "main.go")) }},
		{"created-file-appeared", map[string]any{"path": "new.go", "content": "x\n"},
			func(dir string) error { return os.WriteFile(filepath.Join(dir, "new.go"), []byte("mine\n"), 0o644) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := patchRoot(t, map[string]string{"main.go": mainGo}, true)
			plan, err := w.PlanPatch(ctx, tc.in)
			if err != nil {
				t.Fatal(err)
			}
			must(t, tc.change(dir))
			before := snapshot(t, dir)
			err = w.ApplyPlan(ctx, plan)
			if action.CodeOf(err) != action.CodeStalePreview {
				t.Fatalf("err = %v, want stale_preview", err)
			}
			sameTree(t, snapshot(t, dir), before)
		})
	}
	t.Run("unchanged-applies", func(t *testing.T) {
		w, dir := patchRoot(t, map[string]string{"main.go": mainGo}, true)
		plan, err := w.PlanPatch(ctx, map[string]any{"path": "main.go", "content": "x\n"})
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Files) != 1 || plan.Files[0].SHA256Before != hexSum(mainGo) || plan.Files[0].SHA256After != hexSum("x\n") {
			t.Fatalf("plan = %+v", plan)
		}
		must(t, w.ApplyPlan(ctx, plan))
		if snapshot(t, dir)["main.go"] != "x\n" {
			t.Fatal("not written")
		}
	})
}

func TestPatchPlanSameChange(t *testing.T) {
	ctx := context.Background()
	w, dir := patchRoot(t, map[string]string{"main.go": mainGo}, true)
	in := map[string]any{"patch": "--- a/main.go\n+++ b/main.go\n@@ -4 +4 @@\n-\tprintln(\"hi\")\n+\tprintln(\"yo\")\n"}
	p1, err := w.PlanPatch(ctx, in)
	must(t, err)
	p2, err := w.PlanPatch(ctx, in)
	must(t, err)
	if !p1.SameChange(p2) {
		t.Fatal("two plans of the same input on the same files differ")
	}
	must(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainGo+"// more\n"), 0o644))
	p3, err := w.PlanPatch(ctx, in)
	must(t, err)
	if p1.SameChange(p3) {
		t.Fatal("a plan made after the file changed is the same change")
	}
}

// TestApplyPatchConcurrent: patches to one file applied at once from many
// goroutines all land; none is lost to another's write.
func TestApplyPatchConcurrent(t *testing.T) {
	var lines []string
	for i := 0; i < 12; i++ {
		lines = append(lines, "line "+string(rune('a'+i)))
	}
	w, dir := patchRoot(t, map[string]string{"f.txt": strings.Join(lines, "\n") + "\n"}, true)
	errs := make(chan error, len(lines))
	for i := range lines {
		go func() {
			p := "--- a/f.txt\n+++ b/f.txt\n@@ @@\n-" + lines[i] + "\n+" + strings.ToUpper(lines[i]) + "\n"
			_, err := run(w, "workspace_apply_patch", map[string]any{"patch": p})
			errs <- err
		}()
	}
	for range lines {
		must(t, <-errs)
	}
	got := snapshot(t, dir)["f.txt"]
	if want := strings.ToUpper(strings.Join(lines, "\n")) + "\n"; got != want {
		t.Fatalf("f.txt = %q, want %q", got, want)
	}
}
