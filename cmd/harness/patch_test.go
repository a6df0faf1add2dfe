package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const patchCLIMain = "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"

const patchCLIGood = `--- a/main.go
+++ b/main.go
@@ -3,3 +3,3 @@
 func main() {
-	println("hi")
+	println("hello")
 }
--- /dev/null
+++ b/docs/NOTES.md
@@ -0,0 +1 @@
+notes
`

// patchCLIRepeated changes the second "y" of rep.txt, whose lines repeat.
const patchCLIRepeated = `--- a/rep.txt
+++ b/rep.txt
@@ -3,2 +3,2 @@
 x
-y
+Y
`

const patchCLIRep = "x\ny\nx\ny\n"

const patchCLIBad = `--- a/main.go
+++ b/main.go
@@ -3,3 +3,3 @@
 func main() {
-	println("bye")
+	println("hello")
 }
`

// TestPatchCommand runs harness patch end to end and compares its output
// with golden files (go test ./cmd/harness -run TestPatchCommand -update).
func TestPatchCommand(t *testing.T) {
	cases := []struct {
		name      string
		args      func(root, patchFile string) []string
		patch     string
		stdin     bool
		wantCode  int
		wantWrite bool
	}{
		{"apply", func(r, p string) []string { return []string{"patch", "--root", r, p} }, patchCLIGood, false, exitOK, true},
		{"apply-stdin-flags-after", func(r, p string) []string { return []string{"patch", "-", "--root", r} }, patchCLIGood, true, exitOK, true},
		{"dry-run", func(r, p string) []string { return []string{"patch", "--dry-run", "--diff", "--root", r, p} }, patchCLIGood, false, exitOK, false},
		{"hunk-fails", func(r, p string) []string { return []string{"patch", "--root", r, p} }, patchCLIBad, false, exitActionError, false},
		{"outside-root", func(r, p string) []string { return []string{"patch", "--root", r, p} }, "--- a/../x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n", false, exitBlocked, false}, // SPEC 4: a refusal exits 3
		{"two-files", func(r, p string) []string { return []string{"patch", "--root", r, p, p} }, patchCLIGood, false, exitUsage, false},
		{"bad-flag", func(r, p string) []string { return []string{"patch", "--nope", p} }, patchCLIGood, false, exitUsage, false},
		{"bad-fuzz", func(r, p string) []string { return []string{"patch", "--fuzz", "2", "--root", r, p} }, patchCLIGood, false, exitUsage, false},
		{"ambiguous-refused", func(r, p string) []string { return []string{"patch", "--root", r, p} }, patchCLIRepeated, false, exitActionError, false},
		{"ambiguous-trusted", func(r, p string) []string { return []string{"patch", "--trust-line-numbers", "--root", r, p} }, patchCLIRepeated, false, exitOK, true},
		{"config-writes-disabled", func(r, p string) []string {
			cfg := filepath.Join(filepath.Dir(r), "cfg.yaml")
			_ = os.WriteFile(cfg, []byte("harness:\n  workspace:\n    root: "+r+"\n    write-enabled: false\n"), 0o600)
			return []string{"patch", "--config", cfg, p}
		}, patchCLIGood, false, exitBlocked, false},
		{"config-writes-disabled-dry-run", func(r, p string) []string {
			cfg := filepath.Join(filepath.Dir(r), "cfg.yaml")
			_ = os.WriteFile(cfg, []byte("harness:\n  workspace:\n    root: "+r+"\n    write-enabled: false\n"), 0o600)
			return []string{"patch", "--config", cfg, "--dry-run", p}
		}, patchCLIGood, false, exitOK, false},
		{"bad-config", func(r, p string) []string { return []string{"patch", "--config", filepath.Join(r, "missing.yaml"), p} }, patchCLIGood, false, exitUsage, false},
		{"help", func(r, p string) []string { return []string{"patch", "--help"} }, "", false, exitOK, false},
		{"empty-stdin", func(r, p string) []string { return []string{"patch", "--root", r} }, "", true, exitUsage, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			root := filepath.Join(dir, "root")
			if err := os.MkdirAll(root, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "main.go"), []byte(patchCLIMain), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "rep.txt"), []byte(patchCLIRep), 0o644); err != nil {
				t.Fatal(err)
			}
			pf := filepath.Join(dir, "change.patch")
			if err := os.WriteFile(pf, []byte(tc.patch), 0o644); err != nil {
				t.Fatal(err)
			}
			var in string
			if tc.stdin {
				in = tc.patch
			}
			var out, errb bytes.Buffer
			code := dispatch(context.Background(), tc.args(root, pf), stdio{in: strings.NewReader(in), out: &out, err: &errb})
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, out.String(), errb.String())
			}
			got, _ := os.ReadFile(filepath.Join(root, "main.go"))
			rep, _ := os.ReadFile(filepath.Join(root, "rep.txt"))
			_, notesErr := os.Stat(filepath.Join(root, "docs", "NOTES.md"))
			written := string(got) != patchCLIMain || string(rep) != patchCLIRep || notesErr == nil
			if written != tc.wantWrite {
				t.Fatalf("written = %v, want %v", written, tc.wantWrite)
			}
			if tc.name == "ambiguous-trusted" && string(rep) != "x\ny\nx\nY\n" {
				t.Fatalf("rep.txt = %q", rep)
			}
			text := strings.ReplaceAll("exit: "+itoaPatch(code)+"\n-- stdout --\n"+out.String()+"-- stderr --\n"+errb.String(), dir, "$TMP")
			golden := filepath.Join("testdata", "patch_"+tc.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/harness -run TestPatchCommand -update)", err)
			}
			if string(want) != text {
				t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", golden, text, want)
			}
		})
	}
}

func itoaPatch(n int) string { return string(rune('0' + n)) }
