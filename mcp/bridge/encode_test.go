package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
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
	return fastBridgeAt(t, yaml, workspaceRoot(t))
}

// fastBridgeAt is fastBridge over the workspace root.
func fastBridgeAt(t *testing.T, yaml, root string) (*Server, *events) {
	t.Helper()
	cfg := testConfig(t, yaml)
	cfg.Harness.Workspace.Root = root
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

// TestAppendMessageMatchesEncodingJSON: the encoding step writes a tool
// result directly, and what it writes holds the same JSON value that
// encoding/json (what mcp-go writes) gives for the same response, for ok
// and error observations.
func TestAppendMessageMatchesEncodingJSON(t *testing.T) {
	for _, obs := range []action.Observation{
		{ActionID: "a-1", Action: "shapes", Source: action.SourceBuiltin, Status: action.StatusOK, Payload: shapesPayload(), LatencyMS: 0.125},
		{ActionID: "a-2", Action: "workspace_read_file", Source: action.SourcePolicy, Status: action.StatusBlocked,
			Code: action.CodePathOutsideRoot, Message: `path "/etc/passwd" is outside the workspace`, LatencyMS: 3},
		{Action: "x", Source: action.SourceHarness, Status: action.StatusError, Code: action.CodeInternal, Message: "no payload"},
		{ActionID: "a-3", Action: "workspace_run_shell", Source: action.SourcePolicy, Status: action.StatusBlocked, Code: action.CodeTrustRequired,
			Message: "needs trust", Decision: &action.Decision{Step: "trust", Outcome: "deny", Reason: "needs trust"}},
	} {
		for _, id := range []string{`7`, `"req-\"1"`} {
			var idv any
			require.NoError(t, json.Unmarshal([]byte(id), &idv))
			resp := mcpgo.NewJSONRPCResultResponse(mcpgo.NewRequestId(idv), toolResult(obs))
			_, _, direct := appendToolResponse(nil, resp.ID, resp.Result.(*mcpgo.CallToolResult))
			assert.True(t, direct, "the tool result of %s is written directly", obs.Action)
			got, err := appendMessage(nil, resp)
			require.NoError(t, err)
			require.True(t, bytes.HasSuffix(got, []byte("}\n")), "one line")
			require.Equal(t, 1, bytes.Count(got, []byte("\n")), "one line")
			want, err := json.Marshal(resp)
			require.NoError(t, err)
			assert.Equal(t, generic(t, want), generic(t, got), "observation %s, id %s", obs.Action, id)
		}
	}
	t.Run("other messages through encoding/json", func(t *testing.T) {
		for _, msg := range []mcpgo.JSONRPCMessage{
			mcpgo.NewJSONRPCResultResponse(mcpgo.NewRequestId(1), mcpgo.EmptyResult{}),
			mcpgo.NewJSONRPCResultResponse(mcpgo.NewRequestId(2), &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent("no observation")}}),
			mcpgo.JSONRPCError{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(nil), Error: mcpgo.NewJSONRPCErrorDetails(mcpgo.PARSE_ERROR, "Parse error", nil)},
		} {
			got, err := appendMessage(nil, msg)
			require.NoError(t, err)
			want, err := json.Marshal(msg)
			require.NoError(t, err)
			assert.Equal(t, string(want)+"\n", string(got))
		}
	})
}

// appendMessage appends msg as one whole JSON line: appendMessageParts,
// with the remembered text put back in place.
func appendMessage(b []byte, msg mcpgo.JSONRPCMessage) ([]byte, error) {
	out, m, err := appendMessageParts(b, msg)
	if err != nil || m.text == nil {
		return out, err
	}
	return slices.Insert(out, m.at, m.text...), nil
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
	line, err := appendMessage(nil, mcpgo.NewJSONRPCResultResponse(mcpgo.NewRequestId(1), toolResult(obs)))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(line, &r))
	assert.True(t, r.Result.IsError)
	assert.Equal(t, action.CodeInternal, r.Result.StructuredContent.Code)
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fast-test","version":"1"}}}`

// TestAppendMessagePartsLeavesOutRememberedText: a tool result whose text
// the bridge remembers is written without it, and says where it goes; put
// back there, the line is the one appendMessage writes, and holds the
// value encoding/json gives. A text too short to be remembered is always
// in the line.
func TestAppendMessagePartsLeavesOutRememberedText(t *testing.T) {
	obs := action.Observation{ActionID: "a-1", Action: "workspace_read_file", Source: action.SourceWorkspace, Status: action.StatusOK,
		Payload: map[string]any{"path": "big.txt"}, LatencyMS: 0.5}
	for _, c := range []struct {
		name     string
		text     string
		remember bool
	}{
		{"long", strings.Repeat("a \"quoted\" line, é \u2028 \x01\n", 400) + t.Name(), true},
		{"short", "a short text", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent(c.text)}, StructuredContent: obs}
			resp := mcpgo.NewJSONRPCResultResponse(mcpgo.NewRequestId("r-1"), res)
			want, err := json.Marshal(resp)
			require.NoError(t, err)
			remembered := 0
			for range 4 {
				line, m, err := appendMessageParts([]byte("prefix"), resp)
				require.NoError(t, err)
				require.True(t, bytes.HasPrefix(line, []byte("prefix")))
				if m.text != nil {
					remembered++
					assert.NotContains(t, string(line), `"text":"a \"quoted\"`, "the text is in the line as well")
				}
				whole := slices.Insert(line, m.at, m.text...)
				direct, err := appendMessage([]byte("prefix"), resp)
				require.NoError(t, err)
				assert.Equal(t, string(direct), string(whole))
				assert.Equal(t, generic(t, want), generic(t, whole[len("prefix"):]))
			}
			if c.remember {
				assert.Positive(t, remembered, "a text sent again is sent from the memo")
			} else {
				assert.Zero(t, remembered)
			}
		})
	}
}
