package config

import (
	"reflect"
	"sort"
	"strings"
)

// suggestKey says what a person probably meant by an unknown key name in
// the mapping at path key of type t: a near sibling ("did you mean
// write-enabled?"), the same key at another level ("did you mean
// harness.workspace.root?"), or the keys that are valid there. sibling is
// the near key, when there is one.
func suggestKey(t reflect.Type, key, name string) (why, sibling string) {
	names := make([]string, 0, t.NumField())
	for n := range yamlFields(t) {
		names = append(names, n)
	}
	sort.Strings(names)
	if near, ok := nearest(name, names); ok {
		return "did you mean " + near + "?", near
	}
	var elsewhere []string
	for _, p := range keyPaths(reflect.TypeFor[Config](), "") {
		if p == name || strings.HasSuffix(p, "."+name) {
			elsewhere = append(elsewhere, p)
		}
	}
	if len(elsewhere) > 0 {
		return "did you mean " + strings.Join(elsewhere, " or ") + "?", ""
	}
	if len(names) == 0 {
		return "nothing is set here", ""
	}
	return "the keys here are " + strings.Join(names, ", "), ""
}

// keyPaths lists the paths of every key reachable through mappings of
// fixed keys (not through lists or mappings of names).
func keyPaths(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		p := join(prefix, name)
		out = append(out, p)
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, keyPaths(ft, p)...)
		}
	}
	return out
}

// nearest returns the candidate closest to s when it is close enough to be
// a slip of the fingers (a few letters typed wrong, swapped, left out or
// added, or a different case) or a shortening of it, and false otherwise.
func nearest(s string, candidates []string) (string, bool) {
	best, bestD := "", -1
	ls := strings.ToLower(s)
	for _, c := range candidates {
		lc := strings.ToLower(c)
		d := distance(ls, lc)
		if len(ls) >= 3 && strings.HasPrefix(lc, ls) {
			d = min(d, 1) // sha for sha256
		}
		if bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD < 0 {
		return "", false
	}
	return best, bestD <= max(2, len(s)/3)
}

// distance is the optimal string alignment distance: the insertions,
// deletions, substitutions and swaps of neighbours that turn a into b.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// three rows: i-2, i-1, i
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
