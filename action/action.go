// Package action defines what flows through Harness: the Action a model
// proposes, the Observation it gets back, the enums that classify an
// observation, and the canonical action hash that binds a preview token to
// exactly one action.
//
// The package imports nothing else of Harness, so every other package can
// depend on it.
package action

import "encoding/json"

// Action is one tool call proposed by a model (or a program).
//
// Trusted is never taken from the model: the library and the HTTP layer set
// it only for callers that hold the agent:trusted permission, and only
// through the preview/execute flow. Decoders of untrusted input must reset it.
type Action struct {
	ID        string         `json:"id,omitempty"`
	Name      string         `json:"name"`
	Input     map[string]any `json:"input"`
	Tenant    string         `json:"tenant,omitempty"`
	SessionID string         `json:"session_id,omitempty"`
	TaskID    string         `json:"task_id,omitempty"`
	StepID    string         `json:"step_id,omitempty"`
	AgentID   string         `json:"agent_id,omitempty"`
	Trusted   bool           `json:"trusted"`
}

// Observation is the normalised result of an action. Every outcome,
// including refusals, timeouts and internal faults, is an Observation:
// Harness never hands a raw error back to an agent loop.
type Observation struct {
	ActionID  string         `json:"action_id"`
	Action    string         `json:"action"`
	Source    Source         `json:"source"`
	Status    Status         `json:"status"`
	Code      Code           `json:"code"`
	Message   string         `json:"message"`
	Payload   map[string]any `json:"payload"`
	LatencyMS float64        `json:"latency_ms"`
	// Decision is set when the guard did not plainly allow the action.
	Decision *Decision `json:"decision,omitempty"`
	// Approval is set when Status is needs_confirmation.
	Approval *Approval `json:"approval,omitempty"`
}

// OK reports whether the observation has status ok.
func (o Observation) OK() bool { return o.Status == StatusOK }

// JSON renders the observation as compact JSON. Payload values that cannot
// be encoded are replaced by an internal error observation, so the result is
// always valid JSON.
func (o Observation) JSON() []byte {
	b, err := json.Marshal(o)
	if err != nil {
		b, _ = json.Marshal(Observation{
			ActionID: o.ActionID, Action: o.Action, Source: SourceHarness,
			Status: StatusError, Code: CodeInternal, Message: "observation payload is not encodable: " + err.Error(),
		})
	}
	return b
}

// Source says which part of Harness produced an observation.
type Source string

// Sources of SPEC section 3.
const (
	SourceBuiltin   Source = "builtin"
	SourceMCP       Source = "mcp"
	SourceWorkspace Source = "workspace"
	SourcePolicy    Source = "policy"
	SourceHarness   Source = "harness"
)

// Status is the outcome class of an observation.
type Status string

// Statuses of SPEC section 3.
const (
	StatusOK                Status = "ok"
	StatusError             Status = "error"
	StatusBlocked           Status = "blocked"
	StatusNeedsConfirmation Status = "needs_confirmation"
)

// Decision is what the guard decided about an action, as observations and
// audit records carry it: the step and (for a configured rule) the rule
// that decided, the outcome (allow, deny, ask, modify, defer) and why.
// Observations carry it whenever the action was not plainly allowed.
type Decision struct {
	Step    string `json:"step"`
	Rule    string `json:"rule,omitempty"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// Approval is what an observation with status needs_confirmation says of
// the approval it waits for: its id, when it expires (then the action is
// refused with approval_expired), and the preview a person decides on.
type Approval struct {
	ID        string         `json:"id"`
	ExpiresAt string         `json:"expires_at"`
	Preview   map[string]any `json:"preview,omitempty"`
}
