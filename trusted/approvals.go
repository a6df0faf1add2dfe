package trusted

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

// Approval states.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
)

// Approval scopes: once runs the approved action once; session also
// satisfies the guard's ask for the same action (same canonical hash) in
// the same tenant and session, without a new approval, for the store's
// grant lifetime.
const (
	ScopeOnce    = "once"
	ScopeSession = "session"
)

// Defaults of the approvals stores.
const (
	// DefaultApprovalTTL is how long an approval waits for a person before
	// it expires (and the action is refused with approval_expired).
	DefaultApprovalTTL = 15 * time.Minute
	// DefaultGrantTTL is how long a session-scoped approval covers its
	// session.
	DefaultGrantTTL = 8 * time.Hour
	// DefaultApprovalRetention is how long a decided or expired approval
	// stays readable (its requester may poll it late).
	DefaultApprovalRetention = 24 * time.Hour
	// DefaultMaxApprovals bounds the approvals one store holds.
	DefaultMaxApprovals = 10000
)

// Store errors. They carry action codes, so the HTTP API, the console and
// the library answer them alike: not_found (404), already_decided (409),
// approval_expired (409 on a decision, the observation's code on a run).
var (
	ErrApprovalNotFound = &action.Error{Code: action.CodeNotFound, Message: "no such approval"}
	ErrApprovalDecided  = &action.Error{Code: CodeAlreadyDecided, Message: "the approval is already decided"}
	ErrApprovalExpired  = &action.Error{Code: action.CodeApprovalExpired, Message: "the approval expired before anyone decided"}
	// ErrApprovalClaimed is the answer to a second claim of an approved
	// approval's run: it runs once.
	ErrApprovalClaimed = &action.Error{Code: CodeAlreadyDecided, Message: "the approved action was already handed out to run"}
	// errNotExpired is Decide's answer to an expiry of an approval that
	// has time left.
	errNotExpired = errors.New("the approval has not expired")
)

// Codes of the approvals service beyond the action codes.
const (
	// CodeAlreadyDecided: the approval was approved, denied or expired
	// already (HTTP 409); nothing changed.
	CodeAlreadyDecided action.Code = "already_decided"
	// CodeSelfApproval: a principal tried to decide its own request
	// (HTTP 403) and the configuration does not allow it.
	CodeSelfApproval action.Code = "forbidden"
)

// StoredApproval is one approval as a store holds it: the pending action
// and, once decided, who decided what, when and how.
type StoredApproval struct {
	ID        string                  `json:"id"`
	Status    string                  `json:"status"`
	Pending   runtime.PendingApproval `json:"pending"`
	ExpiresAt time.Time               `json:"expires_at"`
	DecidedBy string                  `json:"decided_by,omitempty"`
	DecidedAt time.Time               `json:"decided_at,omitzero"`
	Scope     string                  `json:"scope,omitempty"`
	Reason    string                  `json:"reason,omitempty"`
	Method    string                  `json:"method,omitempty"`
	// Claimed: the approved action was handed out to run (a token
	// minted, or run by AwaitApproval); it is handed out once.
	Claimed bool `json:"claimed,omitempty"`
}

// Tenant is the tenant the approval's action is for.
func (a StoredApproval) Tenant() string { return a.Pending.Action.Tenant }

// StoreDecision is a transition a store makes once: pending to approved,
// denied or expired.
type StoreDecision struct {
	Status    string // ApprovalApproved, ApprovalDenied or ApprovalExpired
	DecidedBy string
	Scope     string
	Reason    string
	Method    string
	At        time.Time
}

// ApprovalStore keeps approvals for the runtime (which requests them) and
// the Service (which decides and redeems them). Every transition is made
// once, under concurrency, across every replica sharing the store.
type ApprovalStore interface {
	runtime.Approvals
	runtime.SessionGrants
	// Get returns the approval as stored (a pending one past its expiry
	// is still pending until Decide expires it); ErrApprovalNotFound.
	Get(ctx context.Context, id string) (StoredApproval, error)
	// List returns the approvals with status ("" for all), newest first,
	// as Get would return them.
	List(ctx context.Context, status string) ([]StoredApproval, error)
	// Decide moves a pending approval to d.Status and returns it. An
	// approval not pending any more is returned as it is with
	// ErrApprovalDecided; a pending one past its expiry at d.At is moved
	// to expired instead and returned with ErrApprovalExpired (the caller
	// that gets this error made the expiry). An approval scoped to its
	// session grants it (see Granted). Expiring (d.Status expired) an
	// approval that has time left changes nothing and returns an error.
	Decide(ctx context.Context, id string, d StoreDecision) (StoredApproval, error)
	// Claim marks an approved approval as handed out to run, once:
	// ErrApprovalClaimed for the second claim, ErrApprovalDecided if it is
	// not approved.
	Claim(ctx context.Context, id string) (StoredApproval, error)
	// Ping checks the store answers.
	Ping(ctx context.Context) error
	Close() error
}

