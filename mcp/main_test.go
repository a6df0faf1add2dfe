package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/harness-runtime/harness/schema"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/trusted"
	"github.com/harness-runtime/harness/workspace"
)

// The test binary doubles as the MCP peers the tests need: with
// HARNESS_MCP_TEST_MODE=fake it is a small MCP server over stdio, with
// HARNESS_MCP_TEST_MODE=bridge it is `harness mcp` over stdio on the root
// and config named by HARNESS_MCP_TEST_ROOT and HARNESS_MCP_TEST_CONFIG.
func TestMain(m *testing.M) {
	switch os.Getenv("HARNESS_MCP_TEST_MODE") {
	case "fake":
		if err := mcpserver.ServeStdio(fakeServer()); err != nil {
			fmt.Fprintln(os.Stderr, "fake server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "bridge":
		os.Exit(serveBridgeForTest())
	}
	os.Exit(m.Run())
}

func serveBridgeForTest() int {
	if path := os.Getenv("HARNESS_MCP_TEST_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	cfg, err := config.LoadFile(os.Getenv("HARNESS_MCP_TEST_CONFIG"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg.Harness.Workspace.Root = os.Getenv("HARNESS_MCP_TEST_ROOT")
	h, closeFn, err := buildHarness(cfg, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer closeFn()
	srv, err := NewServer(h, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := srv.ServeStdio(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fakeServer is an MCP server with tools that succeed, fail, hang, die and
// one that no test config allows.
func fakeServer() *mcpserver.MCPServer {
	s := mcpserver.NewMCPServer("fake", "1.0.0", mcpserver.WithToolCapabilities(true))
	yes := true
	echo := mcpgo.NewTool("echo", mcpgo.WithDescription("echo text"),
		mcpgo.WithString("text", mcpgo.Required()), mcpgo.WithReadOnlyHintAnnotation(true))
	s.AddTool(echo, func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		text := req.GetString("text", "")
		return &mcpgo.CallToolResult{
			Content:           []mcpgo.Content{mcpgo.NewTextContent("echo: " + text)},
			StructuredContent: map[string]any{"text": text, "pid": os.Getpid()},
		}, nil
	})
	s.AddTool(mcpgo.NewTool("fail", mcpgo.WithDescription("always fails")), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultError("it failed on purpose"), nil
	})
	s.AddTool(mcpgo.NewTool("slow", mcpgo.WithNumber("ms", mcpgo.Required())), func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		select {
		case <-time.After(time.Duration(req.GetFloat("ms", 0)) * time.Millisecond):
		case <-ctx.Done():
		}
		return mcpgo.NewToolResultText("done"), nil
	})
	s.AddTool(mcpgo.NewTool("crash"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		fmt.Fprintln(os.Stderr, "fake server: crashing on purpose")
		os.Exit(3)
		return nil, nil
	})
	s.AddTool(mcpgo.NewTool("grow"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		s.AddTool(mcpgo.NewTool("late"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText("late tool"), nil
		})
		return mcpgo.NewToolResultText("grown"), nil
	})
	wipe := mcpgo.NewTool("wipe", mcpgo.WithDestructiveHintAnnotation(yes))
	s.AddTool(wipe, func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultText("wiped"), nil
	})
	return s
}

// fakeCommand is the command line that starts fakeServer over stdio.
func fakeCommand(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/usr/bin/env", "HARNESS_MCP_TEST_MODE=fake", exe}
}

// nopSanitizer passes values through; the sanitize package has its own tests.
type nopSanitizer struct{}

func (nopSanitizer) Value(v any, _ []string) any { return v }
func (nopSanitizer) String(s string) string      { return s }

// events collects what a Harness emits.
type events struct {
	mu  sync.Mutex
	evs []ahp.Event
}

func (e *events) Emit(_ context.Context, ev ahp.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return nil
}

func (e *events) types(actionName string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.evs {
		// Through JSON, so the test does not depend on the payload's Go type.
		var m struct {
			EventType string `json:"event_type"`
			Payload   struct {
				Action    string `json:"action"`
				Principal string `json:"principal"`
			} `json:"payload"`
		}
		raw, _ := json.Marshal(ev)
		_ = json.Unmarshal(raw, &m)
		if m.Payload.Action == actionName {
			out = append(out, m.EventType+"@"+m.Payload.Principal)
		}
	}
	return out
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var (
	mountedMu      sync.Mutex
	mountedClients = map[*runtime.Harness]*Client{}
	// harnessWorkspaces holds the workspace of each Harness buildHarness built.
	harnessWorkspaces = map[*runtime.Harness]*workspace.Workspace{}
)

// trustedFlow adapts trusted.Service to TrustFlow, as cmd/harness does.
type trustedFlow struct{ svc *trusted.Service }

func (f trustedFlow) Preview(ctx context.Context, a action.Action) (map[string]any, string, error) {
	r, err := f.svc.Preview(ctx, trusted.Principal{Name: DefaultPrincipal}, a)
	return r.Preview, r.Token, err
}

func (f trustedFlow) Execute(ctx context.Context, token string) (action.Observation, error) {
	return f.svc.Execute(ctx, trusted.Principal{Name: DefaultPrincipal}, token)
}

// newTrustedFlow builds the trusted preview/execute service over h's
// workspace, as `harness mcp` does.
func newTrustedFlow(t testing.TB, h *runtime.Harness) TrustFlow {
	t.Helper()
	svc, err := trusted.NewService(trusted.Options{Harness: h, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return trustedFlow{svc}
}

// buildHarness builds a Harness on cfg's workspace root with the MCP client
// mounted; sink, when set, subscribes to its events.
func buildHarness(cfg *config.Config, sink ahp.Sink) (*runtime.Harness, func(), error) {
	cfg.Resolve()
	reg := schema.Catalog()
	var c *Client
	var steps policy.Steps
	if len(cfg.Harness.MCP.Servers) > 0 {
		var err error
		if c, err = NewClient(context.Background(), cfg.Harness.MCP, reg, quietLogger()); err != nil {
			return nil, nil, err
		}
		steps.Validating = []policy.Step{c.Check()}
	}
	h, ws, err := runtime.Build(cfg, runtime.BuildOptions{Sanitizer: nopSanitizer{}, Logger: quietLogger(), Registry: reg, Steps: steps})
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, nil, err
	}
	if sink != nil {
		h.Subscribe(sink)
	}
	mountedMu.Lock()
	harnessWorkspaces[h] = ws
	mountedMu.Unlock()
	closers := []func() error{ws.Close}
	if c != nil {
		c.Mount(h)
		mountedMu.Lock()
		mountedClients[h] = c
		mountedMu.Unlock()
		closers = append(closers, c.Close)
	}
	return h, func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}, nil
}

// testConfig parses YAML and resolves it, failing the test on error.
func testConfig(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// workspaceRoot makes a small workspace: a.txt, sub/b.txt.
func workspaceRoot(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	mustWrite(t, filepath.Join(root, "a.txt"), "hello world\nsecond line\n")
	mustWrite(t, filepath.Join(root, "sub", "b.txt"), "a needle here\n")
	return root
}

func mustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nodeDir returns mcp/testdata/node when its node_modules are installed.
// Without them the test fails under CI=true and is skipped otherwise.
func nodeDir(t testing.TB) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		msg := "the MCP interop tests need the npm packages: run `npm ci --prefix mcp/testdata/node`"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

func obsString(o action.Observation) string {
	b, _ := json.Marshal(o)
	return string(b)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// testContext is a context for one step of a test, ended after d or
// sooner when the test binary's deadline (go test -timeout) comes first, so
// that a stuck call fails with its own error instead of hanging the run.
func testContext(t testing.TB, d time.Duration) context.Context {
	if tt, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := tt.Deadline(); ok {
			if left := time.Until(dl) - 10*time.Second; left < d {
				d = max(left, time.Second)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
