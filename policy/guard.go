// Package policy is the guard between a proposed action and any runtime:
// one ordered list of small, named steps, built once from the
// configuration, each answering allow, deny, ask, modify or defer.
//
// The order is written once, in NewGuard, where a reader sees it at once.
// As in Kubernetes admission control, the steps that may change a request
// run before the steps that judge it:
//
//	registered -> enabled -> tenant_allowed ->          (what the action is)
//	[mutating steps] -> input_valid ->                  (what it asks)
//	trusted_runtime_enabled -> [validating steps] ->    (whether it may)
//	trust_present
//
// The first step that denies or asks decides. A step that modifies hands
// the next steps a new input, validated against the schema again. A step
// that defers is asked again after the delay it names, a bounded number of
// times, and then the action is denied. No runtime is touched before the
// whole chain allows. The chain cannot change once built, so deciding needs
// no lock.
package policy

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/schema"
)

// Outcome is what one step, and the whole guard, answers.
type Outcome string

// Outcomes of SPEC section 3.
const (
	Allow  Outcome = "allow"
	Deny   Outcome = "deny"
	Ask    Outcome = "ask"
	Modify Outcome = "modify"
	Defer  Outcome = "defer"
)

// Phase says where in the trusted flow a request is, so that steps that
// count (budgets, rate limits) count an action once: a preview and the
// execute that redeems it are one action.
type Phase string

// Phases of a request.
const (
	PhaseDirect  Phase = "direct"  // one call that decides and runs
	PhasePreview Phase = "preview" // decides and plans; nothing runs
	PhaseExecute Phase = "execute" // runs what a preview or approval planned
)

// Request is what every step sees. Steps must not change it except through
// their Decision: the guard applies a Modify.
type Request struct {
	Action action.Action
	// Schema is set by the "registered" step for the steps after it.
	Schema *schema.ActionSchema
	// Principal is who asked (an API key's principal, "cli", "mcp", or the
	// program's own name); empty for an anonymous library caller.
	Principal string
	// Phase is direct unless the trusted flow says otherwise.
	Phase Phase
	// Sanitizer is the audit log's sanitizer, for SanitizedInput; nil
	// when the caller gave none.
	Sanitizer Sanitizer
	// Modified lists the steps that changed the input, in order.
	Modified []string
	// Governance is what the governance step found of the session and
	// reserved for the action (nil without governance); the audit
	// records carry its snapshot and the dispatcher's observer settles it.
	Governance *Admission
	// Unredacted is the id of the rule that decided the action and
	// exempts its observation from redaction (a rule with redact: false);
	// empty otherwise.
	Unredacted string

	sanitized     any
	sanitizedDone bool
}

// Sanitizer removes sensitive fields and secrets from a value, as the audit
// log records it. *sanitize.Sanitizer implements it.
type Sanitizer interface {
	Value(v any, sensitive []string) any
}

// SanitizedInput returns the action's input as the audit log records it
// (the schema's sensitive fields and anything shaped like a secret
// removed), for steps that send the request outside the process. It is
// computed once, unless a step modifies the input since; nil without a
// Sanitizer.
func (r *Request) SanitizedInput() any {
	if r.Sanitizer == nil {
		return nil
	}
	if !r.sanitizedDone {
		var sensitive []string
		if r.Schema != nil {
			sensitive = r.Schema.Sensitive
		}
		r.sanitized, r.sanitizedDone = r.Sanitizer.Value(r.Action.Input, sensitive), true
	}
	return r.sanitized
}

// Decision is a step's answer, and the guard's. The zero Decision allows.
type Decision struct {
	// Outcome is empty or Allow to allow.
	Outcome Outcome
	// Code says why an action was denied (any code of the table in
	// action), or CodeApprovalRequired for Ask.
	Code action.Code
	// Message is the reason, for people.
	Message string
	// Check is the name of the step that decided; the guard sets it.
	Check string
	// Rule is the id of the configured rule that decided, if any.
	Rule string
	// Input is the new input of a Modify.
	Input map[string]any
	// RetryAfter is the delay a Defer asks for, or after which a
	// rate_limited refusal may be retried.
	RetryAfter time.Duration
}

