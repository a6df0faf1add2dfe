package patch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace"
	"github.com/harness-runtime/harness/workspace/patch"
)

// addThenUpdate is the self-contained envelope of issue 11 class 7: an
// *** Add File of k lines, then an *** Update File of that file whose hunk
// matches nowhere. Its cost was quadratic in k.
func addThenUpdate(k int, shape string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: big.txt\n")
	for i := 0; i < k; i++ {
		b.WriteString("+x\n")
	}
	b.WriteString("*** Update File: big.txt\n@@\n")
	for i := 0; i < k/2; i++ {
		b.WriteString(" x\n")
	}
	switch shape {
	case "removed-line-missing":
		b.WriteString("-y\n+z\n")
	case "context-missing":
		b.WriteString("+z\n y\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// BenchmarkEnvelopeAddThenUpdate measures that envelope at k = 12,000 lines,
// through the package (parse, then apply the update to the added content;
// ops/op is the operations counted) and through the workspace (PlanPatch,
// which refuses it). Before the matcher indexed lines and bounded its
// passes, on this machine: 0.65 s (removed-line-missing) and 1.5 s
// (context-missing) per envelope, both ways.
//
//	go test -run XXX -bench EnvelopeAddThenUpdate ./workspace/patch/
func BenchmarkEnvelopeAddThenUpdate(b *testing.B) {
	const k = 12000
	for _, shape := range []string{"removed-line-missing", "context-missing"} {
		text := addThenUpdate(k, shape)
		b.Run(fmt.Sprintf("package/%s/k=%d", shape, k), func(b *testing.B) {
			var ops int64
			for i := 0; i < b.N; i++ {
				w := unbounded()
				p, err := patch.ParseContext(context.Background(), text, w)
				if err != nil {
					b.Fatal(err)
				}
				added := []byte(strings.Repeat("x\n", k))
				if _, err := patch.ApplyContext(context.Background(), added, p.Files[1].Hunks, patch.Options{Work: w}); !errors.Is(err, patch.ErrNoMatch) {
					b.Fatalf("err = %v, want ErrNoMatch", err)
				}
				ops += w.Ops()
			}
			b.ReportMetric(float64(ops)/float64(b.N), "ops/op")
		})
		b.Run(fmt.Sprintf("workspace/%s/k=%d", shape, k), func(b *testing.B) {
			opts := workspace.DefaultOptions()
			opts.Sandbox = "off"
			ws, err := workspace.New(b.TempDir(), opts)
			if err != nil {
				b.Fatal(err)
			}
			defer ws.Close()
			for i := 0; i < b.N; i++ {
				_, err := ws.PlanPatch(context.Background(), map[string]any{"patch": text})
				var ae *action.Error
				if !errors.As(err, &ae) || ae.Code != action.CodePatchFailed {
					b.Fatalf("err = %v, want patch_failed", err)
				}
			}
		})
	}
}
