package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

// These tests use a real MCP server from the npm registry: the reference
// filesystem server (@modelcontextprotocol/server-filesystem), installed in
// testdata/node by `npm ci --prefix mcp/testdata/node`. The bridge's tests
// (package mcp/bridge) drive `harness mcp` with the official TypeScript SDK
// client from the same directory.

// TestFilesystemServerThroughMCPCall configures the reference filesystem
// server as an MCP server and reaches it only through mcp_call.
func TestFilesystemServerThroughMCPCall(t *testing.T) {
	dir := nodeDir(t)
	root := workspaceRoot(t)
	fsServer := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	yaml := fmt.Sprintf(`
harness:
  auto-approved-actions: [mcp_call]
  workspace: {root: %q}
  mcp:
    servers:
      fs:
        command: [node, %q, %q]
        tools: [read_text_file, list_directory]
        timeout-ms: 10000
        register-tools: true
`, root, fsServer, root)
	ev := &events{}
	h, closeFn, err := buildHarness(testConfig(t, yaml), ev)
	require.NoError(t, err)
	defer closeFn()
	ctx := runtime.WithPrincipal(context.Background(), "test")
	read := call("fs", "read_text_file", map[string]any{"path": filepath.Join(root, "a.txt")})

	t.Run("negotiates the reference server's protocol revision", func(t *testing.T) {
		cn := mcpClientOf(t, h).conns["fs"]
		cn.mu.Lock()
		defer cn.mu.Unlock()
		assert.Equal(t, "2025-11-25", cn.protocol)
	})
	t.Run("allowed tool", func(t *testing.T) {
		obs := h.Execute(ctx, read)
		require.Equal(t, action.StatusOK, obs.Status, obsString(obs))
		assert.Equal(t, action.SourceMCP, obs.Source)
		assert.Equal(t, "hello world\nsecond line\n", obs.Payload["text"])
		obs = h.Execute(ctx, call("fs", "list_directory", map[string]any{"path": root}))
		require.Equal(t, action.StatusOK, obs.Status, obsString(obs))
		assert.Contains(t, obs.Payload["text"], "[DIR] sub")
	})
	t.Run("imported schema refuses bad arguments before the call", func(t *testing.T) {
		obs := h.Execute(ctx, call("fs", "read_text_file", map[string]any{"path": 42}))
		assert.Equal(t, action.StatusBlocked, obs.Status)
		assert.Equal(t, action.CodeInvalidInput, obs.Code, obsString(obs))
		sc, ok := h.Registry().Lookup("mcp.fs.read_text_file")
		require.True(t, ok, "register-tools registered the tool as an action")
		assert.Equal(t, "read", string(sc.Risk), "readOnlyHint makes it read risk")
	})
	t.Run("tool not on the allowlist is refused by the guard", func(t *testing.T) {
		obs := h.Execute(ctx, call("fs", "write_file", map[string]any{"path": filepath.Join(root, "a.txt"), "content": "pwned"}))
		assert.Equal(t, action.SourcePolicy, obs.Source)
		assert.Equal(t, action.StatusBlocked, obs.Status)
		assert.Equal(t, action.CodeCommandNotAllowed, obs.Code, obsString(obs))
		got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
		assert.Equal(t, "hello world\nsecond line\n", string(got))
	})
	t.Run("server outside its allowed directories answers with a tool error", func(t *testing.T) {
		obs := h.Execute(ctx, call("fs", "read_text_file", map[string]any{"path": "/etc/hostname"}))
		assert.Equal(t, action.SourceMCP, obs.Source)
		assert.Equal(t, action.StatusError, obs.Status)
		assert.Equal(t, action.CodeMCPError, obs.Code, obsString(obs))
	})
	t.Run("server killed mid-run is restarted", func(t *testing.T) {
		c := mcpClientOf(t, h)
		pid := c.conns["fs"].pid()
		require.NotZero(t, pid)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
		obs := h.Execute(ctx, read)
		// Either the death was seen before the call (restarted, ok) or
		// during it (mcp_error); never a crash of the loop.
		if obs.Status != action.StatusOK {
			assert.Equal(t, action.CodeMCPError, obs.Code, obsString(obs))
			obs = h.Execute(ctx, read)
		}
		require.Equal(t, action.StatusOK, obs.Status, obsString(obs))
		assert.Equal(t, "hello world\nsecond line\n", obs.Payload["text"])
		assert.NotEqual(t, pid, c.conns["fs"].pid(), "a new server process answered")
	})
	assert.Contains(t, ev.Types(CallAction), "post_action@test")
}

// mcpClientOf finds the Client that buildHarness mounted on h.
func mcpClientOf(t *testing.T, h *runtime.Harness) *Client {
	t.Helper()
	mountedMu.Lock()
	defer mountedMu.Unlock()
	c, ok := mountedClients[h]
	require.True(t, ok)
	return c
}
