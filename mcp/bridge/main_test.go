package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/mcp"
	"github.com/harness-runtime/harness/mcp/internal/mcptest"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
	"github.com/harness-runtime/harness/trusted"
)

// The test binary doubles as the MCP peers the tests need: with
// HARNESS_MCP_TEST_MODE=fake it is mcptest.FakeServer over stdio, with
// HARNESS_MCP_TEST_MODE=bridge it is `harness mcp` over stdio on the root
// and config named by HARNESS_MCP_TEST_ROOT and HARNESS_MCP_TEST_CONFIG.
func TestMain(m *testing.M) {
	mcptest.ServeFakeIfAsked()
	if os.Getenv(mcptest.ModeEnv) == "bridge" {
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

func fakeCommand(t testing.TB) []string { return mcptest.FakeCommand(t) }

type events = mcptest.Events

func quietLogger() *slog.Logger { return mcptest.QuietLogger() }

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

// buildHarness builds a Harness on cfg's workspace root with the MCP
// client runtime mounted when cfg configures servers; sink, when set,
// subscribes to its events.
func buildHarness(cfg *config.Config, sink ahp.Sink) (*runtime.Harness, func(), error) {
	cfg.Resolve()
	reg := schema.Catalog()
	var c *mcp.Client
	var steps policy.Steps
	if len(cfg.Harness.MCP.Servers) > 0 {
		var err error
		if c, err = mcp.NewClient(context.Background(), cfg.Harness.MCP, reg, quietLogger()); err != nil {
			return nil, nil, err
		}
		steps.Validating = []policy.Step{c.Check()}
	}
	h, ws, err := runtime.Build(cfg, runtime.BuildOptions{Sanitizer: mcptest.NopSanitizer{}, Logger: quietLogger(), Registry: reg, Steps: steps})
	if err != nil {
		if c != nil {
			c.Close()
		}
		return nil, nil, err
	}
	if sink != nil {
		h.Subscribe(sink)
	}
	closers := []func() error{ws.Close}
	if c != nil {
		c.Mount(h)
		closers = append(closers, c.Close)
	}
	return h, func() {
		for i := len(closers) - 1; i >= 0; i-- {
			_ = closers[i]()
		}
	}, nil
}

func testConfig(t testing.TB, yaml string) *config.Config { return mcptest.Config(t, yaml) }

// serverWithReadTool is a bridge on the default configuration with one
// more read tool, name, that takes any object and runs fn.
func serverWithReadTool(t testing.TB, name string, fn func(ctx context.Context) (map[string]any, error)) *Server {
	t.Helper()
	cfg := testConfig(t, "harness: {}\n")
	cfg.Harness.Workspace.Root = t.TempDir()
	h, closeFn, err := buildHarness(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeFn)
	if err := h.Register(runtime.Spec{Name: name, Description: "a test tool", Risk: schema.RiskRead, Input: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ map[string]any) (map[string]any, error) { return fn(ctx) }); err != nil {
		t.Fatal(err)
	}
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func workspaceRoot(t testing.TB) string { return mcptest.WorkspaceRoot(t) }

func mustWrite(t testing.TB, path, content string) { t.Helper(); mcptest.MustWrite(t, path, content) }

// nodeDir returns mcp/testdata/node when its node_modules are installed.
func nodeDir(t testing.TB) string {
	return mcptest.NodeDir(t, filepath.Join("..", "testdata", "node"))
}

func obsString(o action.Observation) string { return mcptest.ObsString(o) }

func quoteList(l []string) string { return mcptest.QuoteList(l) }

func testContext(t testing.TB, d time.Duration) context.Context { return mcptest.Context(t, d) }
