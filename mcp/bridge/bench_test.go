package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// benchBridge is a bridge over a workspace holding big.txt (64 KiB) and
// many/ (1,000 files), without an audit log.
func benchBridge(b *testing.B) *Server {
	s, _ := benchBridgeRoot(b)
	return s
}

// benchBridgeRoot is benchBridge, and its workspace root.
func benchBridgeRoot(b *testing.B) (*Server, string) {
	b.Helper()
	root := b.TempDir()
	mustWrite(b, filepath.Join(root, "big.txt"), strings.Repeat(strings.Repeat("x", 63)+"\n", 1024))
	for i := 0; i < 1000; i++ {
		mustWrite(b, filepath.Join(root, "many", fmt.Sprintf("f%04d.txt", i)), "x")
	}
	cfg := testConfig(b, `
harness:
  auto-approved-actions: [workspace_read_file, workspace_list_files]
  workspace: {max-file-bytes: 1048576, max-list-entries: 5000}
`)
	cfg.Harness.Workspace.Root = root
	h, closeFn, err := buildHarness(cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(closeFn)
	s, err := NewServer(h, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return s, root
}

func benchCall(b *testing.B, s *Server, name string, args map[string]any) {
	handler := s.handlerFor(name)
	req := mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		res, err := handler(ctx, req)
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}

// BenchmarkBridgeRead64KiB is the bridge's own cost of one
// workspace_read_file of a 64 KiB file (no transport, no audit).
func BenchmarkBridgeRead64KiB(b *testing.B) {
	benchCall(b, benchBridge(b), "workspace_read_file", map[string]any{"path": "big.txt"})
}

// BenchmarkBridgeList1000 is the bridge's own cost of one
// workspace_list_files of a 1,000-entry directory with details (sizes and
// times: one lstat per entry, unless the listing cache answers).
func BenchmarkBridgeList1000(b *testing.B) {
	benchCall(b, benchBridge(b), "workspace_list_files", map[string]any{"path": "many", "details": true})
}

// BenchmarkBridgeList1000Changed is BenchmarkBridgeList1000 with one
// file of the directory written before each listing (not timed): no
// listing can be answered from the cache, as in a directory that changes
// all the time.
func BenchmarkBridgeList1000Changed(b *testing.B) {
	s, root := benchBridgeRoot(b)
	handler := s.handlerFor("workspace_list_files")
	req := mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "workspace_list_files", Arguments: map[string]any{"path": "many", "details": true}}}
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		mustWrite(b, filepath.Join(root, "many", "f0000.txt"), strings.Repeat("y", i%7))
		b.StartTimer()
		res, err := handler(ctx, req)
		if err != nil || res.IsError {
			b.Fatalf("%v %v", err, res)
		}
	}
}

// BenchmarkBridgeList1000Names is the same listing without details (the
// default): names and types only.
func BenchmarkBridgeList1000Names(b *testing.B) {
	benchCall(b, benchBridge(b), "workspace_list_files", map[string]any{"path": "many", "details": false})
}

// BenchmarkStdioRead64KiB is the stdio bridge's own cost of answering one
// workspace_read_file of a 64 KiB file: the request line through the
// dispatcher, the call, and the response line, without the transport.
func BenchmarkStdioRead64KiB(b *testing.B) {
	s := benchBridge(b)
	sess := &stdioSession{pending: map[int64]chan elicitAnswer{}, notifications: make(chan mcpgo.JSONRPCNotification, 100)}
	ctx := context.Background()
	if err := s.srv.RegisterSession(ctx, sess); err != nil {
		b.Fatal(err)
	}
	defer s.srv.UnregisterSession(ctx, sess.SessionID())
	ctx = s.srv.WithContext(ctx, sess)
	s.srv.HandleMessage(ctx, []byte(initLine))
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workspace_read_file","arguments":{"path":"big.txt"}}}`)
	buf := make([]byte, 0, 256<<10)
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = appendMessage(buf[:0], s.srv.HandleMessage(ctx, line)); err != nil {
			b.Fatal(err)
		}
	}
	if !bytes.Contains(buf, []byte(`"status":"ok"`)) {
		b.Fatalf("%.300s", buf)
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkInteropVsFilesystemServer runs ../testdata/node/bench.mjs: the
// official TypeScript SDK client drives a null server (the client's own
// ceiling), @modelcontextprotocol/server-filesystem and `harness mcp`
// (built from ../../cmd/harness) on the same files, servers taking turns,
// and prints their start-up, read and list numbers side by side with each
// one's server and client CPU per call, and the ratios of the targets
// (listings: by default, with details false, and with details true beside
// the reference's list_directory_with_sizes).
// Run it with -benchtime=1x; BENCH_READS, BENCH_LISTS, BENCH_STARTS and
// BENCH_ROUNDS change the counts (defaults 4000, 1000, 20, 40),
// BENCH_CONCURRENCY the calls kept in flight (default 1), and
// BENCH_BASELINE names another harness binary to measure beside this one
// (a build of main, say).
func BenchmarkInteropVsFilesystemServer(b *testing.B) {
	dir := nodeDir(b)
	bin := filepath.Join(b.TempDir(), "harness")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/harness")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		b.Fatalf("go build ./cmd/harness: %v", err)
	}
	arg := func(env, def string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		return def
	}
	for i := 0; i < b.N; i++ {
		args := []string{filepath.Join(dir, "bench.mjs"), "--harness", bin,
			"--reads", arg("BENCH_READS", "4000"), "--lists", arg("BENCH_LISTS", "1000"), "--starts", arg("BENCH_STARTS", "20"),
			"--rounds", arg("BENCH_ROUNDS", "40"), "--concurrency", arg("BENCH_CONCURRENCY", "1")}
		if base := os.Getenv("BENCH_BASELINE"); base != "" {
			args = append(args, "--baseline", base)
		}
		cmd := exec.Command("node", args...)
		cmd.Dir = dir
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("bench.mjs: %v", err)
		}
		var res struct {
			Ratio   map[string]float64 `json:"ratio"`
			Harness map[string]struct {
				ServerCPU float64 `json:"server_cpu_ms_per_op"`
			} `json:"harness"`
			Spread map[string]struct {
				Min    float64 `json:"min"`
				Median float64 `json:"median"`
			} `json:"spread"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			b.Fatalf("bench.mjs output: %v", err)
		}
		for k, v := range res.Ratio {
			b.ReportMetric(v, k+"_x")
		}
		for k, v := range res.Spread {
			b.ReportMetric(v.Min, k+"_min_x")
			b.ReportMetric(v.Median, k+"_median_x")
		}
		for _, k := range []string{"read", "list", "names", "details"} {
			b.ReportMetric(res.Harness[k].ServerCPU, k+"_server_cpu_ms/op")
		}
	}
}
