package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
)

// fastBridge is a bridge over workspaceRoot with two builtins: "shapes"
// returns a payload of every generic JSON shape, "nap" waits for 5 seconds
// or its context.
func fastBridge(t *testing.T, yaml string) (*Server, *events) {
	t.Helper()
	cfg := testConfig(t, yaml)
	cfg.Harness.Workspace.Root = workspaceRoot(t)
	evs := &events{}
	h, closeFn, err := buildHarness(cfg, evs)
	require.NoError(t, err)
	t.Cleanup(closeFn)
	open := json.RawMessage(`{"type":"object"}`)
	require.NoError(t, h.Register(runtime.Spec{Name: "shapes", Description: "returns shapes", Risk: schema.RiskRead, Input: open},
		func(context.Context, map[string]any) (map[string]any, error) { return shapesPayload(), nil }))
	require.NoError(t, h.Register(runtime.Spec{Name: "nap", Description: "sleeps", Risk: schema.RiskRead, Input: open},
		func(ctx context.Context, _ map[string]any) (map[string]any, error) {
			select {
			case <-time.After(5 * time.Second):
				return map[string]any{}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}))
	require.NoError(t, h.Register(runtime.Spec{Name: "boom", Description: "a result that panics when encoded", Risk: schema.RiskRead, Input: open},
		func(context.Context, map[string]any) (map[string]any, error) {
			return map[string]any{"x": panicky{}}, nil
		}))
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
	require.NoError(t, err)
	return srv, evs
}

// panicky panics when encoded as JSON.
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("no") }

func shapesPayload() map[string]any {
	return map[string]any{
		"text": "quote\" backslash\\ nl\n tab\t ctl\x01 del\x7f é 日本 \U0001F600 \u2028 <&>", "bad": "a\xffb",
		"int": int64(-42), "big": int64(1) << 60, "float": 1.5, "tiny": 1e-9, "yes": true, "none": nil,
		"list": []any{"x", 2, []string{"a", "b"}}, "nested": map[string]any{"z": 1, "a": map[string]any{}},
	}
}

// TestAppendToolResponseMatchesMCPGo: the response written directly holds
// the same JSON value mcp-go writes for toolResult of the same
// observation, for ok and error observations.
func TestAppendToolResponseMatchesMCPGo(t *testing.T) {
	for _, obs := range []action.Observation{
		{ActionID: "a-1", Action: "shapes", Source: action.SourceBuiltin, Status: action.StatusOK, Payload: shapesPayload(), LatencyMS: 0.125},
		{ActionID: "a-2", Action: "workspace_read_file", Source: action.SourcePolicy, Status: action.StatusBlocked,
			Code: action.CodePathOutsideRoot, Message: `path "/etc/passwd" is outside the workspace`, LatencyMS: 3},
		{Action: "x", Source: action.SourceHarness, Status: action.StatusError, Code: action.CodeInternal, Message: "no payload"},
	} {
		for _, id := range []string{`7`, `"req-\"1"`} {
			got := appendToolResponse(nil, json.RawMessage(id), obs)
			require.True(t, bytes.HasSuffix(got, []byte("}\n")), "one line")
			require.Equal(t, 1, bytes.Count(got, []byte("\n")), "one line")
			var idv any
			require.NoError(t, json.Unmarshal([]byte(id), &idv))
			want, err := json.Marshal(mcpgo.NewJSONRPCResultResponse(mcpgo.NewRequestId(idv), toolResult(obs)))
			require.NoError(t, err)
			assert.Equal(t, generic(t, want), generic(t, got), "observation %s, id %s", obs.Action, id)
		}
	}
}

func generic(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	require.NoError(t, json.Unmarshal(b, &v), string(b))
	return v
}

