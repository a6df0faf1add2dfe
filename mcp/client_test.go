package mcp

import (
	"context"
	"fmt"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/mcp/internal/mcptest"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
)

// fakeHarness is a Harness whose MCP server "fake" is the test binary.
func fakeHarness(t *testing.T, extra string) (*runtime.Harness, *events) {
	t.Helper()
	yaml := fmt.Sprintf(`
harness:
  auto-approved-actions: [mcp_call, mcp.fake.echo]
  workspace: {root: %q}
  mcp:
    servers:
      fake:
        command: [%s]
        tools: [echo, fail, slow, crash]
        timeout-ms: 3000
        register-tools: true
      off:
        enabled: false
        command: [/bin/false]
        tools: [echo]
%s`, t.TempDir(), quoteList(fakeCommand(t)), extra)
	ev := &events{}
	h, closeFn, err := buildHarness(testConfig(t, yaml), ev)
	require.NoError(t, err)
	t.Cleanup(closeFn)
	return h, ev
}

func call(server, tool string, args map[string]any) action.Action {
	in := map[string]any{"server": server, "tool": tool}
	if args != nil {
		in["arguments"] = args
	}
	return action.Action{Name: CallAction, Input: in}
}

func TestMCPCallObservations(t *testing.T) {
	h, ev := fakeHarness(t, "")
	ctx := runtime.WithPrincipal(context.Background(), "test")
	tests := []struct {
		name    string
		a       action.Action
		source  action.Source
		status  action.Status
		code    action.Code
		message string
	}{
		{"allowed tool runs", call("fake", "echo", map[string]any{"text": "hi"}), action.SourceMCP, action.StatusOK, "", ""},
		{"tool error is mcp_error", call("fake", "fail", nil), action.SourceMCP, action.StatusError, action.CodeMCPError, "it failed on purpose"},
		{"unconfigured server is refused by the guard", call("nope", "echo", nil), action.SourcePolicy, action.StatusBlocked, action.CodeActionDisabled, "not configured"},
		{"disabled server is refused by the guard", call("off", "echo", nil), action.SourcePolicy, action.StatusBlocked, action.CodeActionDisabled, "disabled"},
		{"tool not on the allowlist is refused by the guard", call("fake", "wipe", nil), action.SourcePolicy, action.StatusBlocked, action.CodeCommandNotAllowed, "not allowed"},
		{"arguments are validated against the imported schema", call("fake", "echo", map[string]any{"text": 5}), action.SourcePolicy, action.StatusBlocked, action.CodeInvalidInput, "arguments.text"},
		{"missing required argument", call("fake", "echo", map[string]any{}), action.SourcePolicy, action.StatusBlocked, action.CodeInvalidInput, "text"},
		{"per-tool action runs", action.Action{Name: "mcp.fake.echo", Input: map[string]any{"text": "x"}}, action.SourceMCP, action.StatusOK, "", ""},
		{"per-tool action needs trust unless auto-approved", action.Action{Name: "mcp.fake.fail", Input: map[string]any{}}, action.SourcePolicy, action.StatusBlocked, action.CodeTrustRequired, ""},
		{"tool not allowed is not registered as an action", action.Action{Name: "mcp.fake.wipe", Input: map[string]any{}}, action.SourcePolicy, action.StatusBlocked, action.CodeUnknownAction, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := h.Execute(ctx, tc.a)
			assert.Equal(t, tc.source, obs.Source, obsString(obs))
			assert.Equal(t, tc.status, obs.Status, obsString(obs))
			assert.Equal(t, tc.code, obs.Code, obsString(obs))
			assert.Contains(t, obs.Message, tc.message)
		})
	}
	t.Run("events are emitted for MCP calls and refusals", func(t *testing.T) {
		types := ev.Types(CallAction)
		assert.Contains(t, types, "pre_action@test")
		assert.Contains(t, types, "post_action@test")
		assert.Contains(t, types, "error@test")
	})
}

