package eval

import "github.com/harness-runtime/harness/action"

// Variant names one of the two configurations every entry point is given
// (see configYAML). Scenarios run on Main unless they need the other.
type Variant string

// The configurations.
const (
	// Main: the dev profile with the read-risk workspace actions
	// auto-approved, the MCP server "evalsrv" (tool echo allowed and
	// registered as mcp.evalsrv.echo), tenant "restricted" limited to
	// workspace_list_files, tenant "capped" with a risk budget smaller
	// than one read, and the bridge confirming apply_patch,
	// run_shell and mcp_call through elicitation.
	Main Variant = "main"
	// Restricted: Main without the MCP server, with the trusted runtime
	// turned off and workspace_apply_patch disabled; the two guard steps
	// that cannot be reached in Main otherwise.
	Restricted Variant = "restricted"
)

// Scenario is one row of the evaluation: an action, how it is asked for,
// and the outcome every entry point must give.
type Scenario struct {
	// Name is the row's label.
	Name string
	// Action and Input (a JSON object) are what is asked for; Tenant is
	// the action's tenant.
	Action string
	Input  string
	Tenant string
	// Trusted asks with trust, each entry point its own way: the library
	// sets Action.Trusted (the program vouches), the CLI passes --trusted,
	// HTTP previews and executes the token, and the MCP bridge asks the
	// person through elicitation (which the evaluation's client accepts)
	// for the actions of harness.mcp.bridge.trusted-actions.
	Trusted bool
	// Stale changes the file between the preview and the execute of a
	// trusted flow; it implies Trusted. The library uses its trusted
	// service (pipeline.Options.Trusted), HTTP and MCP their own flow.
	Stale bool
	// Variant is the configuration the scenario needs (default Main).
	Variant Variant
	// Want is what every entry point that runs the scenario must say: the
	// observation's status and code, and the step of its decision ("" when
	// the guard plainly allowed, including refusals by a runtime).
	Want Outcome
	// NA lists the entry points that cannot express the scenario, with
	// the reason. They are shown as n/a and never counted as differences.
	NA map[Entry]string
	// Pending, when set, keeps the scenario out of the run (shown as
	// pending with this reason): a behaviour the configuration cannot ask
	// for yet. Deleting the line enables it on every entry point.
	Pending string
}

// Reasons shared by several rows.
const (
	naMCPUnserved = "the bridge serves only registered, enabled actions as tools; MCP answers a call of any other tool with a JSON-RPC error (-32602) before Harness sees it"
	naMCPTenant   = "MCP has no tenant: a tools/call carries a tool name and arguments only"
	naCLIBuiltin  = "the harness binary registers no builtin action (builtins are Go functions a program registers on its own Harness)"
	naCLIStale    = "the CLI has no preview -> execute flow: harness run runs at once and harness patch --dry-run mints no token"
)

