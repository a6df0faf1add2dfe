package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/internal/testkit"
)

// mcpTestConfig is testConfig with the read-only file action auto-approved,
// as a typical MCP setup has it.
func mcpTestConfig(t *testing.T, extra string) (cfgPath, root string) {
	t.Helper()
	return testConfig(t, "  auto-approved-actions: [workspace_read_file]\n"+extra)
}

// rpcLines is an MCP session of the 2025-11-25 revision, one message a line.
func rpcLines(msgs ...string) io.Reader { return strings.NewReader(strings.Join(msgs, "\n") + "\n") }

const (
	rpcInit        = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	rpcInitialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	rpcList        = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
)

func rpcCall(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
}

type rpcResponse struct {
	ID     int `json:"id"`
	Result struct {
		ProtocolVersion string `json:"protocolVersion"`
		Tools           []struct {
			Name string `json:"name"`
		} `json:"tools"`
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Status string `json:"status"`
			Code   string `json:"code"`
		} `json:"structuredContent"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
}

func TestMCPCommandServesStdio(t *testing.T) {
	cfg, root := mcpTestConfig(t, "")
	var out, errb bytes.Buffer
	in := rpcLines(rpcInit, rpcInitialized, rpcList,
		rpcCall(3, "workspace_read_file", `{"path":"a.txt"}`),
		rpcCall(4, "workspace_read_file", `{"path":"/etc/passwd"}`))
	// The input ends after the last call: the bridge answers what it read,
	// then exits; a bridge that does not is stopped and reported.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"mcp", "--config", cfg, "--root", root}, stdio{in: in, out: &out, err: &errb})
	}()
	var code int
	select {
	case code = <-done:
	case <-time.After(stepTimeout(t, 45*time.Second)):
		cancel()
		<-done
		t.Fatal("harness mcp did not exit after its input ended")
	}
	if code != exitOK {
		t.Fatalf("exit %d, stderr: %s", code, errb.String())
	}
	byID := map[int]rpcResponse{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r rpcResponse
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("stdout carries only JSON-RPC, got %q", sc.Text())
		}
		byID[r.ID] = r
	}
	tests := []struct {
		name  string
		check func() bool
	}{
		{"negotiates 2025-11-25", func() bool { return byID[1].Result.ProtocolVersion == "2025-11-25" }},
		{"lists the registry (no mcp_call without an MCP server)", func() bool {
			for _, tool := range byID[2].Result.Tools {
				if tool.Name == "mcp_call" {
					return false
				}
			}
			return len(byID[2].Result.Tools) >= 6
		}},
		{"reads a file", func() bool {
			r := byID[3].Result
			return !r.IsError && r.StructuredContent.Status == "ok" && r.Content[0].Text == "hello\n"
		}},
		{"refuses an absolute path", func() bool {
			r := byID[4].Result
			return r.IsError && r.StructuredContent.Code == "path_outside_root"
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.check() {
				t.Errorf("responses: %+v", byID)
			}
		})
	}
}

func TestMCPCommandUsage(t *testing.T) {
	cfg, _ := mcpTestConfig(t, "")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("harness:\n  no-such-key: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"help", []string{"mcp", "--help"}, exitOK, "harness mcp"},
		{"unexpected argument", []string{"mcp", "--config", cfg, "extra"}, exitUsage, "unexpected argument"},
		{"bad config", []string{"mcp", "--config", bad}, exitUsage, "no-such-key"},
		{"bad listen address", []string{"mcp", "--config", cfg, "--http", "nohost"}, exitUsage, "--http"},
		{"non-loopback address refused", []string{"mcp", "--config", cfg, "--http", "0.0.0.0:0"}, exitUsage, "loopback"},
		{"public address refused", []string{"mcp", "--config", cfg, "--http", "192.0.2.1:8080"}, exitUsage, "no authentication"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runHarness(tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.err) {
				t.Errorf("exit %d (want %d), stderr %q (want %q)", code, tc.code, stderr, tc.err)
			}
		})
	}
}

func TestMCPCommandServesHTTP(t *testing.T) {
	cfg, root := mcpTestConfig(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	errb := &testkit.SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"mcp", "--config", cfg, "--root", root, "--http", "127.0.0.1:0"}, stdio{in: strings.NewReader(""), out: io.Discard, err: errb})
	}()
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/mcp`)
	var url string
	for deadline := time.Now().Add(stepTimeout(t, 20*time.Second)); time.Now().Before(deadline) && url == ""; time.Sleep(20 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			url = m[0]
		}
	}
	if url == "" {
		cancel()
		t.Fatalf("no address announced; stderr: %s", errb.String())
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(rpcInit))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := (&http.Client{Timeout: stepTimeout(t, 20*time.Second)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"protocolVersion":"2025-11-25"`) {
		t.Errorf("initialize over HTTP: %d %s", resp.StatusCode, body)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d after cancel; stderr: %s", code, errb.String())
		}
	case <-time.After(stepTimeout(t, 20*time.Second)):
		t.Fatal("harness mcp --http did not stop when its context ended")
	}
}

// stepTimeout bounds one wait of a test: d, or less when the test binary's
// own deadline (go test -timeout) comes sooner, so that a stuck step fails
// with its own message instead of the binary panicking with every goroutine.
func stepTimeout(t *testing.T, d time.Duration) time.Duration {
	if dl, ok := t.Deadline(); ok {
		if left := time.Until(dl) - 10*time.Second; left < d {
			return max(left, time.Second)
		}
	}
	return d
}

// mcpStdio is `harness mcp` serving stdio in-process over pipes, as an MCP
// client sees it. Every wait on it is bounded; its output is read to the
// end, so that the bridge never blocks on a test that stopped listening;
// and the test's cleanup waits for the command to exit, so that no bridge
// outlives its test (mcp-go's stdio session is one per process).
type mcpStdio struct {
	t     *testing.T
	inW   *io.PipeWriter
	lines chan []byte
	done  chan int
}

func startMCPStdio(t *testing.T, args ...string) *mcpStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	s := &mcpStdio{t: t, inW: inW, lines: make(chan []byte, 64), done: make(chan int, 1)}
	go func() {
		s.done <- dispatch(ctx, append([]string{"mcp"}, args...), stdio{in: inR, out: outW, err: io.Discard})
		outW.Close()
	}()
	stop := make(chan struct{})
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := append([]byte(nil), sc.Bytes()...)
			select {
			case s.lines <- line:
			case <-stop: // the test is over: discard
			}
		}
		_, _ = io.Copy(io.Discard, outR)
	}()
	t.Cleanup(func() {
		close(stop)
		inW.Close()
		select {
		case <-s.done:
		case <-time.After(stepTimeout(t, 45*time.Second)):
			t.Errorf("harness mcp did not exit after its input ended")
		}
		cancel()
		inR.CloseWithError(errors.New("test over"))
		outR.Close()
	})
	return s
}

// send writes one line to the bridge's input.
func (s *mcpStdio) send(line string) {
	s.t.Helper()
	errc := make(chan error, 1)
	go func() { _, err := io.WriteString(s.inW, line+"\n"); errc <- err }()
	d := stepTimeout(s.t, 20*time.Second)
	select {
	case err := <-errc:
		if err != nil {
			s.t.Fatalf("writing to harness mcp: %v", err)
		}
	case <-time.After(d):
		s.t.Fatalf("harness mcp did not read its input within %v", d)
	}
}

// next returns the bridge's next output line.
func (s *mcpStdio) next() []byte {
	s.t.Helper()
	d := stepTimeout(s.t, 20*time.Second)
	select {
	case line, ok := <-s.lines:
		if !ok {
			s.t.Fatal("harness mcp closed its output before answering")
		}
		return line
	case <-time.After(d):
		s.t.Fatalf("no message from harness mcp within %v", d)
	}
	return nil
}

// response returns the response to request id, skipping other messages.
func (s *mcpStdio) response(id int) rpcResponse {
	s.t.Helper()
	for {
		line := s.next()
		var r rpcResponse
		if json.Unmarshal(line, &r) == nil && r.ID == id && !bytes.Contains(line, []byte(`"method":`)) {
			return r
		}
	}
}

// closeAndWait ends the bridge's input and waits at most d for it to exit.
func (s *mcpStdio) closeAndWait(d time.Duration) (code int, exited bool) {
	s.inW.Close()
	select {
	case code := <-s.done:
		s.done <- code // for the cleanup
		return code, true
	case <-time.After(stepTimeout(s.t, d)):
		return 0, false
	}
}

// TestMCPCommandConfirmsThroughElicitation plays a 2025-11-25 client that
// supports elicitation: harness mcp asks it to confirm the preview of a
// patch, and runs it through the trusted token flow once it accepts.
func TestMCPCommandConfirmsThroughElicitation(t *testing.T) {
	tests := []struct {
		name   string
		answer string
		want   string
		code   string
	}{
		{"accept", `{"action":"accept","content":{"confirm":true}}`, "bye\n", ""},
		{"decline", `{"action":"decline"}`, "hello\n", "trust_required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, root := mcpTestConfig(t, "  mcp: {bridge: {trusted-actions: [workspace_apply_patch]}}\n")
			s := startMCPStdio(t, "--config", cfg, "--root", root)
			// A client waits for the answer to initialize before it goes on.
			s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
			if r := s.response(1); r.Result.ProtocolVersion != "2025-11-25" {
				t.Fatalf("initialize: %+v", r)
			}
			s.send(rpcInitialized)
			s.send(rpcCall(2, "workspace_apply_patch", `{"path":"a.txt","content":"bye\n"}`))
			var asked string
			var final rpcResponse
			for {
				line := s.next()
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Message string `json:"message"`
					} `json:"params"`
				}
				if err := json.Unmarshal(line, &msg); err != nil {
					t.Fatalf("stdout carries only JSON-RPC, got %q", line)
				}
				if msg.Method == "elicitation/create" {
					asked = msg.Params.Message
					s.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, tc.answer))
					continue
				}
				var r rpcResponse
				if msg.Method == "" && json.Unmarshal(line, &r) == nil && r.ID == 2 {
					final = r
					break
				}
			}
			if code, exited := s.closeAndWait(20 * time.Second); !exited || code != exitOK {
				t.Errorf("harness mcp after its input ended: exited %v, code %d", exited, code)
			}
			if !strings.Contains(asked, "workspace_apply_patch") || !strings.Contains(asked, "-hello\n+bye") {
				t.Errorf("the person was not shown the action and its diff: %q", asked)
			}
			if final.Result.StructuredContent.Code != tc.code {
				t.Errorf("code %q, want %q: %+v", final.Result.StructuredContent.Code, tc.code, final.Result)
			}
			got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
			if string(got) != tc.want {
				t.Errorf("a.txt = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestMCPCommandServesWhileServersStart: a configured MCP server that is
// slow to start (here: never answers) does not delay the bridge.
func TestMCPCommandServesWhileServersStart(t *testing.T) {
	cfg, root := mcpTestConfig(t, `  mcp:
    servers:
      slow: {command: [sleep, "60"], tools: [x], timeout-ms: 20000}
`)
	start := time.Now()
	s := startMCPStdio(t, "--config", cfg, "--root", root)
	s.send(rpcInit)
	s.response(1)
	s.send(rpcInitialized)
	s.send(rpcList)
	r := s.response(2)
	listed := time.Since(start)
	if len(r.Result.Tools) < 7 {
		t.Errorf("tools/list: %+v", r)
	}
	if listed > 10*time.Second {
		t.Errorf("tools/list answered after %v; the server's 20 s start must not delay it", listed)
	}
	if _, exited := s.closeAndWait(15 * time.Second); !exited {
		t.Fatal("harness mcp did not stop after its input ended while a server was starting")
	}
}
