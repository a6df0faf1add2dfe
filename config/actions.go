package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/harness-runtime/harness/schema"
)

// Option changes how a configuration is read and checked.
type Option func(*options)

type options struct {
	actions []string
}

// WithActions names the actions a program registers beyond the built-in
// catalog (runtime.RegisterFunc, a registry given to the pipeline), so that
// the configuration's action lists may name them. Without it a name that is
// neither a built-in action nor an mcp.<server>.<tool> of a configured
// server with register-tools is a problem, since a misspelt name in
// disabled-actions would otherwise leave the action enabled.
func WithActions(names ...string) Option {
	return func(o *options) { o.actions = append(o.actions, names...) }
}

func newOptions(opts []Option) *options {
	o := &options{}
	for _, f := range opts {
		f(o)
	}
	return o
}

// actionList is one list of action names in the configuration.
type actionList struct {
	ns    string // the validator's namespace: harness.tenant-allowed-actions[acme]
	names []string
}

func (h *HarnessConfig) actionLists() []actionList {
	lists := []actionList{
		{"harness.disabled-actions", h.DisabledActions},
		{"harness.auto-approved-actions", h.AutoApprovedActions},
	}
	tenants := make([]string, 0, len(h.TenantAllowedActions))
	for t := range h.TenantAllowedActions {
		tenants = append(tenants, t)
	}
	sort.Strings(tenants)
	for _, t := range tenants {
		lists = append(lists, actionList{"harness.tenant-allowed-actions[" + t + "]", h.TenantAllowedActions[t]})
	}
	lists = append(lists, actionList{"harness.mcp.bridge.trusted-actions", h.MCP.Bridge.TrustedActions})
	for i, r := range h.Rules {
		lists = append(lists, actionList{"harness.rules[" + strconv.Itoa(i) + "].actions", r.Actions})
	}
	return lists
}

// knownActions are the names an action list may hold: the built-in
// catalog, the program's own (WithActions), and mcp.<server>.<tool> for
// each listed tool of a server with register-tools.
func (h *HarnessConfig) knownActions(extra []string) []string {
	var names []string
	for _, s := range schema.Catalog().List() {
		names = append(names, s.Name)
	}
	names = append(names, extra...)
	for server, s := range h.MCP.Servers {
		if s.RegisterTools {
			for _, t := range s.Tools {
				names = append(names, "mcp."+server+"."+t)
			}
		}
	}
	sort.Strings(names)
	return slices.Compact(names)
}

// checkActions reports every name in an action list that is not a
// registered action, with the nearest real one; at places each name.
func (h *HarnessConfig) checkActions(o *options, at func(ns string) problem) []problem {
	known := h.knownActions(o.actions)
	var out []problem
	for _, l := range h.actionLists() {
		for i, name := range l.names {
			if name == "" || slices.Contains(known, name) {
				continue // "" is the validator's "is required"
			}
			p := at(l.ns + "[" + strconv.Itoa(i) + "]")
			p.why = h.unknownAction(name, known)
			out = append(out, p)
		}
	}
	return out
}

func (h *HarnessConfig) unknownAction(name string, known []string) string {
	why := strconv.Quote(name) + " is not a registered action"
	if rest, ok := strings.CutPrefix(name, "mcp."); ok {
		if server, tool, ok := strings.Cut(rest, "."); ok {
			if s, ok := h.MCP.Servers[server]; ok {
				if !s.RegisterTools {
					return why + fmt.Sprintf("; MCP server %s does not set register-tools, so its tools are not actions of their own (set register-tools: true, or call them through mcp_call)", server)
				}
				if near, ok := nearest(tool, s.Tools); ok {
					return why + fmt.Sprintf("; did you mean mcp.%s.%s?", server, near)
				}
				return why + fmt.Sprintf("; %s is not among harness.mcp.servers.%s.tools", tool, server)
			}
		}
	}
	if near, ok := nearest(name, known); ok {
		return why + "; did you mean " + near + "?"
	}
	return why + "; the registered actions are " + strings.Join(known, ", ")
}

// checkOverlap reports actions a file both disables and auto-approves. It
// runs on what the file says, before the profile's defaults are added.
func (h *HarnessConfig) checkOverlap(at func(ns string) problem) []problem {
	var out []problem
	for i, a := range h.AutoApprovedActions {
		if a != "" && slices.Contains(h.DisabledActions, a) {
			p := at("harness.auto-approved-actions[" + strconv.Itoa(i) + "]")
			p.why = a + " is also in harness.disabled-actions"
			out = append(out, p)
		}
	}
	return out
}
