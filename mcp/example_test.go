package mcp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/mcp"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
)

type passThrough struct{}

func (passThrough) Value(v any, _ []string) any { return v }
func (passThrough) String(s string) string      { return s }

// ExampleNewClient mounts the MCP client runtime: mcp_call then reaches only
// the configured servers and their listed tools.
func ExampleNewClient() {
	cfg, _ := config.Parse("example.yaml", []byte(`
harness:
  auto-approved-actions: [mcp_call]
  mcp:
    servers:
      tools:
        command: [/nonexistent/mcp-server]
        tools: [search]
`))
	root, _ := os.MkdirTemp("", "harness-example-")
	defer os.RemoveAll(root)
	cfg.Harness.Workspace.Root = root
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := schema.Catalog()
	c, err := mcp.NewClient(context.Background(), cfg.Harness.MCP, reg, quiet)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	// The client's allowlist is a step of the guard, given when it is built.
	h, ws, _ := runtime.Build(cfg, runtime.BuildOptions{Sanitizer: passThrough{}, Registry: reg,
		Steps: policy.Steps{Validating: []policy.Step{c.Check()}}})
	defer ws.Close()
	c.Mount(h)

	for _, tool := range []string{"delete_everything", "search"} {
		obs := h.Execute(context.Background(), action.Action{Name: mcp.CallAction,
			Input: map[string]any{"server": "tools", "tool": tool, "arguments": map[string]any{}}})
		fmt.Println(tool+":", obs.Source, obs.Status, obs.Code)
	}
	// Output:
	// delete_everything: policy blocked command_not_allowed
	// search: mcp error mcp_error
}
