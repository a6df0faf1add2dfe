package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/conformance")

// TestConformanceRecordedStdioSession replays a recorded 2025-11-25 client
// session against the bridge over stdio and compares the answers with
// testdata/conformance/*.golden.json. Volatile fields (action ids,
// latencies) are normalised and payloads reduced to their presence; tools/list is pinned by names and
// annotations. Regenerate with -update after a deliberate change.
func TestConformanceRecordedStdioSession(t *testing.T) {
	const name = "stdio_2025-11-25"
	in, err := os.ReadFile(filepath.Join("testdata", "conformance", name+".requests.jsonl"))
	require.NoError(t, err)
	root := workspaceRoot(t)
	cfg := testConfig(t, `
harness:
  auto-approved-actions: [workspace_read_file, workspace_list_files, workspace_search_text]
`)
	cfg.Harness.Workspace.Root = root
	h, closeFn, err := buildHarness(cfg, nil)
	require.NoError(t, err)
	defer closeFn()
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, srv.ServeStdio(context.Background(), bytes.NewReader(in), &out))

	var answers []map[string]any
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		answers = append(answers, normalizeAnswer(m))
	}
	sort.Slice(answers, func(i, j int) bool { return answers[i]["id"].(float64) < answers[j]["id"].(float64) })
	got, err := json.MarshalIndent(answers, "", "  ")
	require.NoError(t, err)
	golden := filepath.Join("testdata", "conformance", name+".golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./mcp/bridge -run Conformance -update to create it")
	require.JSONEq(t, string(want), string(got))
}

func normalizeAnswer(m map[string]any) map[string]any {
	res, _ := m["result"].(map[string]any)
	if res == nil {
		return m
	}
	if tools, ok := res["tools"].([]any); ok {
		pinned := make([]any, 0, len(tools))
		for _, tl := range tools {
			tm := tl.(map[string]any)
			pinned = append(pinned, map[string]any{"name": tm["name"], "annotations": tm["annotations"]})
		}
		res["tools"] = pinned
	}
	if sc, ok := res["structuredContent"].(map[string]any); ok {
		sc["action_id"] = "ACTION_ID"
		sc["latency_ms"] = 0
		// The payload is the runtime's contract, pinned by its own tests;
		// here only its presence matters.
		if p, ok := sc["payload"].(map[string]any); ok {
			sc["payload"] = map[string]any{"keys": len(p) > 0}
		}
	}
	if info, ok := res["serverInfo"].(map[string]any); ok {
		info["version"] = "VERSION"
	}
	return m
}
