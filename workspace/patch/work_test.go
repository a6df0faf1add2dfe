package patch_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace"
	"github.com/harness-runtime/harness/workspace/patch"
)

// hunkBytes is the size of hunks as ApplyContext counts its input.
func hunkBytes(hunks []patch.Hunk) int {
	n := 0
	for _, h := range hunks {
		n += len(h.Header) + 1
		for _, l := range h.Lines {
			n += len(l.Text) + 2
		}
	}
	return n
}

// unbounded counts operations without ever stopping, so that what a call
// does by itself can be compared with its allowance.
func unbounded() *patch.Work { return patch.NewWork(math.MaxInt64) }

// checkWorkBound parses text and applies each of its files' hunks to
// content, each call by itself, and fails if a call did more operations
// than WorkAllowance of its input.
func checkWorkBound(t *testing.T, text, content string) {
	t.Helper()
	ctx := context.Background()
	w := unbounded()
	p, err := patch.ParseContext(ctx, text, w)
	if got, bound := w.Ops(), patch.WorkAllowance(len(text)); got > bound {
		t.Fatalf("ParseContext of %d bytes: %d operations > bound %d", len(text), got, bound)
	}
	if err != nil {
		return
	}
	for i, f := range p.Files {
		w := unbounded()
		_, err := patch.ApplyContext(ctx, []byte(content), f.Hunks, patch.Options{Work: w})
		if errors.Is(err, patch.ErrTooCostly) {
			t.Fatalf("file %d: an unbounded Work stopped: %v", i, err)
		}
		input := len(content) + hunkBytes(f.Hunks)
		if got, bound := w.Ops(), patch.WorkAllowance(input); got > bound {
			t.Fatalf("file %d: ApplyContext of %d bytes (%d hunks): %d operations > bound %d", i, input, len(f.Hunks), got, bound)
		}
	}
}

// checkSharedBound plans an envelope the way package workspace does: one
// Work limited by the patch's allowance, files created by the patch kept
// in memory, later sections of a file applied to what the earlier ones
// made. The total stays within the limit (a call stops at most one charge
// past it, and no charge exceeds the limit).
func checkSharedBound(t *testing.T, text string) {
	t.Helper()
	ctx := context.Background()
	w := patch.NewWork(patch.WorkAllowance(len(text)))
	p, err := patch.ParseContext(ctx, text, w)
	if err != nil {
		return
	}
	files := map[string][]byte{}
	for _, f := range p.Files {
		r, err := patch.ApplyContext(ctx, files[f.NewName], f.Hunks, patch.Options{Work: w})
		if err != nil {
			break
		}
		files[f.NewName] = r.Content
	}
	if w.Ops() > 2*w.Limit() {
		t.Fatalf("shared Work: %d operations > twice the limit %d", w.Ops(), w.Limit())
	}
}

// amplify builds the adversarial inputs of FuzzPatchWorkBound from a small
// fuzzed seed: reps copies of content's lines (or of its bytes, in long
// lines), and text's hunks repeated, or an envelope that adds a file and
// then updates it in sections.
func amplify(text, content string, reps uint16, mode uint8) (patchText, file string) {
	reps = min(reps, 4096)
	if len(content)*int(reps) > 1<<20 || len(text)*int(reps) > 1<<20 {
		reps = uint16(min(1<<20/max(1, len(content)), 1<<20/max(1, len(text))))
	}
	switch mode % 4 {
	case 0: // the patch as is, on many copies of the content
		return text, strings.Repeat(content, int(reps))
	case 1: // many hunks, or one long hunk
		return strings.Repeat(text, int(reps)), strings.Repeat(content, int(reps))
	case 2: // long lines
		long := strings.ReplaceAll(content, "\n", strings.Repeat("\t", int(reps))+"\n")
		return strings.ReplaceAll(text, "\n", strings.Repeat("\t", int(reps))+"\n"), long
	}
	// An envelope that adds a file of reps copies of content, then updates
	// it in sections whose lines are text's.
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: big.txt\n")
	for i := 0; i < int(reps); i++ {
		for _, l := range strings.SplitAfter(content, "\n") {
			if l != "" {
				b.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
			}
		}
	}
	for i := 0; i < 1+int(reps)/64; i++ {
		b.WriteString("*** Update File: big.txt\n")
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
	}
	b.WriteString("*** End Patch\n")
	return b.String(), ""
}

