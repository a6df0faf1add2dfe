package trusted

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// MemoryStore is the in-process TokenStore, the default. Tokens live only
// as long as the process and are not shared between replicas: run several
// replicas with RedisStore instead.
//
// Each principal may hold at most the live tokens its TokenLimits allow
// (the defaults unless SetLimits says otherwise); Put refuses the record
// that would pass a cap. Expired records never count: before Put refuses,
// it drops the principal's expired records and counts again, and every
// record is swept every sweep interval (Consume's caller checks ExpiresAt
// too). The zero
// value is not usable; call NewMemoryStore.
type MemoryStore struct {
	mu       sync.Mutex
	recs     map[string]*memEntry
	held     map[string]*principalTokens // by principal; absent when it holds none
	limits   TokenLimits
	now      func() time.Time
	onExpire func(n int)

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// memEntry is one stored record, with its size and its place in its
// principal's heap.
type memEntry struct {
	id   string
	rec  Record
	size int64
	idx  int
}

// principalTokens is one principal's records, a min-heap by expiry (so
// that dropping the expired ones, and saying when the next one expires,
// costs a logarithm, not a scan), and the sum of their sizes.
type principalTokens struct {
	heap  []*memEntry
	bytes int64
}

func (p *principalTokens) Len() int { return len(p.heap) }
func (p *principalTokens) Less(i, j int) bool {
	return p.heap[i].rec.ExpiresAt.Before(p.heap[j].rec.ExpiresAt)
}
func (p *principalTokens) Swap(i, j int) {
	p.heap[i], p.heap[j] = p.heap[j], p.heap[i]
	p.heap[i].idx, p.heap[j].idx = i, j
}
func (p *principalTokens) Push(x any) {
	e := x.(*memEntry)
	e.idx = len(p.heap)
	p.heap = append(p.heap, e)
}
func (p *principalTokens) Pop() any {
	e := p.heap[len(p.heap)-1]
	p.heap[len(p.heap)-1] = nil
	p.heap = p.heap[:len(p.heap)-1]
	return e
}

// NewMemoryStore returns a MemoryStore that sweeps expired records every
// interval (a minute when interval <= 0), with the default TokenLimits.
// Close stops the sweeper.
func NewMemoryStore(interval time.Duration) *MemoryStore {
	if interval <= 0 {
		interval = time.Minute
	}
	s := &MemoryStore{
		recs: map[string]*memEntry{}, held: map[string]*principalTokens{}, now: time.Now,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go s.sweepEvery(interval)
	return s
}

// SetLimits sets the caps per principal. Call it before the store is
// shared; records already held are not re-checked.
func (s *MemoryStore) SetLimits(l TokenLimits) {
	s.mu.Lock()
	s.limits = l
	s.mu.Unlock()
}

// Held returns the number of records principal holds and the sum of
// their sizes, counting expired records not yet dropped.
func (s *MemoryStore) Held(principal string) (tokens int, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.held[principal]; p != nil {
		return len(p.heap), p.bytes
	}
	return 0, 0
}

func (s *MemoryStore) sweepEvery(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

// Sweep removes every expired record now and returns how many it removed.
func (s *MemoryStore) Sweep() int {
	now := s.now()
	s.mu.Lock()
	n := 0
	for _, e := range s.recs {
		if !now.Before(e.rec.ExpiresAt) {
			s.removeLocked(e)
			n++
		}
	}
	f := s.onExpire
	s.mu.Unlock()
	if f != nil && n > 0 {
		f(n)
	}
	return n
}

// removeLocked drops e from the records and from its principal's heap.
func (s *MemoryStore) removeLocked(e *memEntry) {
	delete(s.recs, e.id)
	p := s.held[e.rec.Principal]
	heap.Remove(p, e.idx)
	p.bytes -= e.size
	if len(p.heap) == 0 {
		delete(s.held, e.rec.Principal)
	}
}

// OnExpire sets a function told how many unredeemed tokens each sweep
// removed (for metrics). Call it before the store is shared.
func (s *MemoryStore) OnExpire(f func(n int)) {
	s.mu.Lock()
	s.onExpire = f
	s.mu.Unlock()
}

// Len returns the number of records held, expired or not.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

// Put stores rec under id, unless that would take rec.Principal past a
// cap of its TokenLimits: then it stores nothing and returns an
// *action.Error with code rate_limited (too_large for a record larger than
// the byte cap by itself) that wraps a *LimitError and matches
// ErrTokenLimit. The check and the insert are one critical section, so
// concurrent Puts never pass a cap together.
func (s *MemoryStore) Put(_ context.Context, id string, rec Record) error {
	e := &memEntry{id: id, rec: rec, size: recordSize(rec)}
	now := s.now()
	s.mu.Lock()
	if old := s.recs[id]; old != nil {
		s.removeLocked(old)
	}
	maxTokens, maxBytes := s.limits.caps()
	var count, bytes int64
	p := s.held[rec.Principal]
	if p != nil {
		count, bytes = int64(len(p.heap)), p.bytes
	}
	le := overCap(rec.Principal, count, bytes, e.size, maxTokens, maxBytes)
	expired := 0
	var retry time.Duration
	if le != nil && p != nil {
		// Expired records never count: drop this principal's, then decide.
		for len(p.heap) > 0 && !now.Before(p.heap[0].rec.ExpiresAt) {
			s.removeLocked(p.heap[0])
			expired++
		}
		count, bytes = int64(len(p.heap)), p.bytes
		if count > 0 {
			retry = p.heap[0].rec.ExpiresAt.Sub(now)
		}
		le = overCap(rec.Principal, count, bytes, e.size, maxTokens, maxBytes)
	}
	if le == nil {
		s.recs[id] = e
		p := s.held[rec.Principal]
		if p == nil {
			p = &principalTokens{}
			s.held[rec.Principal] = p
		}
		heap.Push(p, e)
		p.bytes += e.size
	}
	f := s.onExpire
	s.mu.Unlock()
	if f != nil && expired > 0 {
		f(expired)
	}
	if le != nil {
		if le.Size <= le.Max || le.Kind == LimitTokens {
			le.RetryAfter = retry
		}
		return limitError(le)
	}
	return nil
}

// Consume removes and returns the record under id if it belongs to
// principal and tenant.
func (s *MemoryStore) Consume(_ context.Context, id, principal, tenant string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.recs[id]
	if e == nil || e.rec.Principal != principal || e.rec.Tenant != tenant {
		return Record{}, ErrTokenNotFound
	}
	s.removeLocked(e)
	return e.rec, nil
}

// Ping always succeeds.
func (s *MemoryStore) Ping(context.Context) error { return nil }

// Close stops the sweeper. Records stay readable; Close is idempotent.
func (s *MemoryStore) Close() error {
	s.once.Do(func() { close(s.stop); <-s.done })
	return nil
}