// Scenarios is the evaluation's one table. Every entry point runs every
// row (unless n/a or pending) in this order, on its own copy of the same
// workspace and configuration.
var Scenarios = []Scenario{
	{
		Name: "builtin tool", Action: builtinName, Input: `{"text":"hi"}`,
		Want: ok(),
		NA:   map[Entry]string{CLI: naCLIBuiltin, MCP: naCLIBuiltin},
	},
	{
		Name: "mcp_call to an MCP server", Action: "mcp_call", Trusted: true,
		Input: `{"server":"evalsrv","tool":"echo","arguments":{"text":"hi"}}`,
		Want:  ok(),
	},
	{Name: "list files", Action: "workspace_list_files", Input: `{}`, Want: ok()},
	{Name: "read a file", Action: "workspace_read_file", Input: `{"path":"a.txt"}`, Want: ok()},
	{Name: "search text", Action: "workspace_search_text", Input: `{"query":"beta"}`, Want: ok()},
	{Name: "propose a patch", Action: "workspace_propose_patch", Input: `{"path":"a.txt","content":"alpha\ngamma\n"}`, Want: ok()},
	{Name: "apply a patch", Action: "workspace_apply_patch", Input: `{"path":"apply.txt","content":"after\n"}`, Trusted: true, Want: ok()},
	{Name: "run a command", Action: "workspace_run_shell", Input: `{"command":"pwd"}`, Trusted: true, Want: ok()},
	{
		Name: "error while running", Action: "workspace_read_file", Input: `{"path":"missing.txt"}`,
		Want: Outcome{action.StatusError, action.CodeNotFound, ""},
	},
	{
		Name: "unknown action", Action: "no_such_action", Input: `{}`,
		Want: refused(action.CodeUnknownAction, "registered"),
		NA:   map[Entry]string{MCP: naMCPUnserved},
	},
	{
		Name: "disabled action", Action: "workspace_apply_patch", Input: `{"path":"a.txt","content":"x\n"}`, Variant: Restricted,
		Want: refused(action.CodeActionDisabled, "enabled"),
		NA:   map[Entry]string{MCP: naMCPUnserved},
	},
	{
		Name: "tenant not allowed", Action: "workspace_read_file", Input: `{"path":"a.txt"}`, Tenant: "restricted",
		Want: refused(action.CodeTenantNotAllowed, "tenant_allowed"),
		NA:   map[Entry]string{MCP: naMCPTenant},
	},
	{
		// Tenant "capped" may spend 1 of risk and a read weighs 2 there, so
		// its first read is over budget whatever ran before: the same
		// answer from every entry point, each with its own counters.
		Name: "budget exhausted", Action: "workspace_read_file", Input: `{"path":"a.txt"}`, Tenant: "capped",
		Want: refused(action.CodeBudgetExhausted, "governance"),
		NA:   map[Entry]string{MCP: naMCPTenant},
	},
	{
		Name: "invalid input", Action: "workspace_read_file", Input: `{"path":42}`,
		Want: refused(action.CodeInvalidInput, "input_valid"),
	},
	{
		Name: "trusted runtime disabled", Action: "workspace_read_file", Input: `{"path":"a.txt"}`, Variant: Restricted,
		Want: refused(action.CodeTrustedRuntimeDisabled, "trusted_runtime_enabled"),
	},
	{
		// An MCP tool action: trusted, not auto-approved, and not one the
		// bridge confirms, so every entry point asks without trust.
		Name: "trust required", Action: "mcp.evalsrv.echo", Input: `{"text":"hi"}`,
		Want: refused(action.CodeTrustRequired, "trust_present"),
	},
	{
		Name: "MCP tool not allowed", Action: "mcp_call", Input: `{"server":"evalsrv","tool":"wipe","arguments":{}}`,
		Want: refused(action.CodeCommandNotAllowed, "mcp_allowlist"),
	},
	{
		Name: "path outside root", Action: "workspace_read_file", Input: `{"path":"../outside.txt"}`,
		Want: refused(action.CodePathOutsideRoot, ""),
	},
	{
		Name: "command not allowed", Action: "workspace_run_shell", Input: `{"command":"curl http://127.0.0.1/"}`, Trusted: true,
		Want: refused(action.CodeCommandNotAllowed, ""),
	},
	{
		Name: "stale preview", Action: "workspace_apply_patch", Input: `{"path":"stale.txt","content":"confirmed\n"}`, Trusted: true, Stale: true,
		Want: refused(action.CodeStalePreview, ""),
		NA:   map[Entry]string{CLI: naCLIStale},
	},
	{
		Name: "ask", Action: "workspace_read_file", Input: `{"path":"ask/secret.txt"}`,
		Want: Outcome{action.StatusNeedsConfirmation, action.CodeApprovalRequired, "rules"},
	},
}

func ok() Outcome { return Outcome{Status: action.StatusOK} }

func refused(c action.Code, step string) Outcome {
	return Outcome{Status: c.Status(), Code: c, Step: step}
}