// newApprovalID returns a fresh approval id: "apr_" and 128 random bits.
func newApprovalID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "apr_" + hex.EncodeToString(b[:]), nil
}

// grantKey names a session grant: tenant, session and action hash.
func grantKey(tenant, session, hash string) string {
	sum := sha256.Sum256([]byte(tenant + "\x00" + session + "\x00" + hash))
	return hex.EncodeToString(sum[:])
}

// approvalOf is what the requester is told of a new approval.
func approvalOf(st StoredApproval) action.Approval {
	return action.Approval{ID: st.ID, ExpiresAt: st.ExpiresAt.Format(time.RFC3339Nano), Preview: st.Pending.Preview}
}

// ApprovalStoreOptions configure an approvals store; zero values are the
// defaults.
type ApprovalStoreOptions struct {
	// TTL: how long an approval waits (DefaultApprovalTTL).
	TTL time.Duration
	// GrantTTL: how long a session-scoped approval covers its session
	// (DefaultGrantTTL).
	GrantTTL time.Duration
	// Retention: how long a decided approval stays readable
	// (DefaultApprovalRetention).
	Retention time.Duration
	// Max bounds the approvals held (DefaultMaxApprovals); beyond it the
	// oldest is dropped (a pending one is then unknown, so never run).
	Max int
}

func (o ApprovalStoreOptions) withDefaults() ApprovalStoreOptions {
	if o.TTL <= 0 {
		o.TTL = DefaultApprovalTTL
	}
	if o.GrantTTL <= 0 {
		o.GrantTTL = DefaultGrantTTL
	}
	if o.Retention <= 0 {
		o.Retention = DefaultApprovalRetention
	}
	if o.Max <= 0 {
		o.Max = DefaultMaxApprovals
	}
	return o
}

// MemoryApprovals is the in-process approvals store: what waits for a
// person, bounded in number, not shared between replicas (use
// RedisApprovals for those). Its zero value is not usable; call
// NewMemoryApprovals or NewMemoryApprovalsWith.
type MemoryApprovals struct {
	opts ApprovalStoreOptions
	now  func() time.Time

	mu     sync.Mutex
	items  map[string]*StoredApproval
	grants map[string]memGrant
	pruned time.Time // the last prune: at most one a second
}

type memGrant struct {
	id      string
	expires time.Time
}

var _ ApprovalStore = (*MemoryApprovals)(nil)

// NewMemoryApprovals returns a store whose approvals expire after ttl
// (DefaultApprovalTTL when 0) and which holds at most max
// (DefaultMaxApprovals when 0).
func NewMemoryApprovals(ttl time.Duration, max int) *MemoryApprovals {
	return NewMemoryApprovalsWith(ApprovalStoreOptions{TTL: ttl, Max: max})
}

// NewMemoryApprovalsWith returns a store with opts.
func NewMemoryApprovalsWith(opts ApprovalStoreOptions) *MemoryApprovals {
	return &MemoryApprovals{opts: opts.withDefaults(), now: time.Now, items: map[string]*StoredApproval{}, grants: map[string]memGrant{}}
}

// Request stores p as a pending approval.
func (m *MemoryApprovals) Request(_ context.Context, p runtime.PendingApproval) (action.Approval, error) {
	id, err := newApprovalID()
	if err != nil {
		return action.Approval{}, err
	}
	now := m.now()
	if p.Created.IsZero() {
		p.Created = now.UTC()
	}
	st := &StoredApproval{ID: id, Status: ApprovalPending, Pending: p, ExpiresAt: now.Add(m.opts.TTL).UTC()}
	m.mu.Lock()
	m.pruneLocked(now)
	if len(m.items) >= m.opts.Max {
		m.dropOldestLocked()
	}
	m.items[id] = st
	stored := *st // read under the lock: a decision may follow at once
	m.mu.Unlock()
	return approvalOf(stored), nil
}

