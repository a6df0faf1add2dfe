package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
)

func TestServeStdioAnswersCallsReadBeforeInputEnds(t *testing.T) {
	srv := serverWithReadTool(t, "nap", func(ctx context.Context) (map[string]any, error) {
		select {
		case <-time.After(300 * time.Millisecond):
			return map[string]any{"slept": true}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
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
			_, kind := classify([]byte(tc.line))
			assert.Equal(t, tc.isRequest, kind == kindRequest)
			assert.Equal(t, tc.isResponse, kind == kindResponse)
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

// TestServeStdioAnswersAsMCPGoStdioServer plays one client session against
// the bridge's stdio transport and against mcp-go's own stdio server on the
// same dispatcher, waiting for each answer before the next message as a
// client does: the answers hold the same JSON values (action ids and
// latencies aside), whatever the message (before and after initialize,
// with _meta, for an unknown tool, a tool that asks for confirmation, a
// notification, a wrong JSON-RPC version, a task, a batch, garbage).
func TestServeStdioAnswersAsMCPGoStdioServer(t *testing.T) {
	srv, _ := fastBridge(t, `
harness:
  auto-approved-actions: [workspace_read_file]
  mcp: {bridge: {trusted-actions: [workspace_apply_patch]}}
`)
	type step struct {
		line     string
		answered bool
	}
	session := []step{
		{`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"}}}`, true},
		{initLine, true},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, false},
		{`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"},"_meta":{"progressToken":1}}}`, true},
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`, true},
		{`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"workspace_apply_patch","arguments":{"path":"a.txt","content":"x"}}}`, true},
		{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"}}}`, false},
		{`{"jsonrpc":"1.0","id":9,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"a.txt"}}}`, true},
		{`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"workspace_read_file","task":{"ttl":1000},"arguments":{"path":"a.txt"}}}`, true},
		{`{"jsonrpc":"2.0","id":"s-11","method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"../x"}}}`, true},
		{`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"shapes","arguments":{}}}`, true},
		{`{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"workspace_read_file","arguments":[1]}}`, true},
		{`{"jsonrpc":"2.0","id":14,"method":"ping"}`, true},
		{`{"jsonrpc":"2.0","id":15,"method":"no/such/method"}`, true},
		{`[{"jsonrpc":"2.0","id":16,"method":"ping"}]`, true},
		{`not json "tools/call"`, true},
		{`{"jsonrpc":"2.0","id":99,"result":{}}`, false},
		{`{"jsonrpc":"2.0","id":17,"method":"tools/list"}`, true},
	}
	play := func(t *testing.T, serve func(ctx context.Context, in io.Reader, out io.Writer) error) []any {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { defer close(done); _ = serve(ctx, inR, outW); _ = outW.Close() }()
		lines := make(chan []byte, 16)
		go func() {
			sc := bufio.NewScanner(outR)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				lines <- append([]byte(nil), sc.Bytes()...)
			}
			close(lines)
		}()
		var answers []any
		for _, st := range session {
			_, err := io.WriteString(inW, st.line+"\n")
			require.NoError(t, err)
			if !st.answered {
				continue
			}
			select {
			case l := <-lines:
				var v any
				require.NoError(t, json.Unmarshal(l, &v), string(l))
				answers = append(answers, normalizeVolatile(v))
			case <-time.After(10 * time.Second):
				t.Fatalf("no answer to %s", st.line)
			}
		}
		require.NoError(t, inW.Close())
		for l := range lines {
			t.Errorf("unexpected message: %s", l)
		}
		<-done
		return answers
	}
	ours := play(t, srv.ServeStdio)
	theirs := play(t, func(ctx context.Context, in io.Reader, out io.Writer) error {
		ss := mcpserver.NewStdioServer(srv.MCPServer())
		ss.SetErrorLogger(log.New(io.Discard, "", 0))
		return ss.Listen(ctx, in, out)
	})
	require.Len(t, ours, len(theirs))
	for i := range ours {
		assert.Equal(t, theirs[i], ours[i], "answer %d", i)
	}
}

// normalizeVolatile replaces what differs between two runs of one call:
// action ids and latencies.
func normalizeVolatile(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "action_id":
				x[k] = "ACTION_ID"
			case "latency_ms":
				x[k] = 0
			default:
				x[k] = normalizeVolatile(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = normalizeVolatile(e)
		}
	}
	return v
}

// pipeMaker returns the two ends of a new pipe.
type pipeMaker func(t *testing.T) (io.ReadCloser, io.WriteCloser)