// Allowed reports whether the decision lets the action run now.
func (d Decision) Allowed() bool {
	return (d.Outcome == "" || d.Outcome == Allow || d.Outcome == Modify) && d.Code == action.CodeNone
}

// Info returns the decision as observations and audit records carry it.
func (d Decision) Info() *action.Decision {
	out := d.Outcome
	if out == "" {
		out = Allow
		if d.Code != action.CodeNone {
			out = Deny
		}
	}
	return &action.Decision{Step: d.Check, Rule: d.Rule, Outcome: string(out), Reason: d.Message}
}

// Plain reports whether the decision is an allow that nothing qualified:
// no step modified the input. Observations of such actions carry no
// decision.
func (d Decision) Plain() bool { return d.Allowed() && d.Outcome != Modify }

// DenyWith returns a refusal with code and message.
func DenyWith(code action.Code, msg string) Decision {
	return Decision{Outcome: Deny, Code: code, Message: msg}
}

// AskWith returns an answer that a person must approve the action.
func AskWith(msg string) Decision {
	return Decision{Outcome: Ask, Code: action.CodeApprovalRequired, Message: msg}
}

// Step is one named step of the guard. Fn returns the zero Decision to
// allow.
type Step struct {
	Name string
	Fn   func(ctx context.Context, req *Request) Decision
}

// Check is the former name of Step.
type Check = Step

// Steps are what a program adds to the guard when it is built: Mutating
// steps run before the input is validated, Validating steps after the
// built-in judgements and before trust is checked.
type Steps struct {
	Mutating   []Step
	Validating []Step
	// MaxDefers bounds how often one step may defer one request (default
	// 3); MaxDeferDelay bounds each delay (default 10 s).
	MaxDefers     int
	MaxDeferDelay time.Duration
}

// Guard is the ordered chain of steps. It is immutable once built and safe
// for concurrent use.
type Guard struct {
	steps         []Step
	validAt       int // index of input_valid
	rules         rules
	maxDefers     int
	maxDeferDelay time.Duration
}

type rules struct {
	registry       *schema.Registry
	disabled       map[string]bool
	autoApproved   map[string]bool
	tenantAllowed  map[string]map[string]bool
	trustedRuntime bool
}

// Options are the guard's built-in judgements (harness.disabled-actions,
// auto-approved-actions, tenant-allowed-actions, trusted-runtime-enabled).
type Options struct {
	DisabledActions      []string
	AutoApprovedActions  []string
	TenantAllowedActions map[string][]string
	TrustedRuntime       bool
}

// NewGuard builds the guard of SPEC section 3 over registry with opts and
// the extra steps a program adds.
func NewGuard(registry *schema.Registry, opts Options, extra ...Steps) *Guard {
	g := &Guard{rules: rules{
		registry:       registry,
		disabled:       set(opts.DisabledActions),
		autoApproved:   set(opts.AutoApprovedActions),
		tenantAllowed:  map[string]map[string]bool{},
		trustedRuntime: opts.TrustedRuntime,
	}, maxDefers: 3, maxDeferDelay: 10 * time.Second}
	for tenant, actions := range opts.TenantAllowedActions {
		g.rules.tenantAllowed[tenant] = set(actions)
	}
	var add Steps
	for _, e := range extra {
		add.Mutating = append(add.Mutating, e.Mutating...)
		add.Validating = append(add.Validating, e.Validating...)
		if e.MaxDefers > 0 {
			g.maxDefers = e.MaxDefers
		}
		if e.MaxDeferDelay > 0 {
			g.maxDeferDelay = e.MaxDeferDelay
		}
	}
	r := &g.rules
	g.steps = append(g.steps,
		Step{"registered", r.registered},
		Step{"enabled", r.enabled},
		Step{"tenant_allowed", r.tenantAllowedCheck})
	g.steps = append(g.steps, add.Mutating...)
	g.steps = append(g.steps,
		Step{stepInputValid, r.inputValid},
		Step{"trusted_runtime_enabled", r.trustedRuntimeEnabled})
	g.steps = append(g.steps, add.Validating...)
	g.steps = append(g.steps, Step{"trust_present", r.trustPresent})
	for i, s := range g.steps {
		if s.Name == stepInputValid {
			g.validAt = i
		}
	}
	return g
}

