// Package mcptest holds what the tests of the MCP client runtime (package
// mcp) and of the bridge (package mcp/bridge) share: a small MCP server the
// test binary serves over stdio, an event collector, and workspace and
// configuration helpers. It is for tests only.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
)

// ModeEnv names the environment variable that makes a test binary one of
// the MCP peers its tests need instead of running the tests.
const ModeEnv = "HARNESS_MCP_TEST_MODE"

// ServeFakeIfAsked serves FakeServer over stdin and stdout and exits when
// the test binary was started as the fake server (ModeEnv=fake). Call it
// first in TestMain.
func ServeFakeIfAsked() {
	if os.Getenv(ModeEnv) != "fake" {
		return
	}
	if err := mcpserver.ServeStdio(FakeServer()); err != nil {
		fmt.Fprintln(os.Stderr, "fake server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// FakeCommand is the command line that starts FakeServer over stdio: the
// running test binary in fake mode.
func FakeCommand(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{"/usr/bin/env", ModeEnv + "=fake", exe}
}

// FakeServer is an MCP server with tools that succeed (echo, read-only),
// fail, hang (slow), die (crash), add a tool later (grow adds late), and
// one that no test config allows (wipe, destructive).
func FakeServer() *mcpserver.MCPServer {
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

// NopSanitizer passes values through; the sanitize package has its own
// tests.
type NopSanitizer struct{}

// Value returns v unchanged.
func (NopSanitizer) Value(v any, _ []string) any { return v }

// String returns s unchanged.
func (NopSanitizer) String(s string) string { return s }

// Events collects what a Harness emits.
type Events struct {
	mu  sync.Mutex
	evs []ahp.Event
}

// Emit records ev.
func (e *Events) Emit(_ context.Context, ev ahp.Event) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
	return nil
}

// All returns the events recorded so far, oldest first.
func (e *Events) All() []ahp.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ahp.Event(nil), e.evs...)
}

// Types returns "<event type>@<principal>" for each event of actionName.
func (e *Events) Types(actionName string) []string {
	var out []string
	for _, ev := range e.All() {
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

// QuietLogger discards everything.
func QuietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Config parses YAML, failing the test on error.
func Config(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// WorkspaceRoot makes a small workspace: a.txt, sub/b.txt.
func WorkspaceRoot(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	MustWrite(t, filepath.Join(root, "a.txt"), "hello world\nsecond line\n")
	MustWrite(t, filepath.Join(root, "sub", "b.txt"), "a needle here\n")
	return root
}

// MustWrite writes a file, making its directories.
func MustWrite(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// NodeDir returns the absolute path of mcp/testdata/node, given as rel
// from the test's package directory, when its node_modules are installed.
// Without them the test fails under CI=true and is skipped otherwise.
func NodeDir(t testing.TB, rel string) string {
	t.Helper()
	dir, err := filepath.Abs(rel)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		msg := "the MCP interop tests need the npm packages: run `npm ci --prefix mcp/testdata/node` (make deps)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// ObsString is an observation as JSON, for failure messages.
func ObsString(o action.Observation) string {
	b, _ := json.Marshal(o)
	return string(b)
}

// QuoteList quotes each element for a YAML flow list.
func QuoteList(l []string) string {
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// Context is a context for one step of a test, ended after d or sooner
// when the test binary's deadline (go test -timeout) comes first, so that a
// stuck call fails with its own error instead of hanging the run.
func Context(t testing.TB, d time.Duration) context.Context {
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
