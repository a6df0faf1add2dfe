package runtime

import (
	"context"
	"time"

	"github.com/harness-runtime/harness/action"
)

// PendingApproval is an action the guard answered "ask" for: planned (its
// preview computed as a trusted preview would), not run. The approval
// service stores it until a person approves or denies it, or it expires.
type PendingApproval struct {
	// ActionID is the id of the observation that reported the wait.
	ActionID string `json:"action_id"`
	// Action is the action as the guard left it (a modified input
	// included), with Trusted false.
	Action action.Action `json:"action"`
	// ActionHash is Action's canonical hash.
	ActionHash string `json:"action_hash"`
	// Principal asked for the action.
	Principal string `json:"principal"`
	// Input is the action's input as a person may be shown it (secrets
	// replaced by the sanitizer's markers); nil without a sanitizer.
	Input any `json:"input,omitempty"`
	// Preview is what the person decides on.
	Preview map[string]any `json:"preview"`
	// Preconditions are what the plan depends on; the approved action runs
	// only while they hold.
	Preconditions []action.FileState `json:"preconditions,omitempty"`
	// Decision is the step and rule that asked.
	Decision action.Decision `json:"decision"`
	// Created is when the guard asked.
	Created time.Time `json:"created"`
}

// Approvals holds the actions that wait for a person. Request stores p and
// returns what the caller is told: the approval's id, when it expires, and
// the preview. The trusted package implements it (memory, Redis).
type Approvals interface {
	Request(ctx context.Context, p PendingApproval) (action.Approval, error)
}

// SessionGrants is implemented by an Approvals store whose approvals may
// cover a whole session (scope "session"): Granted reports the approval
// that lets the action of canonical hash run in tenant's session without
// asking again. The guard's other answers (a deny) are never overridden.
type SessionGrants interface {
	Granted(ctx context.Context, tenant, session, hash string) (approvalID string, ok bool)
}

type approvedKey struct{}

type approvedAction struct{ id, hash string }

// WithApproval returns a context under which the guard's "ask" for the
// action of canonical hash is answered by approval id: the trusted service
// runs an approved action with it. The action's events name the approval.
func WithApproval(ctx context.Context, id, hash string) context.Context {
	return context.WithValue(ctx, approvedKey{}, approvedAction{id: id, hash: hash})
}

// approved returns the approval that answers the guard's ask for a: the
// one the context carries for a's hash, else a session grant.
func (h *Harness) approved(ctx context.Context, a action.Action) (string, bool) {
	hash, err := a.Hash()
	if err != nil {
		return "", false
	}
	if ap, ok := ctx.Value(approvedKey{}).(approvedAction); ok && ap.hash == hash {
		return ap.id, true
	}
	if g, ok := h.approvals.(SessionGrants); ok && a.SessionID != "" {
		return g.Granted(ctx, a.Tenant, a.SessionID, hash)
	}
	return "", false
}