const stepInputValid = "input_valid"

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Checks returns the names of the steps in order.
func (g *Guard) Checks() []string {
	names := make([]string, len(g.steps))
	for i, c := range g.steps {
		names[i] = c.Name
	}
	return names
}

// AutoApproved reports whether a trusted action may run without a preview.
func (g *Guard) AutoApproved(name string) bool { return g.rules.autoApproved[name] }

// Decide runs the chain and returns the first decision that is not an
// allow, or an allow (a Modify when a step changed the input, which is
// then in req.Action.Input). req.Schema is set when the action is
// registered, refused or not.
func (g *Guard) Decide(ctx context.Context, req *Request) Decision {
	if req.Phase == "" {
		req.Phase = PhaseDirect
	}
	var last Decision
	for i := range g.steps {
		s := &g.steps[i]
		d := s.Fn(ctx, req)
		if (d.Outcome == "" || d.Outcome == Allow) && d.Code == action.CodeNone {
			continue // the common case, kept cheap
		}
		if d.Outcome == Defer {
			d = g.deferred(ctx, s, req, d)
		}
		d.Check = s.Name
		switch {
		case d.Outcome == Modify:
			if d.Input == nil {
				return g.deny(s, action.CodeInternal, "step "+s.Name+" modified the input without giving one")
			}
			req.Action.Input = d.Input
			req.sanitized, req.sanitizedDone = nil, false
			req.Modified = append(req.Modified, s.Name)
			last = Decision{Outcome: Modify, Check: s.Name, Rule: d.Rule, Message: d.Message}
			if i > g.validAt {
				// Validated again, as the step's own input was.
				if v := g.rules.inputValid(ctx, req); !v.Allowed() {
					v.Check, v.Outcome = s.Name, Deny
					v.Message = "the input as " + s.Name + " modified it is invalid: " + v.Message
					return v
				}
			}
		case !d.Allowed():
			if d.Outcome == "" || d.Outcome == Allow {
				d.Outcome = Deny
			}
			return d
		}
	}
	return last
}

// deferred asks a step that deferred (d) again after each delay, bounded
// in count and delay and honouring ctx; a step that keeps deferring is a
// denial.
func (g *Guard) deferred(ctx context.Context, s *Step, req *Request, d Decision) Decision {
	for n := 0; ; n++ {
		if n > 0 {
			d = s.Fn(ctx, req)
		}
		if d.Outcome != Defer {
			return d
		}
		if n >= g.maxDefers {
			return Decision{Outcome: Deny, Code: action.CodeHarnessBlocked, Rule: d.Rule,
				Message: s.Name + " deferred the action " + strconv.Itoa(n+1) + " times; refused (" + d.Message + ")"}
		}
		delay := min(max(d.RetryAfter, 0), g.maxDeferDelay)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return GaveUp(ctx, s.Name)
		case <-t.C:
		}
	}
}

func (g *Guard) deny(s *Step, code action.Code, msg string) Decision {
	return Decision{Outcome: Deny, Code: code, Message: msg, Check: s.Name}
}

func refuse(code action.Code, msg string) Decision { return DenyWith(code, msg) }

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
		return refuse(action.CodeTrustRequired, req.Action.Name+" needs trust: preview it and redeem the token (POST /v1/actions/preview, then /v1/actions/execute/{token}), run it with --trusted from the CLI, or list it in harness.auto-approved-actions to run it without either")
	}
	return Decision{}
}

func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// GaveUp is the denial of a request whose context ended while a step
// (named what) was being waited for: canceled when its caller went away,
// timeout when its deadline passed.
func GaveUp(ctx context.Context, what string) Decision {
	code := action.CodeTimeout
	if errors.Is(ctx.Err(), context.Canceled) {
		code = action.CodeCanceled
	}
	return Decision{Outcome: Deny, Code: code, Message: "gave up waiting for " + what + ": " + ctx.Err().Error()}
}
