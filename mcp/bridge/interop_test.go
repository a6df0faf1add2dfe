package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
)

// These tests use real MCP peers from the npm registry: the official
// TypeScript SDK client (@modelcontextprotocol/sdk) and the reference
// filesystem server (@modelcontextprotocol/server-filesystem), installed in
// ../testdata/node by `npm ci --prefix mcp/testdata/node`.

// driveResult is what testdata/node/drive.mjs prints.
type driveResult struct {
	Error           string `json:"error"`
	ProtocolVersion string `json:"protocolVersion"`
	Tools           []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"inputSchema"`
		Annotations struct {
			ReadOnlyHint    *bool `json:"readOnlyHint"`
			DestructiveHint *bool `json:"destructiveHint"`
			OpenWorldHint   *bool `json:"openWorldHint"`
		} `json:"annotations"`
	} `json:"tools"`
	Calls []struct {
		Error   string `json:"error"`
		IsError bool   `json:"isError"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured action.Observation `json:"structuredContent"`
	} `json:"calls"`
	Elicitations []string `json:"elicitations"`
}

type sdkCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments,omitempty"`
}

// drive runs the SDK client with a scenario and decodes its report.
func drive(t *testing.T, scenario map[string]any) driveResult {
	t.Helper()
	dir := nodeDir(t)
	raw, err := json.Marshal(scenario)
	require.NoError(t, err)
	cmd := exec.CommandContext(testContext(t, 60*time.Second), "node", filepath.Join(dir, "drive.mjs"), string(raw))
	cmd.Dir = dir
	// Killed at the deadline, node may leave the bridge it started holding
	// the output pipe: Output returns at most this long after the kill.
	cmd.WaitDelay = 5 * time.Second
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	require.NoError(t, err, "drive.mjs: %s", out)
	var res driveResult
	require.NoError(t, json.Unmarshal(out, &res), "drive.mjs printed: %s", out)
	require.Empty(t, res.Error)
	require.Len(t, res.Calls, len(scenario["calls"].([]sdkCall)))
	return res
}

const bridgeConfig = `
harness:
  auto-approved-actions: [workspace_read_file, workspace_list_files, workspace_search_text]
  mcp:
    bridge:
      trusted-actions: [workspace_apply_patch]
`

// bridgePeers returns, for each transport, the scenario keys that reach a
// Harness bridge on root: over stdio the test binary in bridge mode, over
// streamable HTTP an in-process server on a loopback port.
func bridgePeers(t *testing.T, root, yaml string) map[string]map[string]any {
	t.Helper()
	cfgPath := filepath.Join(t.TempDir(), "harness.yaml")
	mustWrite(t, cfgPath, yaml)
	exe, err := os.Executable()
	require.NoError(t, err)
	stdio := map[string]any{
		"transport": "stdio", "command": exe,
		"env": map[string]string{"HARNESS_MCP_TEST_MODE": "bridge", "HARNESS_MCP_TEST_ROOT": root, "HARNESS_MCP_TEST_CONFIG": cfgPath},
	}

	cfg := testConfig(t, yaml)
	cfg.Harness.Workspace.Root = root
	h, closeFn, err := buildHarness(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(closeFn)
	// Over HTTP confirmed actions run through the trusted token flow, as in
	// harness mcp; the stdio peer (the test binary) re-previews instead.
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()), WithTrustFlow(newTrustedFlow(t, h)))
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeHTTP(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("the HTTP bridge did not stop when its context ended")
		}
	})
	httpPeer := map[string]any{"transport": "http", "url": "http://" + ln.Addr().String() + "/mcp"}
	return map[string]map[string]any{"stdio": stdio, "streamable HTTP": httpPeer}
}

func scenario(peer map[string]any, calls []sdkCall, extra map[string]any) map[string]any {
	s := map[string]any{"calls": calls}
	for k, v := range peer {
		s[k] = v
	}
	for k, v := range extra {
		s[k] = v
	}
	return s
}

