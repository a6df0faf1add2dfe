package workspace

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// TestSortedByNameIsByteOrder checks the prefix-keyed sort of a
// directory's names against plain byte order, on names that share their
// first six bytes, are shorter than six, or hold bytes above 0x7f.
func TestSortedByNameIsByteOrder(t *testing.T) {
	cases := []struct {
		name  string
		names []string
	}{
		{"empty", nil},
		{"one", []string{"a"}},
		{"shared prefix longer than six", []string{"abcdefgh2", "abcdefgh10", "abcdefgh", "abcdefgh1", "abcdefgi", "abcdef", "abcdeg"}},
		{"shorter than six", []string{"ab", "a", "abc", "b", "aa", "a0"}},
		{"high bytes", []string{"\xff", "é", "e", "\x7f", "z", "\xc3\xa9a"}},
		{"generated", []string{"f0999.txt", "f0001.txt", "f1000.txt", "f0010.txt", ".git", "Makefile", "_x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkSortedByName(t, tc.names)
		})
	}
}

// TestSortedByNameRandom is the same property on random names drawn from
// a small alphabet, so that long shared prefixes and ties are common.
func TestSortedByNameRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'a', 'b', '.', 0x7f, 0x80, 0xff}
	for range 500 {
		names := make([]string, r.IntN(40))
		for i := range names {
			b := make([]byte, 1+r.IntN(12))
			for j := range b {
				b[j] = alphabet[r.IntN(len(alphabet))]
			}
			names[i] = string(b)
		}
		checkSortedByName(t, names)
	}
}

// TestSortedByNameLargeDirectory covers a directory too large for the
// index to fit beside the prefix in one integer.
func TestSortedByNameLargeDirectory(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	names := make([]string, 1<<16+10)
	for i := range names {
		names[i] = fmt.Sprintf("n%07d", r.IntN(1<<20))
	}
	checkSortedByName(t, names)
}

func checkSortedByName(t *testing.T, names []string) {
	t.Helper()
	des := make([]dirEntry, len(names))
	for i, n := range names {
		des[i] = dirEntry{name: n}
	}
	var got []string
	for _, k := range sortedByName(des) {
		got = append(got, des[k].name)
	}
	want := slices.Clone(names)
	slices.SortFunc(want, strings.Compare)
	if !slices.Equal(got, want) {
		t.Fatalf("sortedByName(%q) = %q, want %q", names, got, want)
	}
}

// TestChildPathsShareNames checks the paths built for a directory's
// entries, at the root and below it.
func TestChildPathsShareNames(t *testing.T) {
	ents := []listEntry{{name: "a"}, {name: "bc"}, {name: "d.txt"}}
	for _, tc := range []struct {
		rel  string
		want []string
	}{
		{".", []string{"a", "bc", "d.txt"}},
		{"", []string{"a", "bc", "d.txt"}},
		{"x/y", []string{"x/y/a", "x/y/bc", "x/y/d.txt"}},
	} {
		if got := childPaths(tc.rel, ents); !slices.Equal(got, tc.want) {
			t.Errorf("childPaths(%q) = %q, want %q", tc.rel, got, tc.want)
		}
	}
}

// BenchmarkListFiles1000 is workspace_list_files of a 1,000-entry
// directory: by default (names and types, from the directory itself) and
// with details (one lstat per entry).
func BenchmarkListFiles1000(b *testing.B) {
	files := map[string]string{}
	for i := range 1000 {
		files[fmt.Sprintf("many/f%04d.txt", i)] = "x"
	}
	f := newFixture(b, DefaultOptions(), files)
	for _, bc := range []struct {
		name string
		in   map[string]any
	}{
		{"names", map[string]any{"path": "many", "max_entries": 5000}},
		{"details", map[string]any{"path": "many", "max_entries": 5000, "details": true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if out := f.mustRun(b, "workspace_list_files", bc.in); len(out["entries"].(action.Entries)) != 1000 {
					b.Fatalf("%d entries", len(out["entries"].(action.Entries)))
				}
			}
		})
	}
}

// FuzzSortedByName: any set of names (split from the input at '/', which
// no name holds; NUL bytes dropped, which none holds either) sorts into
// byte order.
func FuzzSortedByName(f *testing.F) {
	f.Add("f0010.txt/f0001.txt/f0100.txt")
	f.Add("abcdefgh2/abcdefgh10/abcdef/abcdeg/\xff/\xc3\xa9")
	f.Fuzz(func(t *testing.T, s string) {
		var names []string
		for _, n := range strings.Split(strings.ReplaceAll(s, "\x00", ""), "/") {
			if n != "" {
				names = append(names, n)
			}
		}
		checkSortedByName(t, names)
	})
}
