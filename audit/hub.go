package audit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Hub defaults.
const (
	// DefaultHubBuffer is HubOptions.Buffer when it is zero: how many
	// records a subscriber may fall behind before it is dropped.
	DefaultHubBuffer = 256
	// DefaultHubSubscribers is HubOptions.MaxSubscribers when it is zero.
	DefaultHubSubscribers = 64
)

// ErrHubFull is returned by Subscribe when the hub has its maximum of
// subscribers; ErrHubClosed after Close.
var (
	ErrHubFull   = errors.New("audit: too many live event subscribers")
	ErrHubClosed = errors.New("audit: live events are closed")
)

// HubOptions bound a Hub.
type HubOptions struct {
	// Buffer is each subscriber's buffer, in records (DefaultHubBuffer
	// when 0).
	Buffer int
	// MaxSubscribers bounds the subscribers at once
	// (DefaultHubSubscribers when 0).
	MaxSubscribers int
}

// Hub fans the records appended to an audit log out to live subscribers
// (the server-sent events of GET /v1/events). Publish never blocks: each
// subscriber has a bounded buffer, and one whose buffer is full when a
// record arrives is dropped (its channel closed, Dropped counts it)
// rather than the writer of the log slowed. A subscriber thus sees every
// record published while it is subscribed, in the order published, or
// learns, by its channel closing with Subscription.Dropped true, that it
// fell behind.
//
// A hub sees what this process appends (see WithHub and Publishing), not
// what other processes append to a shared file or table.
type Hub struct {
	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	closed  bool
	buffer  int
	max     int
	dropped atomic.Uint64
}

// NewHub returns a hub with the given bounds.
func NewHub(o HubOptions) *Hub {
	if o.Buffer <= 0 {
		o.Buffer = DefaultHubBuffer
	}
	if o.MaxSubscribers <= 0 {
		o.MaxSubscribers = DefaultHubSubscribers
	}
	return &Hub{subs: map[*Subscription]struct{}{}, buffer: o.Buffer, max: o.MaxSubscribers}
}

// Subscription is one subscriber's view of a Hub.
type Subscription struct {
	// C delivers the records in the order they were published. It is
	// closed when the subscription ends: by Close, by the hub's Close,
	// or because the subscriber fell behind (Dropped).
	C <-chan Record

	ch      chan Record
	h       *Hub
	dropped atomic.Bool
}

// Subscribe adds a subscriber. It fails with ErrHubFull when the hub has
// its maximum of subscribers and with ErrHubClosed after Close.
func (h *Hub) Subscribe() (*Subscription, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, ErrHubClosed
	case len(h.subs) >= h.max:
		return nil, ErrHubFull
	}
	ch := make(chan Record, h.buffer)
	s := &Subscription{C: ch, ch: ch, h: h}
	h.subs[s] = struct{}{}
	return s, nil
}

// Close ends the subscription and closes C; calling it again, or after
// the subscription was dropped, does nothing.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if _, ok := s.h.subs[s]; ok {
		delete(s.h.subs, s)
		close(s.ch)
	}
}

// Dropped reports whether the hub ended the subscription because the
// subscriber fell behind.
func (s *Subscription) Dropped() bool { return s.dropped.Load() }

// Publish hands rec to every subscriber, without waiting for any: a
// subscriber whose buffer is full is dropped. Safe for concurrent use;
// records published by one goroutine arrive in that order.
func (h *Hub) Publish(rec Record) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		select {
		case s.ch <- rec:
		default:
			s.dropped.Store(true)
			delete(h.subs, s)
			close(s.ch)
			h.dropped.Add(1)
		}
	}
}

// Dropped returns how many subscribers were dropped for falling behind.
func (h *Hub) Dropped() uint64 { return h.dropped.Load() }

// Subscribers returns how many subscribers there are now.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// Close ends every subscription (their channels close, not as dropped)
// and refuses new ones; publishing after Close does nothing. A server
// calls it when it shuts down, so that streams end.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	for s := range h.subs {
		delete(h.subs, s)
		close(s.ch)
	}
}

// WithHub makes a log (OpenJSONL, OpenPostgres, Open) publish every
// record it appends to h, once it is written, in the order of the chain.
// A durable append's record is published before its fsync returns, so a
// live reader may see a record that a crash then loses.
func WithHub(h *Hub) Option { return func(c *config) { c.hub = h } }

// Publishing returns an Appender that appends to a and publishes each
// record it appended to h: for a log opened without WithHub. Records
// appended to a by other callers are not published, and records of
// concurrent appends may be published out of seq order (WithHub keeps
// the chain's order).
func Publishing(a Appender, h *Hub) Appender { return publishing{a, h} }

type publishing struct {
	a Appender
	h *Hub
}

func (p publishing) Append(ctx context.Context, event any, durable bool) (Record, error) {
	rec, err := p.a.Append(ctx, event, durable)
	if err == nil {
		p.h.Publish(rec)
	}
	return rec, err
}
