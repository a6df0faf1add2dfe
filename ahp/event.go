package ahp

import (
	"context"
	"time"

	"github.com/harness-runtime/harness/action"
)

// Version is the protocol version Harness speaks.
const Version = "2.4"

// EventType names an event.
type EventType string

// Event types Harness emits for each action.
const (
	PreAction  EventType = "pre_action"
	PostAction EventType = "post_action"
	Error      EventType = "error"
)

// Event is one AHP event. Its payload is always sanitized before the Event
// is built: no sink ever sees raw input.
type Event struct {
	Version   string         `json:"ahp_version"`
	EventID   string         `json:"event_id"`
	EventType EventType      `json:"event_type"`
	SessionID string         `json:"session_id"`
	AgentID   string         `json:"agent_id"`
	Timestamp time.Time      `json:"timestamp"`
	Depth     int            `json:"depth"`
	Payload   *ActionPayload `json:"payload"`
}

// ActionPayload is the payload of pre_action, post_action and error
// events: who asked for which action in which task and step, its sanitized
// input (pre_action), and a summary of its observation (post_action and
// error), never the observation's payload itself.
type ActionPayload struct {
	ActionID  string `json:"action_id"`
	Action    string `json:"action"`
	Tenant    string `json:"tenant,omitempty"`
	TaskID    string `json:"task_id,omitempty"`
	StepID    string `json:"step_id,omitempty"`
	Principal string `json:"principal,omitempty"`
	Trusted   bool   `json:"trusted"`
	Phase     string `json:"phase,omitempty"`
	Input     any    `json:"input,omitempty"`
	// ModifiedInput is the input as a guard step modified it; the action
	// ran with it.
	ModifiedInput any `json:"modified_input,omitempty"`
	// Decision is the guard's decision (pre_action).
	Decision *action.Decision `json:"decision,omitempty"`
	// ApprovalID names the approval an "ask" created.
	ApprovalID  string              `json:"approval_id,omitempty"`
	Observation *ObservationSummary `json:"observation,omitempty"`
	// Governance is the session's counters and what remains of its
	// budgets: as the guard decided (pre_action), and once the outcome
	// was counted (post_action). Absent without governance.
	Governance Governance `json:"governance,omitzero"`
}

// ObservationSummary is what an event says of an observation.
type ObservationSummary struct {
	Source      string   `json:"source"`
	Status      string   `json:"status"`
	Code        string   `json:"code"`
	LatencyMS   float64  `json:"latency_ms"`
	Message     string   `json:"message,omitempty"`
	PayloadKeys []string `json:"payload_keys,omitempty"`
	// Redacted says how many secrets the observation the model got had
	// replaced by markers, and which markers (harness.redact-observations).
	Redacted *Redaction `json:"redacted,omitempty"`
}

// Sink receives events. Emit must not change ev.Payload; it may keep it. An error from a sink in the fail-closed set (the
// audit log, for trusted actions) refuses the action.
type Sink interface {
	Emit(ctx context.Context, ev Event) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, ev Event) error

// Emit calls f.
func (f SinkFunc) Emit(ctx context.Context, ev Event) error { return f(ctx, ev) }

// Discard is a Sink that drops every event.
var Discard Sink = SinkFunc(func(context.Context, Event) error { return nil })

// CanonicalValue returns the event as the generic values its JSON decodes
// into, field for field as encoding/json writes it (omitempty included).
// It is the reference definition of the event's canonical form:
// action.Canonical, which the audit log hashes, uses AppendCanonical, which
// writes the same bytes without building these maps.
// TestCanonicalValueMatchesJSON and TestAppendCanonicalMatchesCanonicalValue
// hold the three together.
func (e Event) CanonicalValue() any {
	m := map[string]any{
		"ahp_version": e.Version, "event_id": e.EventID, "event_type": string(e.EventType),
		"session_id": e.SessionID, "agent_id": e.AgentID,
		"timestamp": e.Timestamp.Format(time.RFC3339Nano), "depth": e.Depth, "payload": nil,
	}
	if p := e.Payload; p != nil {
		pm := map[string]any{"action_id": p.ActionID, "action": p.Action, "trusted": p.Trusted}
		setNonEmpty(pm, "tenant", p.Tenant)
		setNonEmpty(pm, "task_id", p.TaskID)
		setNonEmpty(pm, "step_id", p.StepID)
		setNonEmpty(pm, "principal", p.Principal)
		setNonEmpty(pm, "phase", p.Phase)
		if p.Input != nil {
			pm["input"] = p.Input
		}
		if p.ModifiedInput != nil {
			pm["modified_input"] = p.ModifiedInput
		}
		if d := p.Decision; d != nil {
			dm := map[string]any{"step": d.Step, "outcome": d.Outcome}
			setNonEmpty(dm, "rule", d.Rule)
			setNonEmpty(dm, "reason", d.Reason)
			pm["decision"] = dm
		}
		setNonEmpty(pm, "approval_id", p.ApprovalID)
		if o := p.Observation; o != nil {
			om := map[string]any{"source": o.Source, "status": o.Status, "code": o.Code, "latency_ms": o.LatencyMS}
			setNonEmpty(om, "message", o.Message)
			if len(o.PayloadKeys) > 0 {
				om["payload_keys"] = o.PayloadKeys
			}
			if o.Redacted != nil {
				om["redacted"] = o.Redacted.canonicalValue()
			}
			pm["observation"] = om
		}
		if !p.Governance.IsZero() {
			pm["governance"] = p.Governance.canonicalValue()
		}
		m["payload"] = pm
	}
	return m
}

func setNonEmpty(m map[string]any, k, v string) {
	if v != "" {
		m[k] = v
	}
}
