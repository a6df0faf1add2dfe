package ahp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Event types beyond the three Harness emits for its own actions (event.go).
// Every type the protocol defines is listed here; EventType.Known reports
// whether a name is one of them.
const (
	PrePrompt         EventType = "pre_prompt"
	PostResponse      EventType = "post_response"
	SessionStart      EventType = "session_start"
	SessionEnd        EventType = "session_end"
	Heartbeat         EventType = "heartbeat"
	Success           EventType = "success"
	Idle              EventType = "idle"
	IntentDetection   EventType = "intent_detection"
	ContextPerception EventType = "context_perception"
	MemoryRecall      EventType = "memory_recall"
	Planning          EventType = "planning"
	Reasoning         EventType = "reasoning"
	RateLimit         EventType = "rate_limit"
	Confirmation      EventType = "confirmation"
	RunLifecycle      EventType = "run_lifecycle"
	TaskList          EventType = "task_list"
	Verification      EventType = "verification"
	// HandshakeEvent and QueryEvent exist as event types for the protocol's
	// taxonomy; peers use the ahp/handshake and ahp/query methods instead.
	HandshakeEvent EventType = "handshake"
	QueryEvent     EventType = "query"
)

type eventClass uint8

const (
	classNotification eventClass = iota + 1 // fire and forget
	classGeneric                            // blocking, answered by a Decision
	classSpecialized                        // blocking, answered by its own decision shape
	classMethod                             // handshake, query: blocking, never batched
)

// eventClasses is the one table of what each event type is.
var eventClasses = map[EventType]eventClass{
	PreAction: classGeneric, PrePrompt: classGeneric,
	HandshakeEvent: classMethod, QueryEvent: classMethod,
	Idle: classSpecialized, IntentDetection: classSpecialized, ContextPerception: classSpecialized,
	MemoryRecall: classSpecialized, Planning: classSpecialized, Reasoning: classSpecialized,
	RateLimit: classSpecialized, Confirmation: classSpecialized,
	PostAction: classNotification, PostResponse: classNotification, SessionStart: classNotification,
	SessionEnd: classNotification, Error: classNotification, Heartbeat: classNotification,
	Success: classNotification, RunLifecycle: classNotification, TaskList: classNotification,
	Verification: classNotification,
}

// Known reports whether t is an event type of the protocol.
func (t EventType) Known() bool { return eventClasses[t] != 0 }

// IsBlocking reports whether an event of type t is sent as a request and
// waits for a decision (otherwise it is a notification).
func (t EventType) IsBlocking() bool {
	c := eventClasses[t]
	return c == classGeneric || c == classSpecialized || c == classMethod
}

// IsSpecialized reports whether t is answered by a decision shape of its
// own (IdleDecision, RateLimitDecision, …) rather than by Decision.
func (t EventType) IsSpecialized() bool { return eventClasses[t] == classSpecialized }

// IsBatchable reports whether t may travel in an ahp/batch: every known
// type except the specialized ones, handshake and query.
func (t EventType) IsBatchable() bool {
	c := eventClasses[t]
	return c == classGeneric || c == classNotification
}

// WireEvent is an event as it travels on the wire: the params of an
// ahp/event message, or one element of an ahp/batch. Unlike Event (the
// in-process and audit form) it carries no ahp_version or event_id, and its
// payload is raw JSON whose shape depends on EventType.
//
// Decoding refuses a missing or null event_type, session_id, agent_id,
// timestamp, depth or payload (payload may be JSON null), an unknown event
// type and a negative depth; context and metadata may be absent or null.
type WireEvent struct {
	EventType EventType       `json:"event_type"`
	SessionID string          `json:"session_id"`
	AgentID   string          `json:"agent_id"`
	Timestamp string          `json:"timestamp"`
	Depth     uint32          `json:"depth"`
	Payload   json.RawMessage `json:"payload"`
	Context   *EventContext   `json:"context,omitempty"`
	Metadata  map[string]any  `json:"metadata,omitempty"`
}

type wireEventJSON struct {
	EventType *EventType      `json:"event_type"`
	SessionID *string         `json:"session_id"`
	AgentID   *string         `json:"agent_id"`
	Timestamp *string         `json:"timestamp"`
	Depth     *uint32         `json:"depth"`
	Payload   json.RawMessage `json:"payload"`
	Context   json.RawMessage `json:"context"`
	Metadata  map[string]any  `json:"metadata"`
}

// MarshalJSON writes the event; a nil payload is written as null so that
// the message stays valid for peers that require the field.
func (e WireEvent) MarshalJSON() ([]byte, error) {
	return e.appendJSON(make([]byte, 0, 160+len(e.Payload)))
}

var errInvalidPayload = errors.New("payload is not valid JSON")

