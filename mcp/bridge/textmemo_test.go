package bridge

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// TestAppendTextIsAppendJSONString: whatever the memo holds, appendText
// writes what action.AppendJSONString writes: for texts sent once, twice
// and many times, texts of equal bytes at other addresses, prefixes of a
// remembered text (same address, shorter), texts too short or too long to
// be remembered, more texts than the memo holds, after any prefix.
func TestAppendTextIsAppendJSONString(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	var texts []string
	for i := range 12 {
		n := []int{10, memoTextMin, 64 << 10, memoTextMax + 1}[i%4]
		var b strings.Builder
		for b.Len() < n {
			b.WriteString([]string{"x", "\n", `"`, "é", "\x01", "<tag>", "\u2028"}[rng.IntN(7)])
		}
		texts = append(texts, b.String()[:n])
	}
	for _, s := range texts[:4] {
		texts = append(texts, strings.Clone(s), s[:len(s)/2]) // equal bytes elsewhere; a prefix
	}
	for range 400 {
		s := texts[rng.IntN(len(texts))]
		prefix := []byte(strings.Repeat("p", rng.IntN(3)))
		got := appendText(append([]byte(nil), prefix...), s)
		want := action.AppendJSONString(append([]byte(nil), prefix...), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("text of %d bytes: appendText differs from AppendJSONString", len(s))
		}
	}
}
