package schema

import "encoding/json"

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

const patchInput = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "file to change, relative to the workspace root; omit for a multi-file patch"},
    "content": {"type": "string", "description": "the whole new content of path"},
    "patch": {"type": "string", "minLength": 1, "description": "a unified diff, a git diff, or a *** Begin Patch envelope"},
    "expected_sha256": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$", "description": "SHA-256 of path's current content, from an earlier read; refused with stale_preview if the file changed"},
    "strip": {"type": "integer", "minimum": 0, "maximum": 16, "description": "path components to strip from patch headers; guessed when absent"},
    "fuzz": {"type": "number", "minimum": 0, "maximum": 1, "description": "similarity threshold for fuzzy hunk matching"},
    "trust_line_numbers": {"type": "boolean", "description": "for diffs made by a tool (git diff, diff -u): let the stated line number choose between places where a hunk matches equally; off by default, since a model's numbers are often wrong"}
  },
  "oneOf": [
    {"required": ["path", "content"], "not": {"required": ["patch"]}},
    {"required": ["patch"], "not": {"required": ["content"]}}
  ]
}`

var builtinCatalog = []ActionSchema{
	{
		Name:        "workspace_list_files",
		Description: "List files and directories under a path of the workspace.",
		Runtime:     RuntimeWorkspace, Trusted: true, Risk: RiskRead,
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "maxLength": 4096, "description": "directory relative to the workspace root (default: the root)"},
    "recursive": {"type": "boolean"},
    "max_entries": {"type": "integer", "minimum": 1, "maximum": 100000},
    "include_git": {"type": "boolean", "description": "also list .git internals"},
    "details": {"type": "boolean", "description": "each entry's size and mod_time (default true); false lists names and types only, faster"}
  }
}`),
	},
	{
		Name:        "workspace_read_file",
		Description: "Read a text file of the workspace, whole or a range of lines; returns its SHA-256.",
		Runtime:     RuntimeWorkspace, Trusted: true, Risk: RiskRead,
		Input: json.RawMessage(`{
  "type": "object",
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 4096},
    "offset": {"type": "integer", "minimum": 0, "description": "first line to return, counted from 0"},
    "limit": {"type": "integer", "minimum": 1, "description": "number of lines to return"}
  }
}`),
	},
	{
		Name:        "workspace_search_text",
		Description: "Search the workspace's text files for a literal string or an RE2 regular expression.",
		Runtime:     RuntimeWorkspace, Trusted: true, Risk: RiskRead,
		Input: json.RawMessage(`{
  "type": "object",
  "required": ["query"],
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 4096},
    "path": {"type": "string", "maxLength": 4096},
    "regex": {"type": "boolean"},
    "glob": {"type": "string", "maxLength": 1024},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 100000},
    "case_insensitive": {"type": "boolean"}
  }
}`),
	},
	{
		Name:        "workspace_propose_patch",
		Description: "Compute the unified diff of a change (new content or a patch) without writing anything.",
		Runtime:     RuntimeWorkspace, Trusted: true, Risk: RiskRead,
		Input: json.RawMessage(patchInput),
	},
	{
		Name:        "workspace_apply_patch",
		Description: "Apply a change (new content, a unified or git diff, or a patch envelope) atomically.",
		Runtime:     RuntimeWorkspace, Trusted: true, Risk: RiskWrite,
		Input: json.RawMessage(patchInput),
	},
	{
		Name:        "workspace_run_shell",
		Description: "Run one allowlisted command in the workspace root, without a shell, in a sandbox.",
		Runtime:     RuntimeWorkspace, Trusted: true, Risk: RiskExec,
		Input: json.RawMessage(`{
  "type": "object",
  "required": ["command"],
  "properties": {
    "command": {"type": "string", "minLength": 1, "maxLength": 8192},
    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 3600}
  }
}`),
	},
	{
		Name:        "mcp_call",
		Description: "Call a tool on a configured MCP server.",
		Runtime:     RuntimeMCP, Trusted: true, Risk: RiskNetwork,
		Input: json.RawMessage(`{
  "type": "object",
  "required": ["server", "tool"],
  "properties": {
    "server": {"type": "string", "minLength": 1, "maxLength": 256},
    "tool": {"type": "string", "minLength": 1, "maxLength": 256},
    "arguments": {"type": "object"}
  }
}`),
	},
}