// UnmarshalJSON decodes an event, refusing what the protocol refuses.
func (e *WireEvent) UnmarshalJSON(data []byte) error {
	var w wireEventJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return fieldError(err)
	}
	switch {
	case w.EventType == nil:
		return missingField("event_type")
	case w.SessionID == nil:
		return missingField("session_id")
	case w.AgentID == nil:
		return missingField("agent_id")
	case w.Timestamp == nil:
		return missingField("timestamp")
	case w.Depth == nil:
		return missingField("depth")
	case w.Payload == nil:
		return missingField("payload")
	case !w.EventType.Known():
		return fmt.Errorf("unknown event_type %q", *w.EventType)
	}
	var ctx *EventContext
	if len(w.Context) > 0 && string(w.Context) != "null" {
		ctx = new(EventContext)
		if err := decodeStrict(w.Context, ctx); err != nil {
			return fmt.Errorf("context: %w", err)
		}
	}
	*e = WireEvent{
		EventType: *w.EventType, SessionID: *w.SessionID, AgentID: *w.AgentID,
		Timestamp: *w.Timestamp, Depth: *w.Depth, Payload: w.Payload,
		Context: ctx, Metadata: w.Metadata,
	}
	return nil
}

// fieldError says which field of a message had a value of the wrong
// type, without naming Go types.
func fieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("invalid value (%s) for field `%s`", te.Value, te.Field)
	}
	return err
}

func missingField(name string) error { return fmt.Errorf("missing field `%s`", name) }

// DecisionKind names a generic decision.
type DecisionKind string

// The generic decisions.
const (
	Allow    DecisionKind = "allow"
	Block    DecisionKind = "block"
	Modify   DecisionKind = "modify"
	Defer    DecisionKind = "defer"
	Escalate DecisionKind = "escalate"
)

// Decision is a harness's answer to a blocking generic event (pre_action,
// pre_prompt) and to each event of a batch. Its JSON is tagged by
// "decision" and carries only the fields of its kind:
//
//	allow    {modified_payload?, metadata?}
//	block    {reason, metadata?}
//	modify   {modified_payload, metadata?}
//	defer    {retry_after_ms, reason?}
//	escalate {reason, escalation_target?}
//
// Optional fields that are empty are left out on output; null is accepted
// for them on input. A required field that is missing or null, or an
// unknown kind, is refused. Fields that do not belong to the kind are
// ignored on input and never written.
type Decision struct {
	Kind             DecisionKind
	Reason           string
	ModifiedPayload  json.RawMessage
	Metadata         map[string]any
	RetryAfterMS     uint64
	EscalationTarget string
}

type decisionJSON struct {
	Kind             DecisionKind    `json:"decision"`
	ModifiedPayload  json.RawMessage `json:"modified_payload,omitempty"`
	Reason           *string         `json:"reason,omitempty"`
	RetryAfterMS     *uint64         `json:"retry_after_ms,omitempty"`
	EscalationTarget *string         `json:"escalation_target,omitempty"`
	Metadata         map[string]any  `json:"metadata,omitempty"`
}

