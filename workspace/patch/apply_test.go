package patch_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/workspace/patch"
)

// TestApplyFuzzyIsBoundedOnRepetitiveFiles: a hunk that fits nowhere in a
// file made of one repeated line is refused without scoring every place.
func TestApplyFuzzyIsBoundedOnRepetitiveFiles(t *testing.T) {
	file := []byte(strings.Repeat("}\n", 50000))
	p, err := patch.Parse("@@ @@\n func f() {\n-}\n+}\n // end\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = patch.Apply(file, p.Files[0].Hunks, patch.Options{})
	if !errors.Is(err, patch.ErrNoMatch) {
		t.Fatalf("err = %v, want ErrNoMatch", err)
	}
}

func TestApplyOptions(t *testing.T) {
	file := []byte("a\nb\nc\nd\ne\n")
	// Context "B" and "D" differ from the file in one character each.
	hunk := "@@ -2,3 +2,3 @@\n bX\n-c\n+C\n dX\n"
	cases := []struct {
		name    string
		opts    patch.Options
		wantErr error
		stage   patch.Stage
	}{
		{"default-threshold-refuses", patch.Options{}, patch.ErrNoMatch, ""},
		{"low-threshold-accepts", patch.Options{Fuzz: 0.5}, nil, patch.StageFuzzy},
		{"fuzzy-disabled", patch.Options{Fuzz: 0.5, NoFuzzy: true}, patch.ErrNoMatch, ""},
		{"threshold-below-min-is-raised", patch.Options{Fuzz: 0.01}, nil, patch.StageFuzzy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := patch.Parse(hunk)
			if err != nil {
				t.Fatal(err)
			}
			r, err := patch.Apply(file, p.Files[0].Hunks, tc.opts)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Stage != tc.stage || string(r.Content) != "a\nb\nC\nd\ne\n" {
				t.Fatalf("stage %s content %q", r.Stage, r.Content)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ name, text string }{
		{"empty", ""},
		{"prose", "please change line 3"},
		{"nul", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\x00\n+b\n"},
		{"binary-git", "diff --git a/x.png b/x.png\nindex 1..2 100644\nBinary files a/x.png and b/x.png differ\n"},
		{"both-dev-null", "--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n"},
		{"envelope-unknown-line", "*** Begin Patch\n*** Frobnicate File: x\n*** End Patch\n"},
		{"envelope-update-without-changes", "*** Begin Patch\n*** Update File: x\n*** End Patch\n"},
		{"envelope-add-without-plus", "*** Begin Patch\n*** Add File: x\nhello\n*** End Patch\n"},
		{"git-copy", "diff --git a/x b/y\nsimilarity index 100%\ncopy from x\ncopy to y\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := patch.Parse(tc.text); !errors.Is(err, patch.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}