// Get returns the approval id.
func (m *MemoryApprovals) Get(_ context.Context, id string) (StoredApproval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.items[id]
	if !ok {
		return StoredApproval{}, ErrApprovalNotFound
	}
	return *st, nil
}

// List returns the approvals with the given status ("" for all), newest
// first.
func (m *MemoryApprovals) List(_ context.Context, status string) ([]StoredApproval, error) {
	m.mu.Lock()
	m.pruneLocked(m.now())
	out := make([]StoredApproval, 0, len(m.items))
	for _, st := range m.items {
		if status == "" || st.Status == status {
			out = append(out, *st)
		}
	}
	m.mu.Unlock()
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(out []StoredApproval) {
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Pending.Created.Equal(out[j].Pending.Created) {
			return out[i].Pending.Created.After(out[j].Pending.Created)
		}
		return out[i].ID > out[j].ID
	})
}

// Decide makes the one transition of a pending approval (see
// ApprovalStore.Decide).
func (m *MemoryApprovals) Decide(_ context.Context, id string, d StoreDecision) (StoredApproval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.items[id]
	if !ok {
		return StoredApproval{}, ErrApprovalNotFound
	}
	if st.Status != ApprovalPending {
		return *st, ErrApprovalDecided
	}
	if !d.At.Before(st.ExpiresAt) {
		st.Status, st.DecidedAt = ApprovalExpired, d.At.UTC()
		return *st, ErrApprovalExpired
	}
	if d.Status == ApprovalExpired {
		return *st, errNotExpired
	}
	st.Status, st.DecidedBy, st.DecidedAt = d.Status, d.DecidedBy, d.At.UTC()
	st.Scope, st.Reason, st.Method = d.Scope, d.Reason, d.Method
	if d.Status == ApprovalApproved && d.Scope == ScopeSession && st.Pending.Action.SessionID != "" {
		k := grantKey(st.Tenant(), st.Pending.Action.SessionID, st.Pending.ActionHash)
		m.grants[k] = memGrant{id: st.ID, expires: d.At.Add(m.opts.GrantTTL)}
	}
	return *st, nil
}

// Claim hands an approved approval's run out once.
func (m *MemoryApprovals) Claim(_ context.Context, id string) (StoredApproval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.items[id]
	switch {
	case !ok:
		return StoredApproval{}, ErrApprovalNotFound
	case st.Status != ApprovalApproved:
		return *st, ErrApprovalDecided
	case st.Claimed:
		return *st, ErrApprovalClaimed
	}
	st.Claimed = true
	return *st, nil
}

// Granted reports the session-scoped approval that covers the action of
// hash in tenant's session, if any.
func (m *MemoryApprovals) Granted(_ context.Context, tenant, session, hash string) (string, bool) {
	if session == "" {
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := grantKey(tenant, session, hash)
	g, ok := m.grants[k]
	if !ok {
		return "", false
	}
	if !m.now().Before(g.expires) {
		delete(m.grants, k)
		return "", false
	}
	return g.id, true
}

// Ping always succeeds.
func (m *MemoryApprovals) Ping(context.Context) error { return nil }

// Close does nothing.
func (m *MemoryApprovals) Close() error { return nil }

// pruneLocked forgets decided approvals past their retention and expired
// grants.
func (m *MemoryApprovals) pruneLocked(now time.Time) {
	if now.Sub(m.pruned) < time.Second && now.After(m.pruned) {
		return
	}
	m.pruned = now
	for id, st := range m.items {
		end := st.ExpiresAt
		if !st.DecidedAt.IsZero() {
			end = st.DecidedAt
		}
		if now.Sub(end) > m.opts.Retention {
			delete(m.items, id)
		}
	}
	for k, g := range m.grants {
		if !now.Before(g.expires) {
			delete(m.grants, k)
		}
	}
}

func (m *MemoryApprovals) dropOldestLocked() {
	var oldest *StoredApproval
	for _, st := range m.items {
		if oldest == nil || st.Pending.Created.Before(oldest.Pending.Created) {
			oldest = st
		}
	}
	if oldest != nil {
		delete(m.items, oldest.ID)
	}
}
