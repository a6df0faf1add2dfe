package patch_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/workspace/patch"
	"github.com/harness-runtime/harness/workspace/patch/internal/corpus"
)

// randomFile makes a file for the property test, repetitive by design:
// lines from a small vocabulary, blocks that repeat with a short period
// (now and then one unique line in a block), or unique lines among which
// earlier blocks are copied.
func randomFile(rng *rand.Rand) []byte {
	n := 20 + rng.IntN(400)
	lines := make([]string, 0, n)
	switch rng.IntN(3) {
	case 0:
		vocab := 2 + rng.IntN(30)
		for len(lines) < n {
			lines = append(lines, fmt.Sprintf("line %d", rng.IntN(vocab)))
		}
	case 1:
		period := 2 + rng.IntN(14)
		block := make([]string, period)
		for i := range block {
			block[i] = fmt.Sprintf("\tstep%d()", rng.IntN(period))
		}
		for len(lines) < n {
			for _, l := range block {
				if rng.IntN(10) == 0 {
					l = fmt.Sprintf("\tunique%d()", len(lines))
				}
				lines = append(lines, l)
			}
		}
	default:
		for len(lines) < n {
			if len(lines) > 10 && rng.IntN(8) == 0 {
				at, k := rng.IntN(len(lines)-8), 3+rng.IntN(6)
				lines = append(lines, lines[at:at+k]...)
				continue
			}
			lines = append(lines, fmt.Sprintf("u%d := f(%d)", len(lines), rng.IntN(5)))
		}
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// atStated reports whether every hunk with old lines has them verbatim at
// its stated line of old, and if so returns the splice of every hunk there.
func atStated(old []byte, hunks []patch.Hunk) ([]byte, bool) {
	lines := strings.SplitAfter(string(old), "\n")
	var out strings.Builder
	cur := 0
	for _, h := range hunks {
		var oldSide, newSide []string
		for _, l := range h.Lines {
			if l.Kind != '+' {
				oldSide = append(oldSide, l.Text+"\n")
			}
			if l.Kind != '-' {
				newSide = append(newSide, l.Text+"\n")
			}
		}
		at := h.OldStart - 1
		if len(oldSide) == 0 || !h.Numbered || at < cur || at+len(oldSide) > len(lines) {
			return nil, false
		}
		for j, l := range oldSide {
			if lines[at+j] != l {
				return nil, false
			}
		}
		out.WriteString(strings.Join(lines[cur:at], ""))
		out.WriteString(strings.Join(newSide, ""))
		cur = at + len(oldSide)
	}
	out.WriteString(strings.Join(lines[cur:], ""))
	return []byte(out.String()), true
}

// TestPropertyPerturbedNumbers: for any file and any edit, a diff of the
// edit whose hunks' line numbers are each moved by up to NearRadius/2
// lines (some not at all, the others by different amounts either way)
// applies to exactly the edited file or is refused. The one exception is
// the case no reader of the patch can tell from an exact diff: numbers
// that put every hunk on a verbatim copy of its own old lines; such a
// patch, if applied, must be applied at exactly those lines.
func TestPropertyPerturbedNumbers(t *testing.T) {
	const iterations = 4000
	rng := rand.New(rand.NewPCG(14, 1))
	var ok, refused, lookalike, perturbed int
	for it := 0; it < iterations; it++ {
		old := randomFile(rng)
		want := corpus.Edit(old, rng)
		d := patch.Diff("f", "f", old, want)
		if d == "" {
			continue
		}
		moved := false
		d = shiftHunks(d, func(int) int {
			k := rng.IntN(patch.NearRadius+1) - patch.NearRadius/2
			if rng.IntN(4) == 0 {
				k = 0
			}
			moved = moved || k != 0
			return k
		})
		if !moved {
			continue
		}
		perturbed++
		p, err := patch.Parse(d)
		if err != nil {
			t.Fatalf("iteration %d: %v\n%s", it, err, d)
		}
		hunks := p.Files[0].Hunks
		r, err := patch.Apply(old, hunks, patch.Options{})
		switch {
		case err != nil:
			refused++
		case bytes.Equal(r.Content, want):
			ok++
		default:
			splice, same := atStated(old, hunks)
			if !same || !bytes.Equal(r.Content, splice) {
				t.Fatalf("iteration %d: perturbed diff applied to a wrong result\nfile:\n%s\ndiff:\n%s\ngot:\n%s", it, old, d, r.Content)
			}
			lookalike++
		}
	}
	t.Logf("%d perturbed diffs: %d applied as meant, %d refused, %d indistinguishable from an exact diff of other copies and applied there", perturbed, ok, refused, lookalike)
	if ok < perturbed/2 {
		t.Errorf("only %d of %d perturbed diffs applied: the property holds vacuously", ok, perturbed)
	}
}