// forEachPipe runs test over an io.Pipe, over a kernel pipe (whose read
// end, unlike an io.Pipe, the transport's input gate can watch) and, where
// the system has them, over a socket pair (what Node.js gives a child as
// its stdio, which the transport writes to without blocking first).
func forEachPipe(t *testing.T, test func(*testing.T, pipeMaker)) {
	t.Run("io.Pipe", func(t *testing.T) {
		test(t, func(*testing.T) (io.ReadCloser, io.WriteCloser) { return io.Pipe() })
	})
	t.Run("os.Pipe", func(t *testing.T) { test(t, osPipe) })
	if socketPair != nil {
		t.Run("socket pair", func(t *testing.T) {
			test(t, func(t *testing.T) (io.ReadCloser, io.WriteCloser) { return socketPair(t) })
		})
	}
}

// serveStdio runs srv.ServeStdio over two new pipes of newPipe and
// returns the client's ends, in to write to and out to read from, and the
// channel of ServeStdio's result (see endInput).
func serveStdio(t *testing.T, srv *Server, newPipe pipeMaker) (in io.WriteCloser, out io.Reader, done chan error) {
	inR, inW := newPipe(t)
	outR, outW := newPipe(t)
	done = make(chan error, 1)
	go func() { done <- srv.ServeStdio(context.Background(), inR, outW); _ = outW.Close() }()
	return inW, outR, done
}

// sender returns a function that writes a line to a ServeStdio's input.
func sender(t *testing.T, in io.Writer) func(line string) {
	return func(line string) {
		t.Helper()
		_, err := io.WriteString(in, line+"\n")
		require.NoError(t, err)
	}
}

// caller returns a function that writes a line to a ServeStdio's input
// and returns the next line of its output, decoded.
func caller(t *testing.T, in io.Writer, out io.Reader) func(line string) map[string]any {
	answers := bufio.NewScanner(out)
	answers.Buffer(nil, 1<<20)
	return func(line string) map[string]any {
		t.Helper()
		_, err := io.WriteString(in, line+"\n")
		require.NoError(t, err)
		require.True(t, answers.Scan(), "no answer")
		var m map[string]any
		require.NoError(t, json.Unmarshal(answers.Bytes(), &m), "%.200s", answers.Bytes())
		return m
	}
}

// osPipe returns the two ends of a new kernel pipe.
func osPipe(t *testing.T) (io.ReadCloser, io.WriteCloser) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// endInput closes a ServeStdio's input and waits for it to return, with
// no error, on done.
func endInput(t *testing.T, inW io.Closer, done <-chan error) {
	t.Helper()
	require.NoError(t, inW.Close())
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after its input ended")
	}
}

// TestServeStdioCalls drives ServeStdio as a client would: answers
// keep their ids, a refused call is an error result with its code, and a
// cancelled call stops.
func TestServeStdioCalls(t *testing.T) {
	forEachPipe(t, testServeStdioCalls)
}