func TestSDKClientDrivesBridge(t *testing.T) {
	nodeDir(t)
	root := workspaceRoot(t)
	for transport, peer := range bridgePeers(t, root, bridgeConfig) {
		t.Run(transport, func(t *testing.T) {
			res := drive(t, scenario(peer, []sdkCall{
				{"workspace_read_file", map[string]any{"path": "a.txt"}},
				{"workspace_search_text", map[string]any{"query": "needle"}},
				{"workspace_read_file", map[string]any{"path": "../outside.txt"}},
				{"workspace_list_files", map[string]any{"details": true}},
				{"workspace_run_shell", map[string]any{"command": "ls"}},
				{"workspace_read_file", map[string]any{"path": 7}},
			}, nil))

			assert.Equal(t, "2025-11-25", res.ProtocolVersion, "negotiated the SDK's protocol revision")
			tools := map[string]int{}
			for i, tool := range res.Tools {
				tools[tool.Name] = i
			}
			for _, name := range []string{"workspace_read_file", "workspace_list_files", "workspace_search_text", "workspace_apply_patch", "workspace_run_shell"} {
				assert.Contains(t, tools, name)
			}
			assert.NotContains(t, tools, "mcp_call", "not offered without a configured MCP server")
			read := res.Tools[tools["workspace_read_file"]]
			require.NotNil(t, read.Annotations.ReadOnlyHint)
			assert.True(t, *read.Annotations.ReadOnlyHint, "read-risk actions say readOnlyHint")
			assert.JSONEq(t, `["path"]`, string(mustField(t, read.InputSchema, "required")), "the input schema is the registry's")
			for _, name := range []string{"workspace_apply_patch", "workspace_run_shell"} {
				w := res.Tools[tools[name]]
				require.NotNil(t, w.Annotations.DestructiveHint, name)
				assert.True(t, *w.Annotations.DestructiveHint, "%s says destructiveHint", name)
				assert.False(t, *w.Annotations.ReadOnlyHint)
			}

			c := res.Calls
			assert.False(t, c[0].IsError)
			assert.Equal(t, "hello world\nsecond line\n", c[0].Content[0].Text)
			assert.Equal(t, action.StatusOK, c[0].Structured.Status)
			assert.Equal(t, action.SourceWorkspace, c[0].Structured.Source)

			assert.Equal(t, "sub/b.txt:1: a needle here", c[1].Content[0].Text, "search results read path:line: text")

			assert.True(t, c[2].IsError)
			assert.Equal(t, action.CodePathOutsideRoot, c[2].Structured.Code)
			assert.Equal(t, action.StatusBlocked, c[2].Structured.Status)
			assert.Contains(t, c[2].Content[0].Text, "path_outside_root")

			assert.Regexp(t, `(?m)^sub/\t\d+\t\S+$`, c[3].Content[0].Text, "a directory's line ends its path in /, then its size and time")

			assert.True(t, c[4].IsError)
			assert.Equal(t, action.CodeTrustRequired, c[4].Structured.Code)
			assert.Equal(t, action.SourcePolicy, c[4].Structured.Source)
			assert.Contains(t, c[4].Structured.Message, "harness.mcp.bridge.trusted-actions", "says how to allow it")

			assert.True(t, c[5].IsError)
			assert.Equal(t, action.CodeInvalidInput, c[5].Structured.Code, "the guard validates arguments")
		})
	}
}

func mustField(t *testing.T, raw json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &m))
	return m[key]
}

func TestSDKClientConfirmsTrustedAction(t *testing.T) {
	nodeDir(t)
	patch := func(content string) sdkCall {
		return sdkCall{"workspace_apply_patch", map[string]any{"path": "a.txt", "content": content}}
	}
	tests := []struct {
		name     string
		elicit   string // "" = the client has no elicitation capability
		code     action.Code
		want     string // a.txt afterwards
		message  string
		askedFor bool
	}{
		{"accepted: runs exactly the previewed action", "accept", "", "confirmed\n", "", true},
		{"declined: refused, nothing written", "decline", action.CodeTrustRequired, "hello world\nsecond line\n", "declined", true},
		{"no elicitation support: refused with how to allow it", "", action.CodeTrustRequired, "hello world\nsecond line\n", "elicitation", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := workspaceRoot(t)
			for transport, peer := range bridgePeers(t, root, bridgeConfig) {
				mustWrite(t, filepath.Join(root, "a.txt"), "hello world\nsecond line\n")
				res := drive(t, scenario(peer, []sdkCall{patch("confirmed\n")}, map[string]any{"elicit": tc.elicit}))
				c := res.Calls[0]
				assert.Empty(t, c.Error, transport)
				assert.Equal(t, tc.code, c.Structured.Code, "%s: %s", transport, c.Structured.Message)
				assert.Contains(t, c.Structured.Message, tc.message, transport)
				got, err := os.ReadFile(filepath.Join(root, "a.txt"))
				require.NoError(t, err)
				assert.Equal(t, tc.want, string(got), transport)
				if tc.askedFor {
					require.Len(t, res.Elicitations, 1, transport)
					assert.Contains(t, res.Elicitations[0], "workspace_apply_patch")
					assert.Contains(t, res.Elicitations[0], "confirmed", "the person sees what will run")
				} else {
					assert.Empty(t, res.Elicitations, transport)
				}
			}
		})
	}
}