// MarshalJSON writes the decision's kind and the fields of that kind.
func (d Decision) MarshalJSON() ([]byte, error) {
	out := decisionJSON{Kind: d.Kind}
	switch d.Kind {
	case Allow:
		out.ModifiedPayload = d.ModifiedPayload
		out.Metadata = d.Metadata
	case Block:
		out.Reason = &d.Reason
		out.Metadata = d.Metadata
	case Modify:
		out.ModifiedPayload = d.ModifiedPayload
		if len(out.ModifiedPayload) == 0 {
			out.ModifiedPayload = json.RawMessage("null")
		}
		out.Metadata = d.Metadata
	case Defer:
		out.RetryAfterMS = &d.RetryAfterMS
		if d.Reason != "" {
			out.Reason = &d.Reason
		}
	case Escalate:
		out.Reason = &d.Reason
		if d.EscalationTarget != "" {
			out.EscalationTarget = &d.EscalationTarget
		}
	default:
		return nil, fmt.Errorf("unknown decision %q", d.Kind)
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes a decision, refusing an unknown kind or a missing
// required field.
func (d *Decision) UnmarshalJSON(data []byte) error {
	var raw struct {
		Kind             *DecisionKind   `json:"decision"`
		ModifiedPayload  json.RawMessage `json:"modified_payload"`
		Reason           *string         `json:"reason"`
		RetryAfterMS     *uint64         `json:"retry_after_ms"`
		EscalationTarget *string         `json:"escalation_target"`
		Metadata         map[string]any  `json:"metadata"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	if raw.Kind == nil {
		return missingField("decision")
	}
	out := Decision{Kind: *raw.Kind}
	switch out.Kind {
	case Allow:
		if string(raw.ModifiedPayload) != "null" {
			out.ModifiedPayload = raw.ModifiedPayload
		}
		out.Metadata = raw.Metadata
	case Block:
		if raw.Reason == nil {
			return missingField("reason")
		}
		out.Reason, out.Metadata = *raw.Reason, raw.Metadata
	case Modify:
		if raw.ModifiedPayload == nil {
			return missingField("modified_payload")
		}
		out.ModifiedPayload, out.Metadata = raw.ModifiedPayload, raw.Metadata
	case Defer:
		if raw.RetryAfterMS == nil {
			return missingField("retry_after_ms")
		}
		out.RetryAfterMS = *raw.RetryAfterMS
		if raw.Reason != nil {
			out.Reason = *raw.Reason
		}
	case Escalate:
		if raw.Reason == nil {
			return missingField("reason")
		}
		out.Reason = *raw.Reason
		if raw.EscalationTarget != nil {
			out.EscalationTarget = *raw.EscalationTarget
		}
	default:
		return fmt.Errorf("unknown decision %q", out.Kind)
	}
	*d = out
	return nil
}

// AgentInfo describes the agent in a handshake.
type AgentInfo struct {
	Framework    string   `json:"framework"`
	Version      string   `json:"version"`
	Capabilities []string `json:"capabilities"`
}

// HandshakeRequest is the params of ahp/handshake. Every field is required.
type HandshakeRequest struct {
	ProtocolVersion string    `json:"protocol_version"`
	AgentInfo       AgentInfo `json:"agent_info"`
	SessionID       string    `json:"session_id"`
	AgentID         string    `json:"agent_id"`
}

// HarnessInfo describes the harness in a handshake reply.
type HarnessInfo struct {
	Name         string   `json:"name"`
	Version      string   `json:"version"`
	Capabilities []string `json:"capabilities"`
}

// HarnessConfig is the limits a harness announces in its handshake reply
// and enforces. A nil field is not announced (and, for a server, not
// enforced).
type HarnessConfig struct {
	TimeoutMS *uint64 `json:"timeout_ms,omitempty"`
	BatchSize *uint64 `json:"batch_size,omitempty"`
	MaxDepth  *uint32 `json:"max_depth,omitempty"`
}

// Default limits of a harness (the reference implementation's).
const (
	DefaultTimeoutMS = 10000
	DefaultBatchSize = 100
	DefaultMaxDepth  = 10
)

// DefaultHarnessConfig returns the default limits: 10000 ms, batches of 100
// events, depth 10.
func DefaultHarnessConfig() HarnessConfig {
	t, b, d := uint64(DefaultTimeoutMS), uint64(DefaultBatchSize), uint32(DefaultMaxDepth)
	return HarnessConfig{TimeoutMS: &t, BatchSize: &b, MaxDepth: &d}
}

// HandshakeResponse is the result of ahp/handshake.
type HandshakeResponse struct {
	ProtocolVersion string         `json:"protocol_version"`
	HarnessInfo     HarnessInfo    `json:"harness_info"`
	SessionToken    string         `json:"session_token,omitempty"`
	Config          *HarnessConfig `json:"config,omitempty"`
}

// CompatibleVersion reports whether protocol version v can talk to this
// package's Version: the same major version ("2", "2.0", "2.3" and "2.4"
// all can; "1.0" and "3.0" cannot).
func CompatibleVersion(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	want, _, _ := strings.Cut(Version, ".")
	return major == want
}

// QueryRequest is the params of ahp/query. Every field is required.
type QueryRequest struct {
	SessionID string          `json:"session_id"`
	AgentID   string          `json:"agent_id"`
	QueryType string          `json:"query_type"`
	Payload   json.RawMessage `json:"payload"`
}

// QueryResponse is the result of ahp/query; Answer is required.
type QueryResponse struct {
	Answer       json.RawMessage `json:"answer"`
	Reason       string          `json:"reason,omitempty"`
	Alternatives []string        `json:"alternatives,omitempty"`
}

// BatchRequest is the params of ahp/batch.
type BatchRequest struct {
	Events []WireEvent `json:"events"`
}

// BatchResponse is the result of ahp/batch: one decision per event, in
// the events' order.
type BatchResponse struct {
	Decisions []Decision `json:"decisions"`
}

// MarshalJSON writes an empty batch's decisions as [], never null.
func (b BatchResponse) MarshalJSON() ([]byte, error) {
	d := b.Decisions
	if d == nil {
		d = []Decision{}
	}
	return json.Marshal(struct {
		Decisions []Decision `json:"decisions"`
	}{d})
}

// decodeParams decodes data into v and refuses a missing or null required
// field (checkRequired); it is how the server reads every params object
// except events, which check themselves.
func decodeParams(data []byte, v any) error {
	if len(data) == 0 || string(data) == "null" {
		return errors.New("missing params")
	}
	return decodeStrict(data, v)
}