func TestMCPCallPayload(t *testing.T) {
	h, _ := fakeHarness(t, "")
	obs := h.Execute(context.Background(), call("fake", "echo", map[string]any{"text": "hi"}))
	require.Equal(t, action.StatusOK, obs.Status, obsString(obs))
	assert.Equal(t, "fake", obs.Payload["server"])
	assert.Equal(t, "echo", obs.Payload["tool"])
	assert.Equal(t, "echo: hi", obs.Payload["text"])
	sc, ok := obs.Payload["structured_content"].(map[string]any)
	require.True(t, ok, "structured_content: %#v", obs.Payload["structured_content"])
	cn := mcpClientOf(t, h).conns["fake"]
	cn.mu.Lock()
	assert.Equal(t, "2026-07-28", cn.protocol, "a modern server gets the stateless protocol")
	cn.mu.Unlock()
	assert.Equal(t, "hi", sc["text"])
	content, ok := obs.Payload["content"].([]any)
	require.True(t, ok)
	require.Len(t, content, 1)
	assert.Equal(t, "text", content[0].(map[string]any)["type"])
}

func TestMCPToolsImportedAsActions(t *testing.T) {
	h, _ := fakeHarness(t, "")
	tests := []struct {
		name string
		risk schema.Risk
	}{
		{"mcp.fake.echo", schema.RiskRead},   // readOnlyHint
		{"mcp.fake.fail", schema.RiskWrite},  // no hint: destructive by default
		{"mcp.fake.crash", schema.RiskWrite}, // no hint
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc, ok := h.Registry().Lookup(tc.name)
			require.True(t, ok)
			assert.Equal(t, tc.risk, sc.Risk)
			assert.True(t, sc.Trusted)
			assert.Equal(t, schema.RuntimeMCP, sc.Runtime)
		})
	}
	sc, _ := h.Registry().Lookup("mcp.fake.echo")
	assert.Error(t, sc.Validate(map[string]any{"text": 1}), "the imported schema is the tool's")
	assert.NoError(t, sc.Validate(map[string]any{"text": "ok"}))
}

func TestMCPCallTimeout(t *testing.T) {
	h, _ := fakeHarness(t, "")
	// The server's timeout-ms is 3000; this call would take 10 s.
	start := time.Now()
	obs := h.Execute(context.Background(), call("fake", "slow", map[string]any{"ms": 10000}))
	assert.Equal(t, action.SourceMCP, obs.Source)
	assert.Equal(t, action.StatusError, obs.Status)
	assert.Equal(t, action.CodeTimeout, obs.Code, obsString(obs))
	assert.Less(t, time.Since(start), 8*time.Second)
	// The server is still usable after a timed-out call.
	obs = h.Execute(context.Background(), call("fake", "echo", map[string]any{"text": "after"}))
	assert.Equal(t, action.StatusOK, obs.Status, obsString(obs))
}

func TestMCPServerRestartedAfterItDies(t *testing.T) {
	h, _ := fakeHarness(t, "")
	ctx := context.Background()
	first := h.Execute(ctx, call("fake", "echo", map[string]any{"text": "1"}))
	require.Equal(t, action.StatusOK, first.Status, obsString(first))
	pid1 := first.Payload["structured_content"].(map[string]any)["pid"]

	// The server dies in the middle of a call: an observation, not a crash.
	obs := h.Execute(ctx, call("fake", "crash", nil))
	assert.Equal(t, action.SourceMCP, obs.Source)
	assert.Equal(t, action.StatusError, obs.Status)
	assert.Equal(t, action.CodeMCPError, obs.Code, obsString(obs))

	// The next call starts it again.
	obs = h.Execute(ctx, call("fake", "echo", map[string]any{"text": "2"}))
	require.Equal(t, action.StatusOK, obs.Status, obsString(obs))
	pid2 := obs.Payload["structured_content"].(map[string]any)["pid"]
	assert.NotEqual(t, pid1, pid2, "a new process answered")
}

func TestMCPServerKilledBetweenCalls(t *testing.T) {
	c, err := NewClient(context.Background(), testConfig(t, fmt.Sprintf(`
harness:
  mcp:
    servers:
      fake: {command: [%s], tools: [echo]}
`, quoteList(fakeCommand(t)))).Harness.MCP, nil, quietLogger())
	require.NoError(t, err)
	defer c.Close()
	pid := c.conns["fake"].pid()
	require.NotZero(t, pid)
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	time.Sleep(100 * time.Millisecond)
	out, err := c.Run(context.Background(), call("fake", "echo", map[string]any{"text": "x"}))
	require.NoError(t, err)
	assert.Equal(t, "echo: x", out["text"])
	assert.NotEqual(t, pid, c.conns["fake"].pid())
}

