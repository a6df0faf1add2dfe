package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/harness-runtime/harness/schema"
)

// An agent loop hands the registered actions to its model as that API's
// tool definitions, and maps the tool the model calls back to an action.
func ExampleRegistry_Export() {
	reg := schema.Catalog()
	_ = reg.Register(schema.ActionSchema{
		Name: "mcp.docs.search", Description: "Search the docs.", Runtime: schema.RuntimeMCP, Risk: schema.RiskNetwork,
		Input: json.RawMessage(`{"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}`),
	})

	// No MCP server is configured here, so mcp_call is not offered.
	tools, err := reg.Export(schema.FormatOpenAI, schema.ExportOptions{Omit: []string{"mcp_call"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(tools.Names())

	// The definitions go into the request's "tools" field as they are.
	body, _ := json.Marshal(map[string]any{"model": "…", "tools": tools})
	fmt.Println(json.Valid(body))

	// The model called mcp__docs__search: run the action it stands for.
	name, ok := tools.ActionName("mcp__docs__search")
	fmt.Println(name, ok)

	one, _ := reg.Export(schema.FormatAnthropic, schema.ExportOptions{Omit: []string{"mcp_call"}})
	fmt.Println(string(one.List[0].Definition))
	// Output:
	// [mcp__docs__search workspace_apply_patch workspace_list_files workspace_propose_patch workspace_read_file workspace_run_shell workspace_search_text]
	// true
	// mcp.docs.search true
	// {"name":"mcp__docs__search","description":"Search the docs.","input_schema":{"additionalProperties":false,"properties":{"q":{"type":"string"}},"required":["q"],"type":"object"}}
}
