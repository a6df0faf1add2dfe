package eval

import (
	"context"
	"fmt"
	"os"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// mcpServerEnv, set to "1", makes ServeMCPIfAsked serve.
const mcpServerEnv = "HARNESS_EVAL_MCP_SERVER"

// ServeMCPIfAsked serves the evaluation's MCP server over stdio and exits
// when the environment asks for it (the configuration's MCP server is the
// evaluating program itself, started again); otherwise it returns at once.
// Call it first thing in main or TestMain.
//
// The server has two tools: echo (read-only, allowed by the configuration)
// and wipe (destructive, not allowed), over mcp-go's stdio transport.
func ServeMCPIfAsked() {
	if os.Getenv(mcpServerEnv) != "1" {
		return
	}
	s := mcpserver.NewMCPServer("harness-eval", "1.0.0", mcpserver.WithToolCapabilities(true))
	echo := mcpgo.NewTool("echo", mcpgo.WithDescription("Echo a text."),
		mcpgo.WithString("text", mcpgo.Required()), mcpgo.WithReadOnlyHintAnnotation(true))
	s.AddTool(echo, func(_ context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		text := req.GetString("text", "")
		return &mcpgo.CallToolResult{
			Content:           []mcpgo.Content{mcpgo.NewTextContent("echo: " + text)},
			StructuredContent: map[string]any{"text": text},
		}, nil
	})
	wipe := mcpgo.NewTool("wipe", mcpgo.WithDescription("Would wipe everything; never allowed."),
		mcpgo.WithDestructiveHintAnnotation(true))
	s.AddTool(wipe, func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return mcpgo.NewToolResultError("wipe must never be called"), nil
	})
	if err := mcpserver.ServeStdio(s); err != nil {
		fmt.Fprintln(os.Stderr, "harness-eval MCP server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}
