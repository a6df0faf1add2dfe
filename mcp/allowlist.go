package mcp

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// CheckName is the name of the guard step that AllowlistCheck and
// Client.Check return; it shows in Decision.Check of a refusal.
const CheckName = "mcp_allowlist"

// CallAction is the name of the generic action that calls a tool on a
// configured server: input {"server", "tool", "arguments"}.
const CallAction = "mcp_call"

// ToolActionPrefix starts the name of every per-tool action, which reads
// mcp.<server>.<tool>.
const ToolActionPrefix = "mcp."

// AllowlistCheck returns the guard step that lets an MCP action through only
// when its server is configured and enabled in cfg and its tool is listed
// in that server's tools. It applies to mcp_call and to every action whose
// schema names runtime "mcp" (the mcp.<server>.<tool> ones); other actions
// pass untouched. See the package documentation for the codes it refuses
// with. It does not validate arguments: Client.Check does that as well.
//
// cfg should be resolved (config.Config.Resolve); an unresolved server
// whose enabled key is unset counts as enabled, as Resolve would make it.
func AllowlistCheck(cfg config.MCPConfig) policy.Check {
	al := newAllowlist(cfg)
	return policy.Check{Name: CheckName, Fn: func(_ context.Context, req *policy.Request) policy.Decision {
		_, d := al.decide(req)
		return d
	}}
}

// allowlist is the compiled form of harness.mcp.servers.
type allowlist struct {
	servers map[string]serverRule
	// names holds the configured server names longest first, so that
	// mcp.a.b.c resolves to server "a.b" before server "a".
	names []string
}

type serverRule struct {
	enabled bool
	tools   map[string]bool
}

func newAllowlist(cfg config.MCPConfig) *allowlist {
	al := &allowlist{servers: make(map[string]serverRule, len(cfg.Servers))}
	for name, s := range cfg.Servers {
		r := serverRule{enabled: s.Enabled == nil || *s.Enabled, tools: make(map[string]bool, len(s.Tools))}
		for _, t := range s.Tools {
			r.tools[t] = true
		}
		al.servers[name] = r
		al.names = append(al.names, name)
	}
	slices.SortFunc(al.names, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return al
}

// target is the server and tool an MCP action addresses, with the arguments
// it passes.
type target struct {
	server, tool string
	args         map[string]any
}

// isMCPAction reports whether the request is one the allowlist governs.
func isMCPAction(req *policy.Request) bool {
	if req.Action.Name == CallAction {
		return true
	}
	return req.Schema != nil && req.Schema.Runtime == schema.RuntimeMCP
}

// resolve finds the server and tool an action names. ok is false for an
// action that is not an MCP action at all.
func (al *allowlist) resolve(a action.Action) (t target, ok bool, err *action.Error) {
	if a.Name == CallAction {
		server, _ := a.Input["server"].(string)
		tool, _ := a.Input["tool"].(string)
		if server == "" || tool == "" {
			return t, true, action.Errorf(action.CodeInvalidInput, "mcp_call needs a server and a tool (strings)")
		}
		args, _ := a.Input["arguments"].(map[string]any)
		if raw, present := a.Input["arguments"]; present && raw != nil && args == nil {
			return t, true, action.Errorf(action.CodeInvalidInput, "mcp_call arguments must be an object")
		}
		return target{server: server, tool: tool, args: args}, true, nil
	}
	rest, found := strings.CutPrefix(a.Name, ToolActionPrefix)
	if !found {
		return t, false, nil
	}
	for _, name := range al.names {
		if tool, found := strings.CutPrefix(rest, name+"."); found && tool != "" {
			return target{server: name, tool: tool, args: a.Input}, true, nil
		}
	}
	return t, true, action.Errorf(action.CodeActionDisabled, "%s names no MCP server configured under harness.mcp.servers", a.Name)
}

// permit applies the allowlist to a resolved target.
func (al *allowlist) permit(t target) *action.Error {
	s, ok := al.servers[t.server]
	if !ok {
		return action.Errorf(action.CodeActionDisabled, "MCP server %s is not configured (harness.mcp.servers)", strconv.Quote(short(t.server)))
	}
	if !s.enabled {
		return action.Errorf(action.CodeActionDisabled, "MCP server %s is disabled (harness.mcp.servers.%s.enabled)", strconv.Quote(t.server), t.server)
	}
	if !s.tools[t.tool] {
		return action.Errorf(action.CodeCommandNotAllowed, "tool %s of MCP server %s is not allowed (harness.mcp.servers.%s.tools)", strconv.Quote(short(t.tool)), strconv.Quote(t.server), t.server)
	}
	return nil
}

// decide runs resolve and permit for a guard request.
func (al *allowlist) decide(req *policy.Request) (target, policy.Decision) {
	if !isMCPAction(req) {
		return target{}, policy.Decision{}
	}
	t, _, err := al.resolve(req.Action)
	if err == nil {
		err = al.permit(t)
	}
	if err != nil {
		return t, policy.Decision{Code: err.Code, Message: err.Message}
	}
	return t, policy.Decision{}
}

func short(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
