// Package runtime is the dispatcher: Harness.Execute takes an action
// through the policy guard, emits sanitized AHP events, runs it on the
// runtime that owns it, and always answers with an Observation.
//
// Runtimes (builtin Go functions, the workspace, MCP servers) implement the
// one-method Runtime interface and are mounted on a Harness by name; the
// schema registry says which runtime owns which action.
package runtime

import (
	"context"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
)

// Runtime runs actions that the guard has already allowed and whose input
// has been validated against their schema. A failure is an error; an
// *action.Error (see action.Errorf) sets the observation's code, message
// and payload, any other error becomes code internal.
//
// Run must honour ctx: when ctx is done the Harness answers with code
// timeout at once, and a runtime that goes on working past that wastes
// resources nobody waits for.
type Runtime interface {
	Run(ctx context.Context, a action.Action) (map[string]any, error)
}

// ContextHonouring is implemented by a runtime whose reads stop on their
// own soon after their context is done (they check it between steps). The
// dispatcher then runs a read on the caller's goroutine, and waits for it,
// instead of on a goroutine of its own that it abandons when the context
// ends: handing every read to another goroutine costs more than many reads
// (a wake-up of another thread each). A runtime that says so takes on the
// Harness's promise that a read is answered when its context ends, within
// the time of one step.
type ContextHonouring interface {
	HonoursContext() bool
}

// RuntimeFunc adapts a function to Runtime.
type RuntimeFunc func(ctx context.Context, a action.Action) (map[string]any, error)

// Run calls f.
func (f RuntimeFunc) Run(ctx context.Context, a action.Action) (map[string]any, error) {
	return f(ctx, a)
}

type ctxKey int

const (
	principalKey ctxKey = iota
	depthKey
	phaseKey
	actionIDKey
)

// WithPhase returns a context whose actions are decided in phase p (the
// trusted flow's preview or execute); the default is policy.PhaseDirect.
func WithPhase(ctx context.Context, p policy.Phase) context.Context {
	return context.WithValue(ctx, phaseKey, p)
}

// PhaseFrom returns the phase set by WithPhase, or policy.PhaseDirect.
func PhaseFrom(ctx context.Context) policy.Phase {
	if p, ok := ctx.Value(phaseKey).(policy.Phase); ok && p != "" {
		return p
	}
	return policy.PhaseDirect
}

// WithActionID returns a context under which Execute names its action id
// instead of minting one: the trusted flow names a redeemed token's run
// after the token. Action ids never come from the caller's Action (its ID
// field is ignored), so nothing a client sends can link its events to
// another principal's.
func WithActionID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, actionIDKey, id)
}

// WithPrincipal returns a context that names who asked for the actions run
// with it (an API key's principal, "cli", "mcp"). The guard and every event
// see it.
func WithPrincipal(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, principalKey, principal)
}

// PrincipalFrom returns the principal set by WithPrincipal, or "".
func PrincipalFrom(ctx context.Context) string {
	p, _ := ctx.Value(principalKey).(string)
	return p
}

// WithDepth returns a context for a sub-agent at the given nesting depth
// (0 is the user-facing session); events carry it.
func WithDepth(ctx context.Context, depth int) context.Context {
	return context.WithValue(ctx, depthKey, depth)
}

func depthFrom(ctx context.Context) int {
	d, _ := ctx.Value(depthKey).(int)
	return d
}
