package bridge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/mcp/bridge"
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

	srv, _ := bridge.NewServer(h, cfg)
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