func TestAppendToolResponseUnencodablePayload(t *testing.T) {
	obs := action.Observation{Action: "shapes", Status: action.StatusOK, Payload: map[string]any{"n": mathNaN()}, LatencyMS: 1}
	var r struct {
		Result struct {
			IsError           bool               `json:"isError"`
			StructuredContent action.Observation `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(appendToolResponse(nil, json.RawMessage(`1`), obs), &r))
	assert.True(t, r.Result.IsError)
	assert.Equal(t, action.CodeInternal, r.Result.StructuredContent.Code)
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fast-test","version":"1"}}}`

func TestFastCallsTakeOnlyCallsThatNeedNoSession(t *testing.T) {
	srv, _ := fastBridge(t, `
harness:
  auto-approved-actions: [workspace_read_file]
  mcp: {bridge: {trusted-actions: [workspace_apply_patch]}}
`)
	var out bytes.Buffer
	f := &inflight{}
	fc := newFastCalls(context.Background(), srv, lockedWriter{mu: &sync.Mutex{}, w: &out}, f)
	call := `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"}}}`
	assert.False(t, fc.take([]byte(call)), "before initialize, mcp-go answers")
	assert.False(t, fc.take([]byte(initLine)), "initialize goes to mcp-go")
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"workspace_apply_patch","arguments":{"patch":""}}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"}}}`,
		`{"jsonrpc":"1.0","id":9,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"}}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"workspace_read_file","task":{"ttl":1000},"arguments":{"path":"a.txt"}}}`,
		`not json "tools/call"`,
	} {
		assert.False(t, fc.take([]byte(line)), "left to mcp-go: %s", line)
	}
	require.True(t, fc.take([]byte(call)))
	f.wait(context.Background(), 10*time.Second)
	var r struct {
		ID     int `json:"id"`
		Result struct {
			Content           []mcpgo.TextContent `json:"content"`
			StructuredContent action.Observation  `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), out.String())
	assert.Equal(t, 5, r.ID)
	assert.Equal(t, "hello world\nsecond line\n", r.Result.Content[0].Text)
	assert.Equal(t, action.StatusOK, r.Result.StructuredContent.Status)
}

// TestServeStdioFastCalls drives ServeStdio as a client would: answers
// keep their ids, a refused call is an error result with its code, and a
// cancelled call stops.
func TestServeStdioFastCalls(t *testing.T) {
	srv, evs := fastBridge(t, "harness: {auto-approved-actions: [workspace_read_file]}\n")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), inR, outW); _ = outW.Close() }()
	send := func(line string) {
		_, err := io.WriteString(inW, line+"\n")
		require.NoError(t, err)
	}
	answers := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				answers <- m
			}
		}
		close(answers)
	}()
	next := func() map[string]any {
		select {
		case m := <-answers:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
			return nil
		}
	}
	send(initLine)
	assert.Equal(t, 1.0, next()["id"])
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	send(`{"jsonrpc":"2.0","id":"nap-1","method":"tools/call","params":{"name":"nap","arguments":{}}}`)
	send(`{"jsonrpc":"2.0","id":"esc","method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"../../etc/passwd"}}}`)
	m := next()
	assert.Equal(t, "esc", m["id"], "the escape is answered while the nap goes on")
	res := m["result"].(map[string]any)
	assert.Equal(t, true, res["isError"])
	assert.Equal(t, string(action.CodePathOutsideRoot), res["structuredContent"].(map[string]any)["code"])

	start := time.Now()
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nap-1","reason":"test"}}`)
	m = next()
	assert.Equal(t, "nap-1", m["id"])
	assert.Less(t, time.Since(start), 4*time.Second, "the cancelled call stopped")
	assert.Equal(t, true, m["result"].(map[string]any)["isError"])

	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"shapes","arguments":{}}}`)
	m = next()
	sc := m["result"].(map[string]any)["structuredContent"].(map[string]any)
	assert.Equal(t, "a\ufffdb", sc["payload"].(map[string]any)["bad"])
	assert.Equal(t, []string{"pre_action@mcp", "post_action@mcp"}, evs.types("shapes"), "the same events as any call")

	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"boom","arguments":{}}}`)
	m = next()
	assert.Equal(t, 4.0, m["id"], "a result that panics when rendered is still answered")
	assert.Equal(t, true, m["result"].(map[string]any)["isError"])
	assert.Equal(t, string(action.CodeInternal), m["result"].(map[string]any)["structuredContent"].(map[string]any)["code"])
	evs.mu.Lock()
	last := evs.evs[len(evs.evs)-1]
	evs.mu.Unlock()
	assert.Equal(t, "mcp:fast-test", last.AgentID)
	assert.Equal(t, "stdio", last.SessionID)
	require.NoError(t, inW.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after its input ended")
	}
}

// lockedWriter serialises writes (fastCalls writes from its goroutines).
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
