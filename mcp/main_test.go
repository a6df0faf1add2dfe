package mcp

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/mcp/internal/mcptest"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
)

// The test binary doubles as the MCP server the tests need: with
// HARNESS_MCP_TEST_MODE=fake it is mcptest.FakeServer over stdio.
func TestMain(m *testing.M) {
	mcptest.ServeFakeIfAsked()
	os.Exit(m.Run())
}

func fakeCommand(t testing.TB) []string { return mcptest.FakeCommand(t) }

type events = mcptest.Events

func quietLogger() *slog.Logger { return mcptest.QuietLogger() }

var (
	mountedMu      sync.Mutex
	mountedClients = map[*runtime.Harness]*Client{}
)

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

func testConfig(t testing.TB, yaml string) *config.Config { return mcptest.Config(t, yaml) }

func workspaceRoot(t testing.TB) string { return mcptest.WorkspaceRoot(t) }

// nodeDir returns mcp/testdata/node when its node_modules are installed.
func nodeDir(t testing.TB) string { return mcptest.NodeDir(t, filepath.Join("testdata", "node")) }

func obsString(o action.Observation) string { return mcptest.ObsString(o) }

func quoteList(l []string) string { return mcptest.QuoteList(l) }
