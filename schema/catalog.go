package schema

import (
	"encoding/json"

	"github.com/harness-runtime/harness/workspace"
)

// workspaceActions describes the workspace's actions as the registry
// publishes them: trusted, owned by the workspace runtime.
func workspaceActions() []ActionSchema {
	var out []ActionSchema
	for _, d := range workspace.Actions() {
		out = append(out, ActionSchema{
			Name: d.Name, Description: d.Description, Runtime: RuntimeWorkspace, Trusted: true,
			Risk: Risk(d.Risk), Input: d.Input,
		})
	}
	return out
}

// Catalog returns a new registry holding the built-in actions of SPEC
// section 3. Their runtimes (workspace, mcp) are wired by the program; the
// registry only describes them.
func Catalog() *Registry {
	r := NewRegistry()
	for _, s := range builtinCatalog {
		if err := r.Register(s); err != nil {
			panic("schema catalog: " + err.Error()) // a bug in this file, caught by the tests
		}
	}
	return r
}

// builtinCatalog is the workspace's actions (defined, with their
// handlers, in package workspace) and mcp_call.
var builtinCatalog = append(workspaceActions(), ActionSchema{
	Name:        "mcp_call",
	Description: "Call a tool on a configured MCP server.",
	Runtime:     RuntimeMCP, Trusted: true, Risk: RiskNetwork,
	Input: json.RawMessage(`{
  "type": "object",
  "required": ["server", "tool"],
  "properties": {
    "server": {"type": "string", "minLength": 1, "maxLength": 256, "description": "a server named under harness.mcp.servers"},
    "tool": {"type": "string", "minLength": 1, "maxLength": 256, "description": "one of that server's allowed tools"},
    "arguments": {"type": "object", "description": "the tool's arguments, checked against the tool's own input schema"}
  }
}`),
})
