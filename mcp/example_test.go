package mcp_test

import (
	"context"
	"fmt"
	"github.com/harness-runtime/harness/schema"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/mcp"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
)

type passThrough struct{}

func (passThrough) Value(v any, _ []string) any { return v }
func (passThrough) String(s string) string      { return s }

// ExampleNewServer serves a workspace's actions as MCP tools and calls one
// with an in-process MCP client.
func ExampleNewServer() {
	root, _ := os.MkdirTemp("", "harness-example-")
	defer os.RemoveAll(root)
	_ = os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the workspace\n"), 0o644)

	cfg, _ := config.Parse("example.yaml", []byte(`
harness:
  auto-approved-actions: [workspace_read_file]
`))
	cfg.Harness.Workspace.Root = root
	h, ws, _ := runtime.Build(cfg, runtime.BuildOptions{Sanitizer: passThrough{}})
	defer ws.Close()

	srv, _ := mcp.NewServer(h, cfg)
	cli, _ := mcpclient.NewInProcessClient(srv.MCPServer())
	defer cli.Close()
	ctx := context.Background()
	_ = cli.Start(ctx)
	_, _ = cli.Initialize(ctx, mcpgo.InitializeRequest{})

	res, _ := cli.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{
		Name: "workspace_read_file", Arguments: map[string]any{"path": "hello.txt"}}})
	fmt.Print(res.Content[0].(mcpgo.TextContent).Text)

	res, _ = cli.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{
		Name: "workspace_read_file", Arguments: map[string]any{"path": "../secret"}}})
	fmt.Println(res.IsError, res.Content[0].(mcpgo.TextContent).Text)
	// Output:
	// hello from the workspace
	// true blocked (path_outside_root): path "../secret" leaves the workspace root
}

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
