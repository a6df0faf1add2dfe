package patch_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/workspace/patch"
)

func TestDiffFormat(t *testing.T) {
	cases := []struct {
		name             string
		oldPath, newPath string
		old, new         string
		want             string
	}{
		{"unchanged", "x", "x", "a\n", "a\n", ""},
		{"modify", "x", "x", "a\nb\nc\n", "a\nB\nc\n", "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"create", "", "n.txt", "", "hi\n", "--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hi\n"},
		{"delete", "n.txt", "", "hi\n", "", "--- a/n.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-hi\n"},
		{"pure-rename", "a.txt", "b.txt", "hi\n", "hi\n", "--- a/a.txt\n+++ b/b.txt\n"},
		{"no-newline-both", "x", "x", "a\nb", "a\nc", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"newline-added", "x", "x", "a", "a\n", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
		{"crlf", "x", "x", "a\r\nb\r\n", "a\r\nc\r\n", "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n"},
		{"two-hunks", "x", "x", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n", "--- a/x\n+++ b/x\n@@ -1,3 +1,4 @@\n+0\n 1\n 2\n 3\n@@ -9,4 +10,3 @@\n 9\n 10\n 11\n-12\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := patch.Diff(tc.oldPath, tc.newPath, []byte(tc.old), []byte(tc.new))
			if got != tc.want {
				t.Fatalf("Diff =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestDiffRoundTripCorpus checks that the diffs we write apply, with our
// applier and with GNU patch, to give exactly the edited file.
func TestDiffRoundTripCorpus(t *testing.T) {
	cases := loadCorpus(t)
	gnu, _ := exec.LookPath("patch")
	dir := t.TempDir()
	for i, c := range cases {
		d := patch.Diff(c.Name, c.Name, c.Old, c.New)
		p, err := patch.Parse(d)
		if err != nil {
			t.Fatalf("%s: parse our diff: %v", c.Name, err)
		}
		r, err := patch.Apply(c.Old, p.Files[0].Hunks, patch.Options{TrustLineNumbers: true})
		if err != nil || !bytes.Equal(r.Content, c.New) {
			t.Fatalf("%s: our diff does not round-trip: %v", c.Name, err)
		}
		add, rem := patch.CountChanges(c.Old, c.New)
		if add != r.Added || rem != r.Removed {
			t.Errorf("%s: CountChanges = +%d -%d, Apply = +%d -%d", c.Name, add, rem, r.Added, r.Removed)
		}
		if gnu == "" || i%10 != 0 {
			continue
		}
		f := filepath.Join(dir, "f")
		if err := os.WriteFile(f, c.Old, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(gnu, "-s", "-f", f)
		cmd.Stdin = strings.NewReader(d)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: GNU patch refuses our diff: %v\n%s", c.Name, err, out)
		}
		got, _ := os.ReadFile(f)
		if !bytes.Equal(got, c.New) {
			t.Errorf("%s: GNU patch applied our diff differently", c.Name)
		}
	}
}

// TestGNUPatchMisplacesShiftedHunk shows the failure the ambiguity rule
// exists for: with numbers one period late in repetitive code, GNU patch
// edits the wrong block without a word, where Apply refuses.
func TestGNUPatchMisplacesShiftedHunk(t *testing.T) {
	gnu, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("GNU patch not installed")
	}
	src := gen(30)
	diff := "--- a/gen.go\n+++ b/gen.go\n" + genHunk(genLine(12)+9)
	f := filepath.Join(t.TempDir(), "gen.go")
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gnu, "-s", "-f", f)
	cmd.Stdin = strings.NewReader(diff)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GNU patch: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(f)
	lines := strings.Split(string(got), "\n")
	if lines[genLine(13)-1] != "\t\tstoreChecked(x)" {
		t.Fatalf("expected GNU patch to edit block 13 (stated line); line %d is %q", genLine(13), lines[genLine(13)-1])
	}
	p, _ := patch.Parse(diff)
	if _, err := patch.Apply([]byte(src), p.Files[0].Hunks, patch.Options{}); err == nil {
		t.Fatal("Apply placed a hunk whose place only its line number decides")
	}
}
