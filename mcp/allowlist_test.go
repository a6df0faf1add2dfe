package mcp

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

func TestAllowlistCheck(t *testing.T) {
	off := false
	cfg := config.MCPConfig{Servers: map[string]config.MCPServerConfig{
		"fs":      {Command: []string{"x"}, Tools: []string{"read", "list"}},
		"fs.deep": {Command: []string{"x"}, Tools: []string{"tool"}},
		"off":     {Enabled: &off, Command: []string{"x"}, Tools: []string{"read"}},
		"none":    {Command: []string{"x"}},
	}}
	check := AllowlistCheck(cfg)
	mcpSchema := &schema.ActionSchema{Name: "x", Runtime: schema.RuntimeMCP}
	tests := []struct {
		name   string
		action action.Action
		schema *schema.ActionSchema
		want   action.Code
	}{
		{"allowed tool", callAction("fs", "read"), nil, ""},
		{"second allowed tool", callAction("fs", "list"), nil, ""},
		{"unconfigured server", callAction("web", "read"), nil, action.CodeActionDisabled},
		{"disabled server", callAction("off", "read"), nil, action.CodeActionDisabled},
		{"tool not listed", callAction("fs", "write"), nil, action.CodeCommandNotAllowed},
		{"no tools listed allows none", callAction("none", "read"), nil, action.CodeCommandNotAllowed},
		{"tool names are exact", callAction("fs", "READ"), nil, action.CodeCommandNotAllowed},
		{"missing tool", action.Action{Name: CallAction, Input: map[string]any{"server": "fs"}}, nil, action.CodeInvalidInput},
		{"arguments not an object", action.Action{Name: CallAction, Input: map[string]any{"server": "fs", "tool": "read", "arguments": "x"}}, nil, action.CodeInvalidInput},
		{"per-tool action allowed", action.Action{Name: "mcp.fs.read"}, mcpSchema, ""},
		{"per-tool action on a dotted server name", action.Action{Name: "mcp.fs.deep.tool"}, mcpSchema, ""},
		{"per-tool action not listed", action.Action{Name: "mcp.fs.write"}, mcpSchema, action.CodeCommandNotAllowed},
		{"per-tool action on a disabled server", action.Action{Name: "mcp.off.read"}, mcpSchema, action.CodeActionDisabled},
		{"per-tool action on no configured server", action.Action{Name: "mcp.web.read"}, mcpSchema, action.CodeActionDisabled},
		{"other actions pass", action.Action{Name: "workspace_read_file"}, &schema.ActionSchema{Runtime: schema.RuntimeWorkspace}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &policy.Request{Action: tc.action, Schema: tc.schema}
			d := check.Fn(context.Background(), req)
			assert.Equal(t, tc.want, d.Code, d.Message)
		})
	}
	assert.Equal(t, CheckName, check.Name)
}

func callAction(server, tool string) action.Action {
	return action.Action{Name: CallAction, Input: map[string]any{"server": server, "tool": tool, "arguments": map[string]any{}}}
}
