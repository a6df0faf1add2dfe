package trusted

import (
	"context"
	"sync"
	"time"
)

// MemoryStore is the in-process TokenStore, the default. Tokens live only
// as long as the process and are not shared between replicas: run several
// replicas with RedisStore instead.
//
// Expired records are swept every sweep interval (and never returned after
// their expiry by Consume's caller, which checks ExpiresAt). The zero value
// is not usable; call NewMemoryStore.
type MemoryStore struct {
	mu       sync.Mutex
	recs     map[string]Record
	now      func() time.Time
	onExpire func(n int)

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// NewMemoryStore returns a MemoryStore that sweeps expired records every
// interval (a minute when interval <= 0). Close stops the sweeper.
func NewMemoryStore(interval time.Duration) *MemoryStore {
	if interval <= 0 {
		interval = time.Minute
	}
	s := &MemoryStore{recs: map[string]Record{}, now: time.Now, stop: make(chan struct{}), done: make(chan struct{})}
	go s.sweepEvery(interval)
	return s
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
	for id, r := range s.recs {
		if !now.Before(r.ExpiresAt) {
			delete(s.recs, id)
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

// Put stores rec under id.
func (s *MemoryStore) Put(_ context.Context, id string, rec Record) error {
	s.mu.Lock()
	s.recs[id] = rec
	s.mu.Unlock()
	return nil
}

// Consume removes and returns the record under id if it belongs to
// principal and tenant.
func (s *MemoryStore) Consume(_ context.Context, id, principal, tenant string) (Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[id]
	if !ok || r.Principal != principal || r.Tenant != tenant {
		return Record{}, ErrTokenNotFound
	}
	delete(s.recs, id)
	return r, nil
}

// Ping always succeeds.
func (s *MemoryStore) Ping(context.Context) error { return nil }

// Close stops the sweeper. Records stay readable; Close is idempotent.
func (s *MemoryStore) Close() error {
	s.once.Do(func() { close(s.stop); <-s.done })
	return nil
}
