package sanitize

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// nextOneByOne is scanner.next as a plain walk over every byte: the
// reference that the faster loop (eight bytes at a time, runs found
// apart) must agree with.
func (sc *scanner) nextOneByOne(from int) (start, end int, ok bool) {
	s := sc.s
	sc.from = from
	run := from // start of the current base64 run, -1 if it began before from
	if from > 0 && class[s[from-1]]&clsB64Any != 0 {
		run = -1
	}
	for i := from; i < len(s); i++ {
		if class[s[i]]&clsB64Any == 0 {
			if run >= 0 && i-run >= minRunCheck {
				if a, e := sc.runAt(run, i); e > a {
					return a, e, true
				}
			}
			run = i + 1
		}
		if i+1 >= len(s) {
			continue
		}
		k := pairTrig[int(s[i])<<8|int(s[i+1])]
		if k == 0 {
			continue
		}
		var n3 byte
		if i+2 < len(s) {
			n3 = s[i+2]
		}
		if t := &trigs[k]; !t.allows(n3) || t.bound && i > 0 && isWordByte(s[i-1]) {
			continue
		}
		if a, e := sc.find(i); e > a {
			return a, e, true
		}
	}
	if run >= 0 && len(s)-run >= minRunCheck {
		if a, e := sc.runAt(run, len(s)); e > a {
			return a, e, true
		}
	}
	return 0, 0, false
}

// TestNextMatchesOneByOne: on text made of secrets, clean lines, long
// runs and separators, cut at every length and scanned from many starts,
// next finds the same spans as the byte by byte walk.
func TestNextMatchesOneByOne(t *testing.T) {
	pieces := append(append([]string{}, plantable...), cleanLines...)
	pieces = append(pieces, "password=", "token: ", "a:", "=", ":", " ", "\n", "-", "_", "/",
		"0123456789abcdef0123456789abcdef01234567", "QUtJQUlPU0ZPRE5ON0VYQU1QTEU=",
		"aGVsbG8gd29ybGQgcGFzc3dvcmQ9aHVudGVyMg==", "cGFzc3dvcmQ9YWJj", strings.Repeat("x", 15), strings.Repeat("Ab9", 7))
	rng := rand.New(rand.NewPCG(3, 5))
	spans := func(s string, next func(*scanner, int) (int, int, bool)) [][2]int {
		sc := &scanner{s: s}
		var out [][2]int
		for from := 0; from <= len(s); {
			a, e, ok := next(sc, from)
			if !ok {
				break
			}
			out = append(out, [2]int{a, e})
			from = e
		}
		return out
	}
	found := 0
	for n := 0; n < 3000; n++ {
		var b strings.Builder
		for k := 1 + rng.IntN(8); k > 0; k-- {
			b.WriteString(pieces[rng.IntN(len(pieces))])
			if rng.IntN(2) == 0 {
				b.WriteByte(" \n=:\"'_-/"[rng.IntN(9)])
			}
		}
		text := b.String()
		for _, s := range []string{text, text[:rng.IntN(len(text)+1)], text[rng.IntN(len(text)+1):]} {
			got := spans(s, (*scanner).next)
			want := spans(s, (*scanner).nextOneByOne)
			if len(got) != len(want) {
				t.Fatalf("%q: next found %v, one by one %v", s, got, want)
			}
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("%q: next found %v, one by one %v", s, got, want)
				}
			}
			found += len(got)
			// A start inside the text, inside a run or not.
			from := rng.IntN(len(s) + 1)
			a1, e1, ok1 := (&scanner{s: s}).next(from)
			a2, e2, ok2 := (&scanner{s: s}).nextOneByOne(from)
			if a1 != a2 || e1 != e2 || ok1 != ok2 {
				t.Fatalf("%q from %d: next %d,%d,%v; one by one %d,%d,%v", s, from, a1, e1, ok1, a2, e2, ok2)
			}
		}
	}
	if found < 1000 {
		t.Fatalf("only %d spans found: the texts hold too few secrets to compare", found)
	}
}
