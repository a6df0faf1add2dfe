package ahp

import "encoding/json"

// This file holds the payloads and decisions of the specialized events
// (idle, intent_detection, context_perception, memory_recall, planning,
// reasoning, rate_limit, confirmation), the event context, and the
// payloads of heartbeat and success. Their JSON follows the protocol's
// reference implementation field for field.

// EventContext is the optional structured context an event may carry.
type EventContext struct {
	RecentFacts   []Fact         `json:"recent_facts,omitempty"`
	MemorySummary *MemorySummary `json:"memory_summary,omitempty"`
	SessionStats  *SessionStats  `json:"session_stats,omitempty"`
	CurrentTask   string         `json:"current_task,omitempty"`
	Capabilities  map[string]any `json:"capabilities,omitempty"`
}

// Fact is one remembered fact.
type Fact struct {
	Content    string  `json:"content"`
	Source     string  `json:"source"`
	Confidence float32 `json:"confidence"`
}

// MemorySummary summarizes an agent's memory.
type MemorySummary struct {
	MemoryType   string   `json:"memory_type"`
	TotalItems   uint64   `json:"total_items"`
	RecentTopics []string `json:"recent_topics"`
}

// SessionStats are a session's counters.
type SessionStats struct {
	TotalActions uint64 `json:"total_actions"`
	TotalTokens  int32  `json:"total_tokens"`
	DurationMS   uint64 `json:"duration_ms"`
	ErrorCount   uint64 `json:"error_count"`
}

// HeartbeatPayload is the payload of a heartbeat event.
type HeartbeatPayload struct {
	UptimeMS             uint64   `json:"uptime_ms"`
	TotalEventsProcessed uint64   `json:"total_events_processed"`
	CurrentState         string   `json:"current_state"`
	CPUPercent           *float32 `json:"cpu_percent,omitempty"`
	MemoryBytes          *uint64  `json:"memory_bytes,omitempty"`
	ActiveTools          *uint64  `json:"active_tools,omitempty"`
	PendingActions       *uint64  `json:"pending_actions,omitempty"`
	QueueDepth           *uint64  `json:"queue_depth,omitempty"`
	TokensUsed           *int32   `json:"tokens_used,omitempty"`
}

// SuccessPayload is the payload of a success event.
type SuccessPayload struct {
	SessionID     string `json:"session_id"`
	ActionType    string `json:"action_type"`
	ActionSummary string `json:"action_summary"`
	DurationMS    uint64 `json:"duration_ms"`
}

// IdlePayload is the payload of an idle event.
type IdlePayload struct {
	IdleDurationMS  uint64 `json:"idle_duration_ms"`
	IdleReason      string `json:"idle_reason"`
	LastEventType   string `json:"last_event_type,omitempty"`
	SuggestedAction string `json:"suggested_action,omitempty"`
}

// IdleDecision answers idle: "allow" or "defer" (Reason optional).
type IdleDecision struct {
	Kind   string `json:"decision"`
	Reason string `json:"reason,omitempty"`
}

var idleVariants = variants{"allow": "", "defer": "reason?"}