// FuzzPatchWorkBound: for adversarial inputs (many identical lines, long
// lines, many hunks, hunks that match nowhere or everywhere, an envelope
// that adds a file and then updates it), every ParseContext and
// ApplyContext call does at most WorkAllowance of its input in counted
// operations, without a limit to stop it; and a Work shared by a whole
// envelope, as package workspace uses one, stays within its limit.
func FuzzPatchWorkBound(f *testing.F) {
	f.Add("@@ @@\n x\n x\n x\n-y\n+z\n", "x\n", uint16(4000), uint8(0))
	f.Add("@@ @@\n x\n+z\n y\n", "x\n", uint16(4000), uint8(1))
	f.Add("@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "a\nb\n", uint16(3000), uint8(1))
	f.Add("@@ @@\n f(a, b)\n-g(a,  b)\n+h()\n", "f(a, b)\ng(a, b)\n", uint16(200), uint8(2))
	f.Add("@@\n x\n x\n-y\n+z\n", "x\n", uint16(4096), uint8(3))
	f.Fuzz(func(t *testing.T, text, content string, reps uint16, mode uint8) {
		if strings.ContainsRune(content, 0) {
			return // the workspace refuses binary content before Apply
		}
		text, file := amplify(text, content, reps, mode)
		if mode%4 == 3 {
			checkSharedBound(t, text)
			checkWorkBound(t, text, "")
			return
		}
		checkWorkBound(t, text, file)
	})
}

// TestWorkGrowsLinearly: doubling an adversarial input doubles the counted
// operations, within a margin, instead of quadrupling them.
func TestWorkGrowsLinearly(t *testing.T) {
	families := []struct {
		name    string
		patchOf func(k int) string
		fileOf  func(k int) string
	}{
		{"add-then-update-removed-line-missing", func(k int) string { return addThenUpdate(k, "removed-line-missing") }, nil},
		{"add-then-update-context-missing", func(k int) string { return addThenUpdate(k, "context-missing") }, nil},
		{"one-hunk-of-common-lines", func(k int) string {
			return "@@ @@\n" + strings.Repeat(" }\n", k/2) + "+z\n }\n"
		}, func(k int) string { return strings.Repeat("}\n", k) }},
		{"many-hunks-matching-everywhere", func(k int) string {
			return strings.Repeat("@@ @@\n x\n-x\n+y\n", k/8)
		}, func(k int) string { return strings.Repeat("x\n", k) }},
		{"many-hunks-matching-nowhere", func(k int) string {
			var b strings.Builder
			for i := 0; i < k/8; i++ {
				fmt.Fprintf(&b, "@@ @@\n x\n-y%d\n+z\n", i)
			}
			return b.String()
		}, func(k int) string { return strings.Repeat("x\n", k) }},
		{"fuzzy-on-near-copies", func(k int) string {
			return "@@ @@\n a(1)\n b(2)\n+c\n d(3)\n e(4)\n"
		}, func(k int) string { return strings.Repeat("a(0)\nb(0)\nd(0)\ne(0)\n", k/4) }},
	}
	ops := func(text, file string) int64 {
		w := unbounded()
		p, err := patch.ParseContext(context.Background(), text, w)
		if err != nil {
			t.Fatal(err)
		}
		files := map[string][]byte{}
		for _, f := range p.Files {
			old := []byte(file)
			if f.NewName != "" {
				old = files[f.NewName]
			}
			r, err := patch.ApplyContext(context.Background(), old, f.Hunks, patch.Options{Work: w})
			if err == nil && f.NewName != "" {
				files[f.NewName] = r.Content
			}
		}
		return w.Ops()
	}
	for _, fam := range families {
		t.Run(fam.name, func(t *testing.T) {
			const k = 12000
			file := func(k int) string {
				if fam.fileOf == nil {
					return ""
				}
				return fam.fileOf(k)
			}
			small, large := ops(fam.patchOf(k), file(k)), ops(fam.patchOf(2*k), file(2*k))
			t.Logf("%d operations at k=%d, %d at k=%d", small, k, large, 2*k)
			if float64(large) > 2.5*float64(small) {
				t.Errorf("operations grew %.2f times when the input doubled", float64(large)/float64(small))
			}
		})
	}
}

// TestContextStopsWork: a done context stops ParseContext and
// ApplyContext with its error, on inputs large enough to be looked at
// midway.
func TestContextStopsWork(t *testing.T) {
	text := addThenUpdate(12000, "context-missing")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := patch.ParseContext(canceled, text, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("ParseContext: err = %v, want context.Canceled", err)
	}
	p, err := patch.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte(strings.Repeat("x\n", 12000))
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(1, 0))
	defer cancel2()
	for name, ctx := range map[string]context.Context{"canceled": canceled, "deadline": expired} {
		_, err := patch.ApplyContext(ctx, old, p.Files[1].Hunks, patch.Options{})
		if !errors.Is(err, ctx.Err()) {
			t.Errorf("%s: ApplyContext: err = %v, want %v", name, err, ctx.Err())
		}
	}
}

