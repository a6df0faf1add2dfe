// Package policy is the guard between a proposed action and any runtime:
// an ordered list of small, named checks, each answering allow or refuse
// with a machine-readable code, and the configuration that drives them.
//
// The order is written once, in NewGuard, where a reader sees it at once:
//
//	registered -> enabled -> tenant_allowed -> input_valid ->
//	trusted_runtime_enabled -> trust_present -> (steps a program appends)
//
// A refusal stops the chain; no runtime is touched before the whole chain
// allows.
package policy

import (
	"context"
	"strconv"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/schema"
)

// Request is what every check sees.
type Request struct {
	Action action.Action
	// Schema is set by the "registered" check for the checks after it.
	Schema *schema.ActionSchema
	// Principal is who asked (an API key's principal, "cli", "mcp", or the
	// program's own name); empty for an anonymous library caller.
	Principal string
}

// Decision is a check's answer. The zero Decision allows.
type Decision struct {
	Code    action.Code // empty: allowed
	Message string
	Check   string // the name of the check that refused
}

// Allowed reports whether the decision lets the action go on.
func (d Decision) Allowed() bool { return d.Code == action.CodeNone }

// Check is one named step of the guard. Fn returns the zero Decision to
// allow; it may change req (for example to set the schema).
type Check struct {
	Name string
	Fn   func(ctx context.Context, req *Request) Decision
}

// Guard is the ordered chain of checks. It is safe for concurrent use once
// built; Append is not safe to call concurrently with Decide.
type Guard struct {
	checks []Check
	rules  rules
}

type rules struct {
	registry       *schema.Registry
	disabled       map[string]bool
	autoApproved   map[string]bool
	tenantAllowed  map[string]map[string]bool
	trustedRuntime bool
}

// NewGuard builds the guard of SPEC section 3 over registry with the rules
// of cfg (which must be resolved).
func NewGuard(registry *schema.Registry, cfg *Config) *Guard {
	h := cfg.Harness
	g := &Guard{rules: rules{
		registry:       registry,
		disabled:       set(h.DisabledActions),
		autoApproved:   set(h.AutoApprovedActions),
		tenantAllowed:  map[string]map[string]bool{},
		trustedRuntime: Bool(h.TrustedRuntimeEnabled),
	}}
	for tenant, actions := range h.TenantAllowedActions {
		g.rules.tenantAllowed[tenant] = set(actions)
	}
	r := &g.rules
	g.checks = []Check{
		{"registered", r.registered},
		{"enabled", r.enabled},
		{"tenant_allowed", r.tenantAllowedCheck},
		{"input_valid", r.inputValid},
		{"trusted_runtime_enabled", r.trustedRuntimeEnabled},
		{"trust_present", r.trustPresent},
	}
	return g
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Append adds a check at the end of the chain (an external harness, a
// budget, a rate limit). Build the guard fully before serving.
func (g *Guard) Append(c Check) { g.checks = append(g.checks, c) }

// Checks returns the names of the checks in order.
func (g *Guard) Checks() []string {
	names := make([]string, len(g.checks))
	for i, c := range g.checks {
		names[i] = c.Name
	}
	return names
}

// AutoApproved reports whether a trusted action may run without a preview.
func (g *Guard) AutoApproved(name string) bool { return g.rules.autoApproved[name] }

// Decide runs the chain and returns the first refusal, or the zero Decision.
// req.Schema is set when the action is registered, refused or not.
func (g *Guard) Decide(ctx context.Context, req *Request) Decision {
	for i := range g.checks {
		c := &g.checks[i]
		if d := c.Fn(ctx, req); !d.Allowed() {
			d.Check = c.Name
			return d
		}
	}
	return Decision{}
}

func refuse(code action.Code, msg string) Decision { return Decision{Code: code, Message: msg} }

func (r *rules) registered(_ context.Context, req *Request) Decision {
	s, ok := r.registry.Lookup(req.Action.Name)
	if !ok {
		return refuse(action.CodeUnknownAction, "no action named "+quote(req.Action.Name)+" is registered")
	}
	req.Schema = s
	return Decision{}
}

func (r *rules) enabled(_ context.Context, req *Request) Decision {
	if r.disabled[req.Action.Name] {
		return refuse(action.CodeActionDisabled, "action "+req.Action.Name+" is disabled by configuration (harness.disabled-actions)")
	}
	return Decision{}
}

func (r *rules) tenantAllowedCheck(_ context.Context, req *Request) Decision {
	allowed, listed := r.tenantAllowed[req.Action.Tenant]
	if listed && !allowed[req.Action.Name] {
		return refuse(action.CodeTenantNotAllowed, "tenant "+quote(req.Action.Tenant)+" may not run "+req.Action.Name)
	}
	return Decision{}
}

func (r *rules) inputValid(_ context.Context, req *Request) Decision {
	if err := req.Schema.Validate(req.Action.Input); err != nil {
		return refuse(action.CodeInvalidInput, action.MessageOf(err))
	}
	return Decision{}
}

func (r *rules) trustedRuntimeEnabled(_ context.Context, req *Request) Decision {
	if req.Schema.Trusted && !r.trustedRuntime {
		return refuse(action.CodeTrustedRuntimeDisabled, "the trusted runtime is disabled (harness.trusted-runtime-enabled); "+req.Action.Name+" cannot run")
	}
	return Decision{}
}

func (r *rules) trustPresent(_ context.Context, req *Request) Decision {
	if req.Schema.Trusted && !req.Action.Trusted && !r.autoApproved[req.Action.Name] {
		return refuse(action.CodeTrustRequired, req.Action.Name+" needs trust: run it through preview/execute, or list it in harness.auto-approved-actions")
	}
	return Decision{}
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}
