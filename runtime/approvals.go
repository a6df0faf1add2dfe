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
	ActionID string
	// Action is the action as the guard left it (a modified input
	// included), with Trusted false.
	Action action.Action
	// ActionHash is Action's canonical hash.
	ActionHash string
	// Principal asked for the action.
	Principal string
	// Preview is what the person decides on.
	Preview map[string]any
	// Preconditions are what the plan depends on; the approved action runs
	// only while they hold.
	Preconditions []action.FileState
	// Decision is the step and rule that asked.
	Decision action.Decision
	// Created is when the guard asked.
	Created time.Time
}

// Approvals holds the actions that wait for a person. Request stores p and
// returns what the caller is told: the approval's id, when it expires, and
// the preview. The trusted package implements it (memory, Redis).
type Approvals interface {
	Request(ctx context.Context, p PendingApproval) (action.Approval, error)
}