// TestSDKClientThroughBridgeToFilesystemServer chains both directions: the
// TypeScript SDK client calls harness mcp, which calls the reference
// filesystem server through an imported mcp.<server>.<tool> action.
func TestSDKClientThroughBridgeToFilesystemServer(t *testing.T) {
	dir := nodeDir(t)
	root := workspaceRoot(t)
	fsServer := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	yaml := fmt.Sprintf(`
harness:
  auto-approved-actions: [mcp.fs.read_text_file]
  mcp:
    servers:
      fs:
        command: [node, %q, %q]
        tools: [read_text_file, write_file]
        timeout-ms: 10000
        register-tools: true
`, fsServer, root)
	peer := bridgePeers(t, root, yaml)["stdio"]
	res := drive(t, scenario(peer, []sdkCall{
		{"mcp.fs.read_text_file", map[string]any{"path": filepath.Join(root, "a.txt")}},
		{"mcp.fs.write_file", map[string]any{"path": filepath.Join(root, "a.txt"), "content": "pwned"}},
	}, nil))
	names := map[string]bool{}
	for _, tool := range res.Tools {
		names[tool.Name] = true
		if tool.Name == "mcp.fs.read_text_file" {
			require.NotNil(t, tool.Annotations.ReadOnlyHint)
			assert.True(t, *tool.Annotations.ReadOnlyHint, "the imported tool keeps its read-only nature")
		}
	}
	assert.True(t, names["mcp.fs.read_text_file"])
	assert.False(t, names["mcp.fs.list_directory"], "tools not on the allowlist are not imported")
	c := res.Calls
	require.False(t, c[0].IsError, c[0].Content)
	assert.Equal(t, "hello world\nsecond line\n", c[0].Content[0].Text)
	assert.Equal(t, action.SourceMCP, c[0].Structured.Source)
	assert.True(t, c[1].IsError)
	assert.Equal(t, action.CodeTrustRequired, c[1].Structured.Code, "a destructive imported tool needs trust")
	got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
	assert.Equal(t, "hello world\nsecond line\n", string(got))
}

// TestSDKClientGetsTextOnce: over every transport, a read's content and a
// listing's names reach the SDK client once, in the text block, and the
// structured content names them in in_text; so do a listing's sizes and
// modification times.
func TestSDKClientGetsTextOnce(t *testing.T) {
	nodeDir(t)
	root := workspaceRoot(t)
	for transport, peer := range bridgePeers(t, root, bridgeConfig) {
		t.Run(transport, func(t *testing.T) {
			res := drive(t, scenario(peer, []sdkCall{
				{"workspace_read_file", map[string]any{"path": "a.txt"}},
				{"workspace_list_files", map[string]any{}},
				{"workspace_list_files", map[string]any{"details": true}},
				{"workspace_list_files", map[string]any{"details": false}},
			}, nil))
			read, names, details, plain := res.Calls[0], res.Calls[1], res.Calls[2], res.Calls[3]
			assert.Equal(t, "hello world\nsecond line\n", read.Content[0].Text)
			assert.NotContains(t, read.Structured.Payload, "content")
			assert.Equal(t, []any{"content"}, read.Structured.Payload[InText])
			assert.Equal(t, "a.txt", read.Structured.Payload["path"], "what the text does not carry stays")

			assert.Equal(t, "a.txt\nsub/", plain.Content[0].Text)
			assert.NotContains(t, plain.Structured.Payload, "entries")
			assert.Equal(t, []any{"entries"}, plain.Structured.Payload[InText], "details: false lists names and types, all in the text")
			assert.Equal(t, names.Content, plain.Content, "the default is details: false")
			assert.Equal(t, names.Structured.Payload, plain.Structured.Payload)

			// With details, each line is the path, a tab, the size and a
			// tab and the modification time, as lstat gives them.
			var want []string
			for _, name := range []string{"a.txt", "sub"} {
				fi, err := os.Lstat(filepath.Join(root, name))
				require.NoError(t, err)
				line := name
				if fi.IsDir() {
					line += "/"
				}
				want = append(want, fmt.Sprintf("%s\t%d\t%s", line, fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano)))
			}
			assert.Equal(t, strings.Join(want, "\n"), details.Content[0].Text)
			assert.NotContains(t, details.Structured.Payload, "entries", "sizes and times are in the text: the entries are not sent twice")
			assert.Equal(t, []any{"entries"}, details.Structured.Payload[InText])
		})
	}
}
