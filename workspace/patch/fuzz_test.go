package patch_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/workspace/patch"
)

// FuzzParseApply: no input makes Parse, Resolve, Apply or Diff panic;
// resolved paths always stay inside the root; an applied result, diffed
// against the input and applied again, gives the same result.
func FuzzParseApply(f *testing.F) {
	f.Add("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "a\nb\n")
	f.Add("*** Begin Patch\n*** Update File: x\n@@ a\n-b\n+c\n*** End of File\n*** End Patch\n", "a\r\nb\r\n")
	f.Add("diff --git \"a/x y\" \"b/x y\"\nrename from x y\nrename to ../z\n", "")
	f.Add("@@ @@\n a\n-b\n\\ No newline at end of file\n+c\n", "a\nb")
	f.Add("--- a/x\n+++ b/x\n@@ -3,0 +4 @@\n+z\n@@ -1 +1 @@\n-a\n+q\n", "a\nb\nc\n")
	f.Fuzz(func(t *testing.T, text, content string) {
		p, err := patch.Parse(text)
		if err != nil || strings.ContainsRune(content, 0) {
			return // binary content is refused by the workspace before Apply
		}
		stat := func(name string) patch.Kind {
			if name == "x" || name == "x y" {
				return patch.Regular
			}
			return patch.Missing
		}
		if err := patch.Resolve(p, -1, stat); err == nil {
			for _, fp := range p.Files {
				for _, n := range []string{fp.Path, fp.OldPath} {
					if n != "" && (!filepath.IsLocal(n) || strings.Contains(n, "\\")) {
						t.Fatalf("resolved path %q leaves the root", n)
					}
				}
			}
		}
		for _, fp := range p.Files {
			r, err := patch.Apply([]byte(content), fp.Hunks, patch.Options{})
			if err != nil {
				continue
			}
			d := patch.Diff("x", "x", []byte(content), r.Content)
			if d == "" {
				continue
			}
			q, err := patch.Parse(d)
			if err != nil {
				t.Fatalf("our diff does not parse: %v\n%s", err, d)
			}
			r2, err := patch.Apply([]byte(content), q.Files[0].Hunks, patch.Options{TrustLineNumbers: true})
			if err != nil {
				if strings.ContainsRune(content, '\r') {
					continue // a lone CR is a line-ending question, not a content one
				}
				t.Fatalf("our diff does not apply: %v\n%s", err, d)
			}
			if string(r2.Content) != string(r.Content) && !strings.ContainsRune(content, '\r') {
				t.Fatalf("our diff applies to %q, want %q", r2.Content, r.Content)
			}
		}
	})
}
