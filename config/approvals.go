package config

import "time"

// ApprovalsConfig is harness.approvals: how long an action that a rule
// (or another guard step) asks about waits for a person, whether a
// principal may decide its own requests, and how long an approval with
// scope "session" covers its session. The store is harness.trusted.store's
// (memory, or Redis shared by every replica).
type ApprovalsConfig struct {
	// TTLSeconds: how long a pending approval waits before it expires
	// (the action is then refused with approval_expired); default 900.
	TTLSeconds int `yaml:"ttl-seconds" validate:"gte=0,lte=604800"`
	// AllowSelfApproval lets the principal that asked decide its own
	// request (default false: another person decides).
	AllowSelfApproval bool `yaml:"allow-self-approval"`
	// SessionScopeSeconds: how long an approval given for the session
	// answers the same action in that session; default 28800 (8 hours).
	SessionScopeSeconds int `yaml:"session-scope-seconds" validate:"gte=0,lte=2592000"`
	// MaxApprovals bounds the approvals kept (pending and recently
	// decided); beyond it the oldest is dropped. Default 10000.
	MaxApprovals int `yaml:"max-approvals" validate:"gte=0,lte=10000000"`
}

// Defaults of harness.approvals.
const (
	DefaultApprovalTTLSeconds  = 900
	DefaultSessionScopeSeconds = 8 * 3600
	DefaultMaxApprovals        = 10000
)

func (a *ApprovalsConfig) resolve() {
	if a.TTLSeconds == 0 {
		a.TTLSeconds = DefaultApprovalTTLSeconds
	}
	if a.SessionScopeSeconds == 0 {
		a.SessionScopeSeconds = DefaultSessionScopeSeconds
	}
	if a.MaxApprovals == 0 {
		a.MaxApprovals = DefaultMaxApprovals
	}
}

// TTL is how long a pending approval waits (the default when unset).
func (a ApprovalsConfig) TTL() time.Duration {
	if a.TTLSeconds <= 0 {
		return DefaultApprovalTTLSeconds * time.Second
	}
	return time.Duration(a.TTLSeconds) * time.Second
}

// SessionScope is how long a session-scoped approval lasts.
func (a ApprovalsConfig) SessionScope() time.Duration {
	if a.SessionScopeSeconds <= 0 {
		return DefaultSessionScopeSeconds * time.Second
	}
	return time.Duration(a.SessionScopeSeconds) * time.Second
}
