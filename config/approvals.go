package config

import (
	"net/url"
	"time"
)

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
	// NotifyURL, when set, is POSTed a JSON notice of every new approval
	// (its id, action name, principal, tenant, session, rule, expiry and
	// console link; never its input, preview or a token), so that a
	// person hears of it. Delivery is best effort: a failed or slow hook
	// never holds the action up. Empty: no notices.
	NotifyURL string `yaml:"notify-url" validate:"omitempty,url"`
	// ConsoleURL is the console's address for the notices' links (the
	// /console/ of a harness serve sharing harness.trusted.store).
	ConsoleURL string `yaml:"console-url" validate:"omitempty,url"`
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

// redactHook shows a notification URL's scheme and host only: hooks
// commonly carry their secret in the path.
func redactHook(s string) string {
	if s == "" {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return Hidden
	}
	if u.Path == "" && u.RawQuery == "" && u.User == nil {
		return s
	}
	return u.Scheme + "://" + u.Host + "/" + Hidden
}
