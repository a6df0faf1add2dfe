package console

import (
	"time"

	"github.com/harness-runtime/harness/action"
)

// ApprovalView is an approval as the console reads it.
type ApprovalView struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	Action     string          `json:"action"`
	Input      map[string]any  `json:"input,omitempty"`
	SessionID  string          `json:"session_id,omitempty"`
	TaskID     string          `json:"task_id,omitempty"`
	Principal  string          `json:"principal"`
	Tenant     string          `json:"tenant,omitempty"`
	ActionHash string          `json:"action_hash"`
	Preview    map[string]any  `json:"preview,omitempty"`
	Decision   action.Decision `json:"decision"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	DecidedAt  *time.Time      `json:"decided_at,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Method     string          `json:"method,omitempty"`
}

// ApprovalDecision is a person's answer to an approval.
type ApprovalDecision struct {
	Approve bool
	Scope   string
	Reason  string
	Method  string
}
