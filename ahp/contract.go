package ahp

import (
	"encoding/json"
	"fmt"
)

// The durable run contracts (run_lifecycle, task_list, verification) are
// notifications whose payloads the server validates even though nobody
// waits for an answer: a bad snapshot is refused, not silently recorded.

// RunStatus is a run's lifecycle state.
type RunStatus string

// Run states.
const (
	RunCreated   RunStatus = "created"
	RunPlanning  RunStatus = "planning"
	RunExecuting RunStatus = "executing"
	RunVerifying RunStatus = "verifying"
	RunCompleted RunStatus = "completed"
	RunFailed    RunStatus = "failed"
	RunCancelled RunStatus = "cancelled"
)

// UnmarshalJSON refuses an unknown state.
func (s *RunStatus) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, s, "run status", RunCreated, RunPlanning, RunExecuting, RunVerifying,
		RunCompleted, RunFailed, RunCancelled)
}

// RunLifecyclePayload is the payload of a run_lifecycle event: one state
// transition of a run.
type RunLifecyclePayload struct {
	RunID         string         `json:"run_id"`
	SessionID     string         `json:"session_id"`
	Status        RunStatus      `json:"status"`
	Prompt        string         `json:"prompt,omitempty"`
	ResultSummary string         `json:"result_summary,omitempty"`
	Error         string         `json:"error,omitempty"`
	StartedAt     string         `json:"started_at,omitempty"`
	UpdatedAt     string         `json:"updated_at"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// ArtifactRef points at a durable artifact.
type ArtifactRef struct {
	ID        string  `json:"id"`
	Kind      string  `json:"kind,omitempty"`
	URI       string  `json:"uri,omitempty"`
	Path      string  `json:"path,omitempty"`
	MimeType  string  `json:"mime_type,omitempty"`
	SHA256    string  `json:"sha256,omitempty"`
	SizeBytes *uint64 `json:"size_bytes,omitempty"`
	Summary   string  `json:"summary,omitempty"`
}

// EvidenceRef is evidence for a task or a check.
type EvidenceRef struct {
	Kind     string         `json:"kind"`
	Summary  string         `json:"summary"`
	Artifact *ArtifactRef   `json:"artifact,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// TaskStatus is a task's state in a task list.
type TaskStatus string

// Task states.
const (
	TaskPending    TaskStatus = "pending"
	TaskInProgress TaskStatus = "in_progress"
	TaskCompleted  TaskStatus = "completed"
	TaskFailed     TaskStatus = "failed"
	TaskSkipped    TaskStatus = "skipped"
	TaskCancelled  TaskStatus = "cancelled"
)

// UnmarshalJSON refuses an unknown state.
func (s *TaskStatus) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, s, "task status", TaskPending, TaskInProgress, TaskCompleted, TaskFailed,
		TaskSkipped, TaskCancelled)
}

// TaskItem is one task of a task list.
type TaskItem struct {
	ID        string         `json:"id"`
	Title     string         `json:"title"`
	Status    TaskStatus     `json:"status"`
	DependsOn []string       `json:"depends_on,omitempty"`
	Evidence  []EvidenceRef  `json:"evidence,omitempty"`
	Artifacts []ArtifactRef  `json:"artifacts,omitempty"`
	Error     string         `json:"error,omitempty"`
	UpdatedAt string         `json:"updated_at,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// TaskListPayload is the payload of a task_list event: the whole task
// list of a run.
type TaskListPayload struct {
	RunID     string         `json:"run_id"`
	SessionID string         `json:"session_id"`
	Tasks     []TaskItem     `json:"tasks"`
	UpdatedAt string         `json:"updated_at"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// VerificationStatus is the state of a verification or of one check.
type VerificationStatus string

// Verification states.
const (
	VerificationPending     VerificationStatus = "pending"
	VerificationRunning     VerificationStatus = "running"
	VerificationPassed      VerificationStatus = "passed"
	VerificationFailed      VerificationStatus = "failed"
	VerificationSkipped     VerificationStatus = "skipped"
	VerificationNeedsReview VerificationStatus = "needs_review"
)

// UnmarshalJSON refuses an unknown state.
func (s *VerificationStatus) UnmarshalJSON(b []byte) error {
	return unmarshalEnum(b, s, "verification status", VerificationPending, VerificationRunning,
		VerificationPassed, VerificationFailed, VerificationSkipped, VerificationNeedsReview)
}

// VerificationCheck is one check of a verification.
type VerificationCheck struct {
	ID        string             `json:"id"`
	Subject   string             `json:"subject"`
	Status    VerificationStatus `json:"status"`
	Command   string             `json:"command,omitempty"`
	Message   string             `json:"message,omitempty"`
	Evidence  []EvidenceRef      `json:"evidence,omitempty"`
	Artifacts []ArtifactRef      `json:"artifacts,omitempty"`
	Metadata  map[string]any     `json:"metadata,omitempty"`
}

// VerificationPayload is the payload of a verification event.
type VerificationPayload struct {
	RunID         string              `json:"run_id"`
	SessionID     string              `json:"session_id"`
	Status        VerificationStatus  `json:"status"`
	Checks        []VerificationCheck `json:"checks,omitempty"`
	ResidualRisks []string            `json:"residual_risks,omitempty"`
	UpdatedAt     string              `json:"updated_at"`
	Metadata      map[string]any      `json:"metadata,omitempty"`
}

// ValidatePayload checks the payload of the event types whose payload the
// protocol fixes and validates on arrival (run_lifecycle, task_list,
// verification); other types' payloads are conventions and pass.
func ValidatePayload(t EventType, payload json.RawMessage) error {
	var v any
	switch t {
	case RunLifecycle:
		v = new(RunLifecyclePayload)
	case TaskList:
		v = new(TaskListPayload)
	case Verification:
		v = new(VerificationPayload)
	default:
		return nil
	}
	if isNull(payload) {
		return errPayloadObject(t)
	}
	return decodeStrict(payload, v)
}

func errPayloadObject(t EventType) error { return fmt.Errorf("%s payload must be an object", t) }

func errNotSpecialized(t EventType) error {
	return fmt.Errorf("event type %s has no specialized decision", t)
}
