package schema

import (
	"encoding/json"
	"slices"
	"sync"

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
//
// The built-in schemas are prepared once per process and compiled on
// first use, shared by every registry Catalog returns (a program that
// lists actions, or validates inputs the fast validator accepts, compiles
// none); TestCatalogCompiles compiles them all.
func Catalog() *Registry {
	r := NewRegistry()
	for _, s := range preparedCatalog() {
		if err := r.add(&s); err != nil {
			panic("schema catalog: " + err.Error()) // a bug in this file, caught by the tests
		}
	}
	return r
}

// preparedCatalog is builtinCatalog prepared (each a copy per call, their
// compiled schemas shared).
var preparedCatalog = func() func() []ActionSchema {
	once := sync.OnceValue(func() []ActionSchema {
		out := make([]ActionSchema, len(builtinCatalog))
		for i, s := range builtinCatalog {
			if err := prepare(&s); err != nil {
				panic("schema catalog: " + err.Error()) // a bug in this file, caught by the tests
			}
			out[i] = s
		}
		return out
	})
	return func() []ActionSchema {
		out := slices.Clone(once())
		for i := range out {
			out[i].Sensitive = slices.Clone(out[i].Sensitive)
		}
		return out
	}
}()

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
