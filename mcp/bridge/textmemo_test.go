package bridge

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// appendText is appendTextOrMemo with the remembered JSON appended.
func appendText(b []byte, s string) []byte {
	b, memo := appendTextOrMemo(b, s)
	return append(b, memo...)
}

// TestAppendTextIsAppendJSONString: whatever the memo holds, appendText
// writes what action.AppendJSONString writes, and so does
// appendTextOrMemo followed by the JSON it returns from the memo (having
// appended nothing then): for texts sent once, twice and many times,
// texts of equal bytes at other addresses, prefixes of a remembered text
// (same address, shorter), texts too short or too long to be remembered,
// more texts than the memo holds, after any prefix.
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
	memos := 0
	for range 400 {
		s := texts[rng.IntN(len(texts))]
		prefix := []byte(strings.Repeat("p", rng.IntN(3)))
		want := action.AppendJSONString(append([]byte(nil), prefix...), s)
		if got := appendText(append([]byte(nil), prefix...), s); !bytes.Equal(got, want) {
			t.Fatalf("text of %d bytes: appendText differs from AppendJSONString", len(s))
		}
		b, memo := appendTextOrMemo(append([]byte(nil), prefix...), s)
		if memo != nil {
			memos++
			if !bytes.Equal(b, prefix) {
				t.Fatalf("text of %d bytes: appended to as well as remembered", len(s))
			}
		}
		if got := append(b, memo...); !bytes.Equal(got, want) {
			t.Fatalf("text of %d bytes: appendTextOrMemo differs from AppendJSONString", len(s))
		}
	}
	if memos == 0 {
		t.Fatal("no text was ever sent from the memo")
	}
}
