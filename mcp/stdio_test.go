package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
)

func TestServeStdioAnswersCallsReadBeforeInputEnds(t *testing.T) {
	cfg := testConfig(t, "harness: {}\n")
	cfg.Harness.Workspace.Root = t.TempDir()
	h, closeFn, err := buildHarness(cfg, nil)
	require.NoError(t, err)
	defer closeFn()
	require.NoError(t, h.Register(runtime.Spec{Name: "nap", Description: "sleeps a little", Risk: schema.RiskRead,
		Input: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		select {
		case <-time.After(300 * time.Millisecond):
			return map[string]any{"slept": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
	require.NoError(t, err)
	in := strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nap","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"nap","arguments":{}}}`,
	}, "\n") + "\n")
	var out bytes.Buffer
	require.NoError(t, srv.ServeStdio(context.Background(), in, &out))
	answered := map[float64]bool{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r struct {
			ID     float64 `json:"id"`
			Result struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		assert.False(t, r.Result.IsError, sc.Text())
		answered[r.ID] = true
	}
	assert.Equal(t, map[float64]bool{1: true, 2: true, 3: true}, answered, "every call read before EOF was answered")
}

func TestStdioMessageClassification(t *testing.T) {
	tests := []struct {
		name       string
		line       string
		isRequest  bool
		isResponse bool
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, true, false},
		{"request with a string id", `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{}}`, true, false},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, false, false},
		{"client's answer to our request", `{"jsonrpc":"2.0","id":0,"result":{"action":"accept"}}`, false, true},
		{"result", `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, false, true},
		{"error with a string id", `{"jsonrpc":"2.0","id":"x\"y","error":{"code":-32601,"message":"no"}}`, false, true},
		{"our elicitation request", `{"jsonrpc":"2.0","id":0,"params":{"message":"ok?"},"method":"elicitation/create"}`, true, false},
		{"parse error answer has a null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`, false, false},
		{"garbage", `not json`, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.isRequest, isRequest([]byte(tc.line)))
			assert.Equal(t, tc.isResponse, responseHead.MatchString(tc.line))
		})
	}
}

// TestServeStdioReturnsWhenTheClientStopsReading: a client that closes its
// input (or whose context ends) and never reads the bridge's output does not
// keep ServeStdio, and so `harness mcp`, running: the writes blocked on it
// are abandoned after outputGrace.
func TestServeStdioReturnsWhenTheClientStopsReading(t *testing.T) {
	oldDrain, oldGrace := drainTimeout, outputGrace
	drainTimeout, outputGrace = 200*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { drainTimeout, outputGrace = oldDrain, oldGrace })
	cfg := testConfig(t, "harness: {}\n")
	cfg.Harness.Workspace.Root = t.TempDir()
	h, closeFn, err := buildHarness(cfg, nil)
	require.NoError(t, err)
	defer closeFn()
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
	require.NoError(t, err)
	session := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	}, "\n") + "\n"
	tests := []struct {
		name string
		in   func() io.Reader // the client's end of the bridge's input
		stop func(cancel context.CancelFunc)
	}{
		{"input ends", func() io.Reader { return strings.NewReader(session) }, func(context.CancelFunc) {}},
		{"context ends", func() io.Reader {
			// The session, then an input that never ends.
			pr, pw := io.Pipe()
			t.Cleanup(func() { pw.Close() })
			go io.WriteString(pw, session)
			return pr
		}, func(cancel context.CancelFunc) { time.Sleep(100 * time.Millisecond); cancel() }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			outR, outW := io.Pipe() // nobody reads outR
			t.Cleanup(func() { outR.Close() })
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- srv.ServeStdio(ctx, tc.in(), outW) }()
			tc.stop(cancel)
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, errOutputClosed) {
					t.Errorf("ServeStdio: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("ServeStdio did not return while its output was blocked on a client that stopped reading")
			}
		})
	}
}