// manySections is an envelope that adds a file of k distinct lines and
// then updates it in n sections, each changing one line: every section is
// applied to the whole file.
func manySections(k, n int) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: big.txt\n")
	for i := 0; i < k; i++ {
		fmt.Fprintf(&b, "+line %d\n", i)
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "*** Update File: big.txt\n@@\n-line %d\n+LINE %d\n", i, i)
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// TestSharedWorkBoundsSections: sections that each update a large file
// cost the file's size each; a Work shared by the whole patch stops them
// with ErrTooCostly once they exceed what the patch allows, where each call
// alone stays within its own allowance.
func TestSharedWorkBoundsSections(t *testing.T) {
	text := manySections(20000, 2000)
	w := patch.NewWork(patch.WorkAllowance(len(text)))
	p, err := patch.ParseContext(context.Background(), text, w)
	if err != nil {
		t.Fatal(err)
	}
	var content []byte
	for i, f := range p.Files {
		r, err := patch.ApplyContext(context.Background(), content, f.Hunks, patch.Options{Work: w})
		if errors.Is(err, patch.ErrTooCostly) {
			t.Logf("stopped at section %d of %d after %d operations (limit %d)", i, len(p.Files)-1, w.Ops(), w.Limit())
			if w.Ops() > 2*w.Limit() {
				t.Fatalf("%d operations, more than twice the limit %d", w.Ops(), w.Limit())
			}
			return
		}
		if err != nil {
			t.Fatalf("section %d: %v", i, err)
		}
		content = r.Content
	}
	t.Fatalf("all %d sections applied in %d operations: the shared limit %d did not stop them", len(p.Files), w.Ops(), w.Limit())
}

// TestWorkspacePlanIsBounded: through the workspace, the same envelope is
// refused with patch_failed (too costly), and a small one with the same
// shape applies.
func TestWorkspacePlanIsBounded(t *testing.T) {
	opts := workspace.DefaultOptions()
	opts.Sandbox = "off"
	ws, err := workspace.New(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, err = ws.PlanPatch(context.Background(), map[string]any{"patch": manySections(20000, 2000)})
	var ae *action.Error
	if !errors.As(err, &ae) || ae.Code != action.CodePatchFailed || !errors.Is(err, patch.ErrTooCostly) {
		t.Fatalf("err = %v, want patch_failed wrapping ErrTooCostly", err)
	}
	plan, err := ws.PlanPatch(context.Background(), map[string]any{"patch": manySections(200, 20)})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Files) != 1 || plan.Files[0].Path != "big.txt" || plan.Files[0].Added-plan.Files[0].Removed != 200 {
		t.Fatalf("plan of %d files, first %s +%d -%d", len(plan.Files), plan.Files[0].Path, plan.Files[0].Added, plan.Files[0].Removed)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ws.PlanPatch(canceled, map[string]any{"patch": manySections(200, 20)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled plan: err = %v, want context.Canceled", err)
	}
}