func TestMCPServerUnavailable(t *testing.T) {
	tests := []struct {
		name    string
		command string
	}{
		{"command does not exist", `["/nonexistent/mcp-server"]`},
		{"server exits at once", `["/bin/sh", "-c", "exit 7"]`},
		{"malformed replies", `["/bin/sh", "-c", "while read l; do echo 'this is not json'; done"]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, fmt.Sprintf(`
harness:
  mcp:
    servers:
      bad: {command: %s, tools: [echo], timeout-ms: 700}
`, tc.command))
			c, err := NewClient(context.Background(), cfg.Harness.MCP, nil, quietLogger())
			require.NoError(t, err, "an unavailable server does not stop the start")
			defer c.Close()
			_, err = c.Run(context.Background(), call("bad", "echo", map[string]any{"text": "x"}))
			require.Error(t, err)
			assert.Contains(t, []action.Code{action.CodeMCPError, action.CodeTimeout}, action.CodeOf(err), err.Error())
		})
	}
}

func TestMCPClientOverHTTPAndSSE(t *testing.T) {
	streamable := httptest.NewServer(mcpserver.NewStreamableHTTPServer(mcptest.FakeServer()))
	defer streamable.Close()
	sse := mcpserver.NewSSEServer(mcptest.FakeServer())
	sseHTTP := httptest.NewServer(sse)
	defer sseHTTP.Close()
	tests := []struct {
		name, transport, url string
	}{
		{"streamable HTTP", "http", streamable.URL + "/mcp"},
		{"SSE", "sse", sseHTTP.URL + "/sse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, fmt.Sprintf(`
harness:
  mcp:
    servers:
      remote: {url: %q, transport: %s, tools: [echo, fail]}
`, tc.url, tc.transport))
			c, err := NewClient(context.Background(), cfg.Harness.MCP, nil, quietLogger())
			require.NoError(t, err)
			defer c.Close()
			assert.Equal(t, []string{"echo", "fail"}, c.ServerTools()["remote"])
			out, err := c.Run(context.Background(), call("remote", "echo", map[string]any{"text": "over " + tc.transport}))
			require.NoError(t, err)
			assert.Equal(t, "echo: over "+tc.transport, out["text"])
			_, err = c.Run(context.Background(), call("remote", "fail", nil))
			assert.Equal(t, action.CodeMCPError, action.CodeOf(err))
		})
	}
}

func TestRiskOfAnnotations(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		a    mcpgo.ToolAnnotation
		want schema.Risk
	}{
		{"no hints: destructive by the spec's defaults", mcpgo.ToolAnnotation{}, schema.RiskWrite},
		{"read-only", mcpgo.ToolAnnotation{ReadOnlyHint: &yes}, schema.RiskRead},
		{"read-only wins over destructive", mcpgo.ToolAnnotation{ReadOnlyHint: &yes, DestructiveHint: &yes}, schema.RiskRead},
		{"not destructive", mcpgo.ToolAnnotation{ReadOnlyHint: &no, DestructiveHint: &no}, schema.RiskNetwork},
		{"destructive", mcpgo.ToolAnnotation{DestructiveHint: &yes}, schema.RiskWrite},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, riskOf(tc.a))
		})
	}
}

func TestMCPClientClosed(t *testing.T) {
	c, err := NewClient(context.Background(), testConfig(t, fmt.Sprintf(`
harness:
  mcp:
    servers:
      fake: {command: [%s], tools: [echo]}
`, quoteList(fakeCommand(t)))).Harness.MCP, nil, quietLogger())
	require.NoError(t, err)
	require.NotZero(t, c.conns["fake"].pid())
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "Close twice is fine")
	_, err = c.Run(context.Background(), call("fake", "echo", map[string]any{"text": "x"}))
	assert.Equal(t, action.CodeMCPError, action.CodeOf(err))
	assert.Zero(t, c.conns["fake"].pid(), "no server is started after Close")
}

func TestMCPToolAddedLaterBecomesCallable(t *testing.T) {
	c, err := NewClient(context.Background(), testConfig(t, fmt.Sprintf(`
harness:
  mcp:
    servers:
      fake: {command: [%s], tools: [grow, late]}
`, quoteList(fakeCommand(t)))).Harness.MCP, nil, quietLogger())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Run(context.Background(), call("fake", "late", nil))
	require.Error(t, err, "not offered yet")
	assert.Contains(t, err.Error(), "does not offer")
	_, err = c.Run(context.Background(), call("fake", "grow", nil))
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := c.Run(context.Background(), call("fake", "late", nil))
		if err == nil {
			assert.Equal(t, "late tool", out["text"])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tool the server added was never callable: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