func testServeStdioCalls(t *testing.T, newPipe pipeMaker) {
	srv, evs := fastBridge(t, "harness: {auto-approved-actions: [workspace_read_file]}\n")
	inW, outR, done := serveStdio(t, srv, newPipe)
	send := sender(t, inW)
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
	assert.Equal(t, []string{"pre_action@mcp", "post_action@mcp"}, evs.Types("shapes"), "the same events as any call")

	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"boom","arguments":{}}}`)
	m = next()
	assert.Equal(t, 4.0, m["id"], "a result that panics when rendered is still answered")
	assert.Equal(t, true, m["result"].(map[string]any)["isError"])
	assert.Equal(t, string(action.CodeInternal), m["result"].(map[string]any)["structuredContent"].(map[string]any)["code"])
	all := evs.All()
	last := all[len(all)-1]
	assert.Equal(t, "mcp:fast-test", last.AgentID)
	assert.Equal(t, "stdio", last.SessionID)
	endInput(t, inW, done)
}

// TestServeStdioCancelRightAfterTheCall: a notifications/cancelled that
// follows its call at once, in the same write, still finds the call (the
// transport reads on only once the dispatcher knows the call), every time.
func TestServeStdioCancelRightAfterTheCall(t *testing.T) {
	forEachPipe(t, testServeStdioCancelRightAfterTheCall)
}

func testServeStdioCancelRightAfterTheCall(t *testing.T, newPipe pipeMaker) {
	srv, _ := fastBridge(t, "harness: {}\n")
	inW, outR, done := serveStdio(t, srv, newPipe)
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
	_, err := io.WriteString(inW, initLine+"\n"+`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	require.NoError(t, err)
	next()
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("nap-%d", i)
		start := time.Now()
		_, err := io.WriteString(inW, `{"jsonrpc":"2.0","id":"`+id+`","method":"tools/call","params":{"name":"nap","arguments":{}}}`+"\n"+
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"`+id+`"}}`+"\n")
		require.NoError(t, err)
		m := next()
		require.Equal(t, id, m["id"])
		require.Less(t, time.Since(start), 4*time.Second, "call %d was not cancelled", i)
		sc := m["result"].(map[string]any)["structuredContent"].(map[string]any)
		require.Equal(t, string(action.CodeCanceled), sc["code"])
	}
	endInput(t, inW, done)
}

// TestServeStdioReadsALargeFileAgain: a 64 KiB file read again and again
// comes back whole every time (from the third read on, its text goes out
// from the bridge's memo, beside the rest of the line), and a change to
// the file shows in the next read, over every kind of pipe.
func TestServeStdioReadsALargeFileAgain(t *testing.T) {
	forEachPipe(t, func(t *testing.T, newPipe pipeMaker) {
		root := t.TempDir()
		version := func(v int) string {
			var b strings.Builder
			for b.Len() < 64<<10 {
				fmt.Fprintf(&b, "version %d: \"quoted\" \\ é \u2028 \x01\t\n", v)
			}
			return b.String()
		}
		mustWrite(t, filepath.Join(root, "big.txt"), version(1))
		cfg := testConfig(t, "harness:\n  auto-approved-actions: [workspace_read_file]\n  workspace: {max-file-bytes: 1048576}\n")
		cfg.Harness.Workspace.Root = root
		h, closeFn, err := buildHarness(cfg, nil)
		require.NoError(t, err)
		t.Cleanup(closeFn)
		srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
		require.NoError(t, err)

		inW, outR, done := serveStdio(t, srv, newPipe)
		call := caller(t, inW, outR)
		call(initLine)
		_, err = io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		require.NoError(t, err)
		want := version(1)
		for i := range 10 {
			if i == 6 {
				want = version(2)
				mustWrite(t, filepath.Join(root, "big.txt"), want)
			}
			m := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"big.txt"}}}`, i))
			require.Equal(t, float64(i), m["id"])
			res := m["result"].(map[string]any)
			require.Nil(t, res["isError"], "read %d: %v", i, res["structuredContent"])
			text := res["content"].([]any)[0].(map[string]any)["text"].(string)
			require.Equal(t, want, text, "read %d", i)
			assert.Equal(t, "ok", res["structuredContent"].(map[string]any)["status"])
		}
		endInput(t, inW, done)
	})
}

// TestServeStdioReadsOnWhileAnAnswerWaits: an answer larger than what the
// output holds (a 3 MiB file) waits, part written, for the client to read
// it; meanwhile the bridge still reads its input, so that a call sent then
// starts, and its cancellation is seen. Then every answer arrives, whole.
// Over every kind of pipe: on a socket the answer is first written without
// blocking, and its wait begins part way.
func TestServeStdioReadsOnWhileAnAnswerWaits(t *testing.T) {
	forEachPipe(t, func(t *testing.T, newPipe pipeMaker) {
		root := t.TempDir()
		big := strings.Repeat("a line of the big file, \"quoted\"\n", 3<<20/33)
		mustWrite(t, filepath.Join(root, "big.txt"), big)
		srv, evs := fastBridgeAt(t, "harness:\n  auto-approved-actions: [workspace_read_file]\n  workspace: {max-file-bytes: 8388608}\n", root)
		inW, outR, done := serveStdio(t, srv, newPipe)
		send := sender(t, inW)
		out := bufio.NewReader(outR)
		answer := func() map[string]any {
			line, err := out.ReadBytes('\n')
			require.NoError(t, err)
			var m map[string]any
			require.NoError(t, json.Unmarshal(line, &m), "%.200s", line)
			return m
		}
		send(initLine)
		answer()
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"big.txt"}}}`)
		_, err := out.Peek(1) // the big answer's write has begun, and waits
		require.NoError(t, err)
		send(`{"jsonrpc":"2.0","id":"nap","method":"tools/call","params":{"name":"nap","arguments":{}}}`)
		waitFor(t, "the nap started while the big answer waits", func() bool { return len(evs.Types("nap")) > 0 })
		send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nap"}}`)
		send(`{"jsonrpc":"2.0","id":"last","method":"ping"}`)

		m := answer()
		require.Equal(t, "big", m["id"])
		text := m["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
		require.Equal(t, big, text)
		got := map[string]bool{}
		for len(got) < 2 {
			got[fmt.Sprint(answer()["id"])] = true
		}
		assert.Equal(t, map[string]bool{"nap": true, "last": true}, got, "the cancelled nap and the ping answered")
		endInput(t, inW, done)
	})
}
