package trusted

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

// DefaultApprovalTTL is how long an approval waits for a person before it
// expires (and the action is refused with approval_expired).
const DefaultApprovalTTL = 15 * time.Minute

// StoredApproval is one approval as the store holds it.
type StoredApproval struct {
	ID        string
	Status    string
	Pending   runtime.PendingApproval
	ExpiresAt time.Time
}

// MemoryApprovals is the in-process approvals store: what waits for a
// person, bounded in number (the oldest pending approvals beyond Max are
// dropped as expired). It implements runtime.Approvals. Its zero value is
// not usable; call NewMemoryApprovals.
type MemoryApprovals struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu    sync.Mutex
	items map[string]*StoredApproval
}

// NewMemoryApprovals returns a store whose approvals expire after ttl
// (DefaultApprovalTTL when 0) and which holds at most max (10,000 when 0).
func NewMemoryApprovals(ttl time.Duration, max int) *MemoryApprovals {
	if ttl <= 0 {
		ttl = DefaultApprovalTTL
	}
	if max <= 0 {
		max = 10000
	}
	return &MemoryApprovals{ttl: ttl, max: max, now: time.Now, items: map[string]*StoredApproval{}}
}

// Request stores p as a pending approval.
func (m *MemoryApprovals) Request(_ context.Context, p runtime.PendingApproval) (action.Approval, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return action.Approval{}, err
	}
	id := "apr_" + hex.EncodeToString(b[:])
	now := m.now()
	st := &StoredApproval{ID: id, Status: ApprovalPending, Pending: p, ExpiresAt: now.Add(m.ttl).UTC()}
	m.mu.Lock()
	m.expireLocked(now)
	if len(m.items) >= m.max {
		m.dropOldestLocked()
	}
	m.items[id] = st
	m.mu.Unlock()
	return action.Approval{ID: id, ExpiresAt: st.ExpiresAt.Format(time.RFC3339Nano), Preview: p.Preview}, nil
}

// Get returns the approval id, with its status brought up to date.
func (m *MemoryApprovals) Get(_ context.Context, id string) (StoredApproval, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(m.now())
	st, ok := m.items[id]
	if !ok {
		return StoredApproval{}, false
	}
	return *st, true
}

// List returns the approvals with the given status ("" for all), newest
// first.
func (m *MemoryApprovals) List(_ context.Context, status string) []StoredApproval {
	m.mu.Lock()
	m.expireLocked(m.now())
	out := make([]StoredApproval, 0, len(m.items))
	for _, st := range m.items {
		if status == "" || st.Status == status {
			out = append(out, *st)
		}
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Pending.Created.After(out[j].Pending.Created) })
	return out
}

func (m *MemoryApprovals) expireLocked(now time.Time) {
	for _, st := range m.items {
		if st.Status == ApprovalPending && !now.Before(st.ExpiresAt) {
			st.Status = ApprovalExpired
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
