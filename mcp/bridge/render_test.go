package bridge

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
)

func TestRender(t *testing.T) {
	ok := func(p map[string]any) action.Observation {
		return action.Observation{Status: action.StatusOK, Payload: p}
	}
	tests := []struct {
		name string
		obs  action.Observation
		want string
	}{
		{"file content as is", ok(map[string]any{"path": "a.txt", "content": "hello\n"}), "hello\n"},
		{"truncated file says so", ok(map[string]any{"path": "a.txt", "content": "a\n", "truncated": true, "lines": 9, "size": 90}),
			"a\n\n… (truncated: a.txt has 9 lines, 90 bytes)"},
		{"binary file", ok(map[string]any{"path": "b.bin", "content": "", "binary": true, "size": 3}), "b.bin: binary file, 3 bytes"},
		{"search matches as path:line: text", ok(map[string]any{"query": "x", "matches": []map[string]any{
			{"path": "a.go", "line": 3, "text": "x := 1"}, {"path": "b/c.go", "line": 10, "text": "return x"}}}),
			"a.go:3: x := 1\nb/c.go:10: return x"},
		{"search matches decoded from JSON", ok(map[string]any{"query": "x", "matches": []any{map[string]any{"path": "a.go", "line": 3, "text": "x"}}}), "a.go:3: x"},
		{"no matches", ok(map[string]any{"query": "zz", "matches": []any{}}), "no matches for zz"},
		{"listing with directories marked", ok(map[string]any{"entries": []map[string]any{{"path": "a.txt", "type": "file"}, {"path": "sub", "type": "dir"}}, "truncated": true}),
			"a.txt\nsub/\n… (more entries not shown)"},
		{"diff as a diff", ok(map[string]any{"diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}), "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b"},
		{"empty diff", ok(map[string]any{"diff": ""}), "(no changes)"},
		{"command output", ok(map[string]any{"argv": []string{"git", "log", "--format=%h %s"}, "exit_code": 0, "stdout": "abc\n", "stderr": ""}),
			"$ git log \"--format=%h %s\"\nexit code 0\n--- stdout\nabc"},
		{"MCP tool text", ok(map[string]any{"server": "fs", "tool": "read", "text": "hi"}), "hi"},
		{"anything else as JSON", ok(map[string]any{"n": 1}), "{\n  \"n\": 1\n}"},
		{"refusal", action.Observation{Status: action.StatusBlocked, Code: action.CodePathOutsideRoot, Message: "nope"}, "blocked (path_outside_root): nope"},
		{"failure with partial output", action.Observation{Status: action.StatusError, Code: action.CodeTimeout, Message: "slow",
			Payload: map[string]any{"stdout": "partial"}}, "error (timeout): slow\n\n--- stdout\npartial"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Render(tc.obs))
		})
	}
}

func TestRenderPreview(t *testing.T) {
	tests := []struct {
		name string
		p    map[string]any
		want string
	}{
		{"diff", map[string]any{"diff": "-a\n+b\n", "files": []any{}}, "-a\n+b"},
		{"argv quoted so the person sees each argument", map[string]any{"argv": []any{"rg", "a b", "x;y"}}, "$ rg \"a b\" \"x;y\""},
		{"argv with limits", map[string]any{"argv": []string{"ls"}, "timeout_seconds": 10}, "$ ls\n{\n  \"timeout_seconds\": 10\n}"},
		{"input", map[string]any{"input": map[string]any{"path": "a"}}, "{\n  \"input\": {\n    \"path\": \"a\"\n  }\n}"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, renderPreview(tc.p))
		})
	}
}

// TestTypedListingRendersAsGeneric: a runtime's typed listing renders to
// the text its generic form (maps, as decoded from JSON) renders to, and
// is carried by the text exactly when that form is, for random entries:
// line breaks, slashes and tabs in names, names that are not the path's
// last element, every type, with and without details.
func TestTypedListingRendersAsGeneric(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for range 3000 {
		es := make(action.Entries, rng.IntN(4))
		for i := range es {
			name := pick("a", "b.txt", "x\ny", "r\r", "", "t\tab", "dir/")
			path := pick("", "sub/", "a/b/") + name
			if rng.IntN(8) == 0 {
				name = pick("other", "b.txt")
			}
			es[i] = action.Entry{Path: path, Name: name, Type: pick("file", "dir", "symlink", "other")}
			if rng.IntN(2) == 0 {
				es[i].Detailed, es[i].Size, es[i].ModTime = true, rng.Int64N(1000), pick("2026-01-01T00:00:00Z", "", "bad\ttime", "x\n")
			}
		}
		truncated := rng.IntN(4) == 0
		typed := map[string]any{"entries": es, "truncated": truncated}
		generic := map[string]any{"entries": es.Generic(), "truncated": truncated}
		gotText, gotExact := renderEntriesExact(typed, false)
		wantText, wantExact := renderEntriesExact(generic, false)
		require.Equal(t, wantText, gotText, "%+v", es)
		require.Equal(t, wantExact, gotExact, "%+v", es)
		require.Equal(t, entriesInText(generic["entries"]), entriesInText(typed["entries"]), "%+v", es)
	}
}

// TestHasAnyOf holds the eight-bytes-at-a-time scan to a byte loop on
// random strings of every length up to 40, from an alphabet rich in the
// bytes looked for and their neighbours (borrows of the zero-byte test).
func TestHasAnyOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	alphabet := []byte{'\n', '\r', '/', 0, 1, '\v', '\f', '.', '0', 'a', 0x80, 0xff, '\t', '\x0e'}
	for range 20000 {
		b := make([]byte, rng.IntN(41))
		for i := range b {
			b[i] = 'a'
			if rng.IntN(6) == 0 {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		s := string(b)
		for _, set := range [][3]byte{{'\n', '\r', '/'}, {'\n', '\r', 0}} {
			want := false
			for i := range len(s) {
				if s[i] == set[0] || s[i] == set[1] || (set[2] != 0 && s[i] == set[2]) {
					want = true
				}
			}
			if got := hasAnyOf(s, set[0], set[1], set[2]); got != want {
				t.Fatalf("hasAnyOf(%q, %q) = %v, want %v", s, set, got, want)
			}
		}
	}
}
