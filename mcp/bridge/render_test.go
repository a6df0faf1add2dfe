package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"

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
