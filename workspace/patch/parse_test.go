package patch_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/workspace/patch"
)

// summary renders what Parse understood, compactly.
func summary(p *patch.Patch) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", p.Format)
	for _, f := range p.Files {
		fmt.Fprintf(&b, "|%s %q %q", f.Op, f.OldName, f.NewName)
		if f.GitOldName != "" || f.GitNewName != "" {
			fmt.Fprintf(&b, " git %q %q", f.GitOldName, f.GitNewName)
		}
		for _, h := range f.Hunks {
			fmt.Fprintf(&b, " [%v %d,%d %d,%d", h.Numbered, h.OldStart, h.OldLines, h.NewStart, h.NewLines)
			for _, l := range h.Lines {
				fmt.Fprintf(&b, " %c%s", l.Kind, l.Text)
			}
			if h.OldNoEOL {
				b.WriteString(" old-noeol")
			}
			if h.NewNoEOL {
				b.WriteString(" new-noeol")
			}
			b.WriteString("]")
		}
	}
	return b.String()
}

func TestParse(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"short-header", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
			`unified|modify "a/x" "b/x" [true 1,1 1,1 -a +b]`},
		{"timestamps", "--- x.orig\t2024-01-01 10:00:00.000000000 +0100\n+++ x\t2024-01-01 10:00:01.000000000 +0100\n@@ -1 +1 @@\n-a\n+b\n",
			`unified|modify "x.orig" "x" [true 1,1 1,1 -a +b]`},
		{"removed-line-looks-like-header", "--- a/x.sql\n+++ b/x.sql\n@@ -1,2 +1,2 @@\n--- comment\n+++ other\n keep\n",
			`unified|modify "a/x.sql" "b/x.sql" [true 1,2 1,2 --- comment +++ other  keep]`},
		{"wrong-counts-then-next-file", "--- a/x\n+++ b/x\n@@ -1,5 +1,5 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n",
			`unified|modify "a/x" "b/x" [true 1,1 1,1 -a +b]|modify "a/y" "b/y" [true 1,1 1,1 -c +d]`},
		{"no-newline-markers", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n",
			`unified|modify "a/x" "b/x" [true 1,1 1,1 -a +b old-noeol new-noeol]`},
		{"blank-context-line", "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n",
			`unified|modify "a/x" "b/x" [true 1,3 1,3  a   -b +c]`},
		{"git-unquoted-spaces", "diff --git a/my file.txt b/my file.txt\n--- a/my file.txt\n+++ b/my file.txt\n@@ -1 +1 @@\n-a\n+b\n",
			`git|modify "a/my file.txt" "b/my file.txt" [true 1,1 1,1 -a +b]`},
		{"git-quoted-octal", "diff --git \"a/caf\\303\\251.txt\" \"b/caf\\303\\251.txt\"\n--- \"a/caf\\303\\251.txt\"\n+++ \"b/caf\\303\\251.txt\"\n@@ -1 +1 @@\n-a\n+b\n",
			`git|modify "a/café.txt" "b/café.txt" [true 1,1 1,1 -a +b]`},
		{"git-pure-rename", "diff --git a/x b/y\nsimilarity index 100%\nrename from x\nrename to y\n",
			`git|rename "a/x" "b/y" git "x" "y"`},
		{"markdown-fence", "```diff\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n```\n",
			`unified|modify "a/x" "b/x" [true 1,1 1,1 -a +b]`},
		{"fenced-envelope", "```\n*** Begin Patch\n*** Update File: x\n@@\n-a\n+b\n*** End Patch\n```",
			`envelope|modify "x" "x" [false 0,1 0,1 -a +b]`},
		{"envelope-without-begin", "*** Update File: x\n a\n-b\n+c\n",
			`envelope|modify "x" "x" [false 0,2 0,2  a -b +c]`},
		{"envelope-context-without-space", "*** Begin Patch\n*** Update File: x\n@@\nfunc f() {\n-a\n+b\n*** End Patch\n",
			`envelope|modify "x" "x" [false 0,2 0,2  func f() { -a +b]`},
		{"crlf-patch", "--- a/x\r\n+++ b/x\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n",
			`unified|modify "a/x" "b/x" [true 1,1 1,1 -a +b]`},
		{"bare-hunks", "@@ -3,2 +3,2 @@\n x\n-y\n+z\n@@ @@\n-q\n+r\n",
			`unified|modify "" "" [true 3,2 3,2  x -y +z] [false 0,1 0,1 -q +r]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := patch.Parse(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(p); got != tc.want {
				t.Fatalf("Parse =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
