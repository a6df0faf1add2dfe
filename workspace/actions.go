package workspace

import (
	"context"
	"encoding/json"

	"github.com/harness-runtime/harness/action"
)

// ActionDef is one workspace action, defined in one place: what the schema
// registry publishes of it (description, input schema, risk class) and the
// handler and planner the workspace runs it with. The registry's catalog
// (package schema) is built from Actions.
type ActionDef struct {
	Name        string
	Description string
	// Risk is the action's risk class: "read", "write" or "exec".
	Risk string
	// Input is the JSON Schema of the action's input.
	Input json.RawMessage

	run  func(w *Workspace, ctx context.Context, in map[string]any) (map[string]any, error)
	plan func(w *Workspace, ctx context.Context, a action.Action) (action.Plan, error)
}

// Actions returns the workspace's actions, in the catalog's order.
func Actions() []ActionDef { return append([]ActionDef(nil), actionTable...) }

var actionIndex = func() map[string]*ActionDef {
	m := make(map[string]*ActionDef, len(actionTable))
	for i := range actionTable {
		m[actionTable[i].Name] = &actionTable[i]
	}
	return m
}()

var actionTable = []ActionDef{
	{
		Name:        "workspace_list_files",
		Description: "List files and directories under a path of the workspace.",
		Risk:        "read",
		Input: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "maxLength": 4096, "description": "directory relative to the workspace root (default: the root)"},
    "recursive": {"type": "boolean", "description": "also list the entries of subdirectories"},
    "max_entries": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "stop after this many entries (the listing then says it was truncated)"},
    "include_git": {"type": "boolean", "description": "also list .git internals"},
    "details": {"type": "boolean", "description": "also each entry's size and mod_time, at the cost of an lstat per entry (default false: names and types only)"}
  }
}`),
		run:  (*Workspace).listFiles,
		plan: (*Workspace).planRead,
	},
	{
		Name:        "workspace_read_file",
		Description: "Read a text file of the workspace, whole or a range of lines; returns its SHA-256.",
		Risk:        "read",
		Input: json.RawMessage(`{
  "type": "object",
  "required": ["path"],
  "properties": {
    "path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "file relative to the workspace root"},
    "offset": {"type": "integer", "minimum": 0, "description": "first line to return, counted from 0"},
    "limit": {"type": "integer", "minimum": 1, "description": "number of lines to return"}
  }
}`),
		run:  (*Workspace).readFile,
		plan: (*Workspace).planRead,
	},
	{
		Name:        "workspace_search_text",
		Description: "Search the workspace's text files for a literal string or an RE2 regular expression.",
		Risk:        "read",
		Input: json.RawMessage(`{
  "type": "object",
  "required": ["query"],
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "the text to find, or an RE2 regular expression with regex: true"},
    "path": {"type": "string", "maxLength": 4096, "description": "directory or file to search, relative to the workspace root (default: the root)"},
    "regex": {"type": "boolean", "description": "query is an RE2 regular expression, matched per line"},
    "glob": {"type": "string", "maxLength": 1024, "description": "only files whose path matches this glob (** crosses directories)"},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 100000, "description": "stop after this many matches"},
    "case_insensitive": {"type": "boolean", "description": "match regardless of letter case"}
  }
}`),
		run:  (*Workspace).searchText,
		plan: (*Workspace).planRead,
	},
	{
		Name:        "workspace_propose_patch",
		Description: "Compute the unified diff of a change (new content or a patch) without writing anything.",
		Risk:        "read",
		Input:       json.RawMessage(patchInputSchema),
		run:         (*Workspace).proposePatch,
		plan:        (*Workspace).planPatchAction,
	},
	{
		Name:        "workspace_apply_patch",
		Description: "Apply a change (new content, a unified or git diff, or a patch envelope) atomically.",
		Risk:        "write",
		Input:       json.RawMessage(patchInputSchema),
		run:         (*Workspace).applyPatch,
		plan:        (*Workspace).planPatchAction,
	},
	{
		Name:        "workspace_run_shell",
		Description: "Run one allowlisted command in the workspace root, without a shell, in a sandbox.",
		Risk:        "exec",
		Input: json.RawMessage(`{
  "type": "object",
  "required": ["command"],
  "properties": {
    "command": {"type": "string", "minLength": 1, "maxLength": 8192, "description": "one command line, split into words without a shell (no pipes, redirections or substitutions)"},
    "timeout_seconds": {"type": "integer", "minimum": 1, "maximum": 3600, "description": "stop the command sooner than the configured timeout"}
  }
}`),
		run:  (*Workspace).runShell,
		plan: (*Workspace).planCommandAction,
	},
}

// patchInputSchema is the input of workspace_propose_patch and
// workspace_apply_patch.
const patchInputSchema = `{
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
