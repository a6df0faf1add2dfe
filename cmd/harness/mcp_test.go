package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// mcpTestConfig writes a config whose audit log and key live in a temp dir.
func mcpTestConfig(t *testing.T, extra string) (cfgPath, root string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(dir, "harness.yaml")
	cfg := fmt.Sprintf(`harness:
  auto-approved-actions: [workspace_read_file]
  audit: {path: %q}
  sanitize: {key-path: %q}
%s`, filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "hmac.key"), extra)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, root
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
	code := dispatch(context.Background(), []string{"mcp", "--config", cfg, "--root", root}, stdio{in: in, out: &out, err: &errb})
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
		{"lists the registry", func() bool { return len(byID[2].Result.Tools) >= 7 }},
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

// syncBuffer is a bytes.Buffer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestMCPCommandServesHTTP(t *testing.T) {
	cfg, root := mcpTestConfig(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	errb := &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- dispatch(ctx, []string{"mcp", "--config", cfg, "--root", root, "--http", "127.0.0.1:0"}, stdio{in: strings.NewReader(""), out: io.Discard, err: errb})
	}()
	addr := regexp.MustCompile(`http://(127\.0\.0\.1:\d+)/mcp`)
	var url string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) && url == ""; time.Sleep(20 * time.Millisecond) {
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
	resp, err := http.DefaultClient.Do(req)
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
	case <-time.After(10 * time.Second):
		t.Fatal("harness mcp --http did not stop when its context ended")
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
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan int, 1)
			go func() {
				done <- dispatch(context.Background(), []string{"mcp", "--config", cfg, "--root", root}, stdio{in: inR, out: outW, err: io.Discard})
				outW.Close()
			}()
			send := func(line string) {
				if _, err := io.WriteString(inW, line+"\n"); err != nil {
					t.Fatal(err)
				}
			}
			send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"t","version":"1"}}}`)
			send(rpcInitialized)
			send(rpcCall(2, "workspace_apply_patch", `{"path":"a.txt","content":"bye\n"}`))
			sc := bufio.NewScanner(outR)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			var asked string
			var final rpcResponse
			for sc.Scan() {
				var msg struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
					Params struct {
						Message string `json:"message"`
					} `json:"params"`
				}
				if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
					t.Fatal(err)
				}
				if msg.Method == "elicitation/create" {
					asked = msg.Params.Message
					send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, msg.ID, tc.answer))
					continue
				}
				var r rpcResponse
				if err := json.Unmarshal(sc.Bytes(), &r); err == nil && r.ID == 2 {
					final = r
					break
				}
			}
			inW.Close()
			<-done
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
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	start := time.Now()
	go func() {
		done <- dispatch(context.Background(), []string{"mcp", "--config", cfg, "--root", root}, stdio{in: inR, out: outW, err: io.Discard})
		outW.Close()
	}()
	io.WriteString(inW, rpcInit+"\n"+rpcInitialized+"\n"+rpcList+"\n")
	sc := bufio.NewScanner(outR)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var listed time.Duration
	for sc.Scan() {
		var r rpcResponse
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.ID == 2 {
			listed = time.Since(start)
			if len(r.Result.Tools) < 7 {
				t.Errorf("tools/list: %s", sc.Text())
			}
			break
		}
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if listed == 0 || listed > 10*time.Second {
		t.Errorf("tools/list answered after %v; the server's 20 s start must not delay it", listed)
	}
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("harness mcp did not stop after its input ended while a server was starting")
	}
}
