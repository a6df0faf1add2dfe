package action

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomName is a file name as a hostile workspace may hold one: ASCII,
// characters JSON and HTML escape, line breaks, U+2028, invalid UTF-8.
func randomName(rng *rand.Rand) string {
	parts := []string{"a", "Z", "0", ".", "-", "_", " ", "<", ">", "&", `"`, `\`, "\n", "\t", "\x01", "\x7f", "é", "世", "\u2028", "\u2029", "\xff", "\xc3", "💥"}
	var b strings.Builder
	for range 1 + rng.IntN(12) {
		b.WriteString(parts[rng.IntN(len(parts))])
	}
	return b.String()
}

func randomEntries(rng *rand.Rand) Entries {
	es := make(Entries, rng.IntN(6))
	for i := range es {
		name := randomName(rng)
		es[i] = Entry{Path: randomName(rng) + "/" + name, Name: name, Type: []string{"file", "dir", "symlink", "other"}[rng.IntN(4)]}
		if rng.IntN(2) == 0 {
			es[i].Detailed, es[i].Size, es[i].ModTime = true, rng.Int64N(1<<40)-5, randomName(rng)
		}
	}
	return es
}

// TestEntriesEncodeAsTheirGenericForm: a typed listing's JSON, with and
// without HTML escaping, and its canonical JSON are byte for byte those
// of the []any of maps it stands for, inside a payload as on its own.
func TestEntriesEncodeAsTheirGenericForm(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	encode := func(v any, html bool) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	for range 2000 {
		es := randomEntries(rng)
		typed := map[string]any{"entries": es, "truncated": true}
		generic := map[string]any{"entries": es.Generic(), "truncated": true}
		for _, html := range []bool{true, false} {
			if got, want := encode(typed, html), encode(generic, html); got != want {
				t.Fatalf("html %v:\n typed   %s\n generic %s", html, got, want)
			}
		}
		got, err := Canonical(typed)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Canonical(generic)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("canonical:\n typed   %s\n generic %s", got, want)
		}
		var back []any
		if err := json.Unmarshal([]byte(encode(es, true)), &back); err != nil || len(back) != len(es) {
			t.Fatalf("decode %v: %d entries of %d", err, len(back), len(es))
		}
	}
	if got := encode(Entries{}, true); got != "[]\n" {
		t.Errorf("no entries encode as %q, want []", got)
	}
}

// TestEntriesMapStrings: every string of every entry goes through f, the
// copy is new (the original is untouched), and changed says whether any
// string differs.
func TestEntriesMapStrings(t *testing.T) {
	es := Entries{{Path: "a/b", Name: "b", Type: "file", Detailed: true, Size: 3, ModTime: "t"}, {Path: "c", Name: "c", Type: "dir"}}
	seen := map[string]int{}
	out, changed := es.MapStrings(func(s string) string { seen[s]++; return s })
	if changed || len(out.(Entries)) != 2 || seen["a/b"] != 1 || seen["b"] != 1 || seen["file"] != 1 || seen["t"] != 1 || seen["c"] != 2 || seen["dir"] != 1 {
		t.Fatalf("identity: changed %v, strings seen %v", changed, seen)
	}
	out, changed = es.MapStrings(func(s string) string { return strings.ReplaceAll(s, "b", "X") })
	got := out.(Entries)
	if !changed || got[0].Path != "a/X" || got[0].Name != "X" || got[0].Size != 3 || es[0].Path != "a/b" {
		t.Fatalf("replace: changed %v, got %+v, original %+v", changed, got, es)
	}
}