// MarshalJSON writes the decision's variant.
func (d IdleDecision) MarshalJSON() ([]byte, error) {
	return marshalVariant(d, "decision", idleVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *IdleDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", idleVariants, false)
}

// IntentDetectionPayload is the payload of an intent_detection event.
type IntentDetectionPayload struct {
	SessionID    string `json:"session_id"`
	Prompt       string `json:"prompt"`
	Workspace    string `json:"workspace"`
	LanguageHint string `json:"language_hint,omitempty"`
}

// TargetHints are what an intent detection found about its target.
type TargetHints struct {
	TargetType string `json:"target_type,omitempty"`
	TargetName string `json:"target_name,omitempty"`
	Domain     string `json:"domain,omitempty"`
}

// IntentDetectionDecision answers intent_detection: "allow"
// (DetectedIntent, Confidence, TargetHints optional) or "block" (Reason).
type IntentDetectionDecision struct {
	Kind           string       `json:"decision"`
	DetectedIntent string       `json:"detected_intent"`
	Confidence     float32      `json:"confidence"`
	TargetHints    *TargetHints `json:"target_hints,omitempty"`
	Reason         string       `json:"reason"`
}

var intentVariants = variants{"allow": "detected_intent confidence target_hints?", "block": "reason"}

// MarshalJSON writes the decision's variant.
func (d IntentDetectionDecision) MarshalJSON() ([]byte, error) {
	return marshalVariant(d, "decision", intentVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *IntentDetectionDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", intentVariants, false)
}

// MemoryRecallPayload is the payload of a memory_recall event.
type MemoryRecallPayload struct {
	SessionID        string `json:"session_id"`
	Query            string `json:"query"`
	MemoryType       string `json:"memory_type"`
	MaxResults       uint64 `json:"max_results"`
	WorkingDirectory string `json:"working_directory"`
}

// MemoryRecallDecision answers memory_recall: "allow" (InjectedFacts,
// Metadata optional) or "block" (Reason, Metadata optional).
type MemoryRecallDecision struct {
	Kind          string         `json:"decision"`
	InjectedFacts []Fact         `json:"injected_facts"`
	Reason        string         `json:"reason"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

var memoryVariants = variants{"allow": "injected_facts metadata?", "block": "reason metadata?"}

// MarshalJSON writes the decision's variant.
func (d MemoryRecallDecision) MarshalJSON() ([]byte, error) {
	if d.Kind == "allow" && d.InjectedFacts == nil {
		d.InjectedFacts = []Fact{}
	}
	return marshalVariant(d, "decision", memoryVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *MemoryRecallDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", memoryVariants, false)
}

// PlanningStrategy is a planning strategy: "none", "step_by_step",
// "tree_of_thoughts", "graph_planning", or a custom one (Name "custom",
// Custom its name), written {"custom": name}.
type PlanningStrategy struct {
	Name   string
	Custom string
}

// MarshalJSON writes the strategy's name, or {"custom": name}.
func (s PlanningStrategy) MarshalJSON() ([]byte, error) {
	return openEnum{s.Name, s.Custom}.marshal("custom")
}

// UnmarshalJSON reads a known name or {"custom": name}.
func (s *PlanningStrategy) UnmarshalJSON(b []byte) error {
	var o openEnum
	if err := o.unmarshal(b, "planning strategy", "custom", "none", "step_by_step", "tree_of_thoughts", "graph_planning"); err != nil {
		return err
	}
	*s = PlanningStrategy{o.Name, o.Value}
	return nil
}

// PlanningPayload is the payload of a planning event.
type PlanningPayload struct {
	SessionID           string             `json:"session_id"`
	TaskDescription     string             `json:"task_description"`
	AvailableStrategies []PlanningStrategy `json:"available_strategies"`
	Constraints         json.RawMessage    `json:"constraints,omitempty"`
}

// PlanningDecision answers planning: "allow" (SelectedStrategy,
// PlanningTemplate and Metadata optional), "block" (Reason, Metadata
// optional) or "modify" (ModifiedTask, Hints optional).
type PlanningDecision struct {
	Kind             string           `json:"decision"`
	SelectedStrategy PlanningStrategy `json:"selected_strategy"`
	PlanningTemplate json.RawMessage  `json:"planning_template,omitempty"`
	Reason           string           `json:"reason"`
	ModifiedTask     string           `json:"modified_task"`
	Hints            []string         `json:"hints,omitempty"`
	Metadata         map[string]any   `json:"metadata,omitempty"`
}

var planningVariants = variants{
	"allow":  "selected_strategy planning_template? metadata?",
	"block":  "reason metadata?",
	"modify": "modified_task hints?",
}

// MarshalJSON writes the decision's variant.
func (d PlanningDecision) MarshalJSON() ([]byte, error) {
	return marshalVariant(d, "decision", planningVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *PlanningDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", planningVariants, false)
}

// ReasoningType is a kind of reasoning: "chain_of_thought",
// "tree_of_thoughts", "re_act", "reflexion", or another (Name "other",
// Other its name), written {"other": name}.
type ReasoningType struct {
	Name  string
	Other string
}

// MarshalJSON writes the type's name, or {"other": name}.
func (r ReasoningType) MarshalJSON() ([]byte, error) {
	return openEnum{r.Name, r.Other}.marshal("other")
}

// UnmarshalJSON reads a known name or {"other": name}.
func (r *ReasoningType) UnmarshalJSON(b []byte) error {
	var o openEnum
	if err := o.unmarshal(b, "reasoning type", "other", "chain_of_thought", "tree_of_thoughts", "re_act", "reflexion"); err != nil {
		return err
	}
	*r = ReasoningType{o.Name, o.Value}
	return nil
}

// ReasoningPayload is the payload of a reasoning event.
type ReasoningPayload struct {
	SessionID        string        `json:"session_id"`
	ReasoningType    ReasoningType `json:"reasoning_type"`
	ProblemStatement string        `json:"problem_statement"`
	Hints            []string      `json:"hints,omitempty"`
}

// ReasoningDecision answers reasoning: "allow" (Hints and Metadata
// optional) or "block" (Reason, Metadata optional).
type ReasoningDecision struct {
	Kind     string         `json:"decision"`
	Hints    []string       `json:"hints,omitempty"`
	Reason   string         `json:"reason"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

var reasoningVariants = variants{"allow": "hints? metadata?", "block": "reason metadata?"}

// MarshalJSON writes the decision's variant.
func (d ReasoningDecision) MarshalJSON() ([]byte, error) {
	return marshalVariant(d, "decision", reasoningVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *ReasoningDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", reasoningVariants, false)
}

// RateLimitType is the kind of limit hit: "llm_token_limit",
// "llm_request_limit", "api_request_limit", "tool_execution_limit", or a
// custom one (Name "custom"), written {"custom": name}.
type RateLimitType struct {
	Name   string
	Custom string
}

// MarshalJSON writes the type's name, or {"custom": name}.
func (r RateLimitType) MarshalJSON() ([]byte, error) {
	return openEnum{r.Name, r.Custom}.marshal("custom")
}

// UnmarshalJSON reads a known name or {"custom": name}.
func (r *RateLimitType) UnmarshalJSON(b []byte) error {
	var o openEnum
	if err := o.unmarshal(b, "rate limit type", "custom", "llm_token_limit", "llm_request_limit", "api_request_limit", "tool_execution_limit"); err != nil {
		return err
	}
	*r = RateLimitType{o.Name, o.Value}
	return nil
}

// RateLimitPayload is the payload of a rate_limit event.
type RateLimitPayload struct {
	SessionID    string        `json:"session_id"`
	LimitType    RateLimitType `json:"limit_type"`
	RetryAfterMS uint64        `json:"retry_after_ms"`
	CurrentUsage string        `json:"current_usage"`
}

// RateLimitDecision answers rate_limit: "retry" (RetryAfterMS, Metadata
// optional), "queue", or "skip" (Reason).
type RateLimitDecision struct {
	Kind         string         `json:"decision"`
	RetryAfterMS uint64         `json:"retry_after_ms"`
	Metadata     map[string]any `json:"metadata,omitempty"`
	Reason       string         `json:"reason"`
}

var rateLimitVariants = variants{"retry": "retry_after_ms metadata?", "queue": "", "skip": "reason"}

// MarshalJSON writes the decision's variant.
func (d RateLimitDecision) MarshalJSON() ([]byte, error) {
	return marshalVariant(d, "decision", rateLimitVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *RateLimitDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", rateLimitVariants, false)
}

// ConfirmationType is what needs confirming: "safety_confirm",
// "user_confirm", "cost_confirm", or a custom one (Name "custom"), written
// {"custom": name}.
type ConfirmationType struct {
	Name   string
	Custom string
}

// MarshalJSON writes the type's name, or {"custom": name}.
func (c ConfirmationType) MarshalJSON() ([]byte, error) {
	return openEnum{c.Name, c.Custom}.marshal("custom")
}

// UnmarshalJSON reads a known name or {"custom": name}.
func (c *ConfirmationType) UnmarshalJSON(b []byte) error {
	var o openEnum
	if err := o.unmarshal(b, "confirmation type", "custom", "safety_confirm", "user_confirm", "cost_confirm"); err != nil {
		return err
	}
	*c = ConfirmationType{o.Name, o.Value}
	return nil
}

// ConfirmationPayload is the payload of a confirmation event.
type ConfirmationPayload struct {
	SessionID        string           `json:"session_id"`
	ConfirmationType ConfirmationType `json:"confirmation_type"`
	Message          string           `json:"message"`
	Options          []string         `json:"options,omitempty"`
}

// ConfirmationDecision answers confirmation: "escalate", "approve" or
// "reject" (Reason).
type ConfirmationDecision struct {
	Kind   string `json:"decision"`
	Reason string `json:"reason"`
}

var confirmationVariants = variants{"escalate": "", "approve": "", "reject": "reason"}

// MarshalJSON writes the decision's variant.
func (d ConfirmationDecision) MarshalJSON() ([]byte, error) {
	return marshalVariant(d, "decision", confirmationVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *ConfirmationDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", confirmationVariants, false)
}

// PerceptionIntent is why a model needs context.
type PerceptionIntent string

// UnmarshalJSON refuses an unknown intent.
func (p *PerceptionIntent) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, p, "perception intent", "recognize", "understand", "locate", "retrieve",
		"explore", "reason", "validate", "compare", "track")
}

// TimeRange bounds an event target in time.
type TimeRange struct {
	From     *int64 `json:"from" ahp:"optional"`
	To       *int64 `json:"to" ahp:"optional"`
	Relative string `json:"relative,omitempty"`
}

// PerceptionTarget is what a model wants to perceive; Kind names the
// variant and selects which fields are written:
//
//	entity   {name, entity_type, identifier}
//	location {path, location_type}
//	event    {description, event_type, time_range}
//	relation {entities, relation_type}
//	rule     {name, rule_type, scope}
//	state    {target, aspect, include_history}
//	resource {name, resource_type, constraints}
//	pattern  {pattern, pattern_type}
//
// identifier, time_range, scope and constraints are optional and written
// as null when empty. Its JSON is {kind: {fields}}.
type PerceptionTarget struct {
	Kind           string          `json:"$kind"`
	Name           string          `json:"name"`
	EntityType     string          `json:"entity_type"`
	Identifier     string          `json:"identifier"`
	Path           string          `json:"path"`
	LocationType   string          `json:"location_type"`
	Description    string          `json:"description"`
	EventType      string          `json:"event_type"`
	TimeRange      *TimeRange      `json:"time_range"`
	Entities       []string        `json:"entities"`
	RelationType   string          `json:"relation_type"`
	RuleType       string          `json:"rule_type"`
	Scope          string          `json:"scope"`
	Target         string          `json:"target"`
	Aspect         string          `json:"aspect"`
	IncludeHistory bool            `json:"include_history"`
	ResourceType   string          `json:"resource_type"`
	Constraints    json.RawMessage `json:"constraints"`
	Pattern        string          `json:"pattern"`
	PatternType    string          `json:"pattern_type"`
}

var targetVariants = variants{
	"entity":   "name entity_type identifier~",
	"location": "path location_type",
	"event":    "description event_type time_range~",
	"relation": "entities relation_type",
	"rule":     "name rule_type scope~",
	"state":    "target aspect include_history",
	"resource": "name resource_type constraints~",
	"pattern":  "pattern pattern_type",
}

// MarshalJSON writes {kind: {fields}}.
func (p PerceptionTarget) MarshalJSON() ([]byte, error) {
	return marshalVariant(p, "$kind", targetVariants, true)
}

// UnmarshalJSON reads {kind: {fields}}, refusing unknown kinds.
func (p *PerceptionTarget) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, p, "$kind", targetVariants, true)
}

// PerceptionContext is where a perception happens.
type PerceptionContext struct {
	Workspace       string        `json:"workspace"`
	CurrentTask     string        `json:"current_task,omitempty"`
	Query           string        `json:"query,omitempty"`
	RelevantHistory []HistoryItem `json:"relevant_history,omitempty"`
}

// HistoryItem is one item of history.
type HistoryItem struct {
	ItemType  string `json:"item_type"`
	Content   string `json:"content"`
	Timestamp int64  `json:"timestamp"`
}

// PerceptionConstraints bound a perception's answer.
type PerceptionConstraints struct {
	MaxResults       *uint64 `json:"max_results" ahp:"optional"`
	MaxContextLength *uint64 `json:"max_context_length" ahp:"optional"`
	IncludeSources   *bool   `json:"include_sources" ahp:"optional"`
}

// ContextPerceptionPayload is the payload of a context_perception event.
// Domain, PreferredModality, Urgency, Freshness and Constraints may be
// absent on input (the protocol's defaults: general, any, normal, static,
// no limits with sources).
type ContextPerceptionPayload struct {
	SessionID         string                 `json:"session_id"`
	Intent            PerceptionIntent       `json:"intent"`
	Target            PerceptionTarget       `json:"target"`
	Domain            string                 `json:"domain" ahp:"optional"`
	PreferredModality string                 `json:"preferred_modality" ahp:"optional"`
	Urgency           string                 `json:"urgency" ahp:"optional"`
	Freshness         string                 `json:"freshness" ahp:"optional"`
	Context           PerceptionContext      `json:"context"`
	Constraints       *PerceptionConstraints `json:"constraints" ahp:"optional"`
	Metadata          map[string]any         `json:"metadata,omitempty"`
}

// InjectedContext is the context a harness gives back.
type InjectedContext struct {
	Facts          []Fact               `json:"facts"`
	FileContents   []FileContentSnippet `json:"file_contents,omitempty"`
	ProjectSummary *ProjectSummary      `json:"project_summary,omitempty"`
	Knowledge      []string             `json:"knowledge,omitempty"`
	Suggestions    []string             `json:"suggestions,omitempty"`
}

// FileContentSnippet is part of a file.
type FileContentSnippet struct {
	Path           string  `json:"path"`
	Snippet        string  `json:"snippet"`
	RelevanceScore float32 `json:"relevance_score"`
}

// ProjectSummary summarizes a project.
type ProjectSummary struct {
	ProjectName          string   `json:"project_name"`
	Language             string   `json:"language,omitempty"`
	KeyFiles             []string `json:"key_files,omitempty"`
	StructureDescription string   `json:"structure_description"`
}

// ContextPerceptionDecision answers context_perception: "allow"
// (InjectedContext, Metadata optional), "block" (Reason, Metadata
// optional) or "refine" (RefinedIntent and RefinedTarget, written null
// when empty, and ScopeHints).
type ContextPerceptionDecision struct {
	Kind            string            `json:"decision"`
	InjectedContext *InjectedContext  `json:"injected_context"`
	Reason          string            `json:"reason"`
	Metadata        map[string]any    `json:"metadata,omitempty"`
	RefinedIntent   PerceptionIntent  `json:"refined_intent"`
	RefinedTarget   *PerceptionTarget `json:"refined_target"`
	ScopeHints      []string          `json:"scope_hints"`
}

var perceptionVariants = variants{
	"allow":  "injected_context metadata?",
	"block":  "reason metadata?",
	"refine": "refined_intent~ refined_target~ scope_hints",
}

// MarshalJSON writes the decision's variant.
func (d ContextPerceptionDecision) MarshalJSON() ([]byte, error) {
	if d.Kind == "refine" && d.ScopeHints == nil {
		d.ScopeHints = []string{}
	}
	return marshalVariant(d, "decision", perceptionVariants, false)
}

// UnmarshalJSON reads a variant, refusing unknown ones.
func (d *ContextPerceptionDecision) UnmarshalJSON(b []byte) error {
	return unmarshalVariant(b, d, "decision", perceptionVariants, false)
}

// SpecializedDecision is the decision of a specialized event: one of
// *IdleDecision, *IntentDetectionDecision, *ContextPerceptionDecision,
// *MemoryRecallDecision, *PlanningDecision, *ReasoningDecision,
// *RateLimitDecision, *ConfirmationDecision.
type SpecializedDecision interface {
	// DecisionFor is the event type the decision answers.
	DecisionFor() EventType
}

// DecisionFor returns Idle.
func (*IdleDecision) DecisionFor() EventType { return Idle }

// DecisionFor returns IntentDetection.
func (*IntentDetectionDecision) DecisionFor() EventType { return IntentDetection }

// DecisionFor returns ContextPerception.
func (*ContextPerceptionDecision) DecisionFor() EventType { return ContextPerception }

// DecisionFor returns MemoryRecall.
func (*MemoryRecallDecision) DecisionFor() EventType { return MemoryRecall }

// DecisionFor returns Planning.
func (*PlanningDecision) DecisionFor() EventType { return Planning }

// DecisionFor returns Reasoning.
func (*ReasoningDecision) DecisionFor() EventType { return Reasoning }

// DecisionFor returns RateLimit.
func (*RateLimitDecision) DecisionFor() EventType { return RateLimit }

// DecisionFor returns Confirmation.
func (*ConfirmationDecision) DecisionFor() EventType { return Confirmation }

// SpecializedPayload decodes the payload of a specialized event into its
// type (*IdlePayload, *ContextPerceptionPayload, …), refusing a payload
// without the fields the protocol requires.
func SpecializedPayload(ev *WireEvent) (any, error) {
	var v any
	switch ev.EventType {
	case Idle:
		v = new(IdlePayload)
	case IntentDetection:
		v = new(IntentDetectionPayload)
	case ContextPerception:
		v = new(ContextPerceptionPayload)
	case MemoryRecall:
		v = new(MemoryRecallPayload)
	case Planning:
		v = new(PlanningPayload)
	case Reasoning:
		v = new(ReasoningPayload)
	case RateLimit:
		v = new(RateLimitPayload)
	case Confirmation:
		v = new(ConfirmationPayload)
	default:
		return nil, errNotSpecialized(ev.EventType)
	}
	if isNull(ev.Payload) {
		return nil, errPayloadObject(ev.EventType)
	}
	if err := decodeStrict(ev.Payload, v); err != nil {
		return nil, err
	}
	return v, nil
}

// newSpecializedDecision returns an empty decision of t's shape.
func newSpecializedDecision(t EventType) SpecializedDecision {
	switch t {
	case Idle:
		return new(IdleDecision)
	case IntentDetection:
		return new(IntentDetectionDecision)
	case ContextPerception:
		return new(ContextPerceptionDecision)
	case MemoryRecall:
		return new(MemoryRecallDecision)
	case Planning:
		return new(PlanningDecision)
	case Reasoning:
		return new(ReasoningDecision)
	case RateLimit:
		return new(RateLimitDecision)
	case Confirmation:
		return new(ConfirmationDecision)
	}
	return nil
}
