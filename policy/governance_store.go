package policy

import (
	"context"
	"crypto/sha256"
	"math"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
)

// CounterStore keeps the governance counters of every session. Admit and
// Settle are each atomic for one session and its tenant's rate bucket,
// across every process that shares the store, and apply the rules of the
// Governor's documentation; MemoryCounters and RedisCounters implement
// them, and one table of tests holds both to them.
type CounterStore interface {
	// Admit checks args' limits against key's counters and, when nothing
	// refuses and args.Count is set, reserves one action, its weight and a
	// token of each rate bucket. It returns the counters after that.
	Admit(ctx context.Context, key SessionKey, args AdmitArgs) (Verdict, Counters, error)
	// Settle counts an outcome and returns the counters after it. It
	// counts even when ctx is done (the caller went away after the action
	// ran), within a bounded time of its own.
	Settle(ctx context.Context, key SessionKey, o Settlement) (Counters, error)
	// Get returns key's counters.
	Get(ctx context.Context, key SessionKey) (Counters, error)
	// Reset forgets key's counters.
	Reset(ctx context.Context, key SessionKey) error
	Close() error
}

// AdmitArgs are what Admit checks: the action's hash, risk weight and
// whether it changes or runs something, the session's limits, and whether
// to reserve (phase direct or execute) or only check (preview).
type AdmitArgs struct {
	Count bool
	// Hash is the action's hash, which Admit asks for only when a repeat
	// limit could refuse it (nil: no repeat limit applies).
	Hash    *ActionSum
	Weight  int64
	Changes bool
	Limits  *Limits
	IdleTTL time.Duration
	// Slot, when set, is where Admit may note where it found the
	// session's counters, for Settle of the same action.
	Slot *Slot
}

// A Slot is where a store found one session's counters when it admitted
// an action, so that settling the same action finds them again without a
// second lookup. The Governor keeps one per action. A store that finds
// counters by key alone (RedisCounters) ignores it; MemoryCounters looks
// the session up again when the slot is empty or stale (the session was
// reset, swept or expired since). The zero value is empty.
type Slot struct{ s *memSession }

// Verdict is Admit's answer: CodeNone, or the halt's code, the limit that
// decided (a budget's or repeat's name, or the rate bucket's) and, for a
// rate limit, when a retry can succeed.
type Verdict struct {
	Code       action.Code
	Limit      string
	RetryAfter time.Duration
}

// Settlement is what Settle counts of one action.
type Settlement struct {
	// Counted: Admit reserved the action; Ran: it reached its runtime (an
	// action reserved that did not run gets its reservation back).
	Counted, Ran bool
	Weight       int64
	// Refused: status blocked; Failed: status error, or a command that
	// exited non-zero.
	Refused, Failed bool
	Changes         bool
	// Hash is the action's hash (nil: no repeat limit applies). Repeats
	// are tracked only for an action that has one, and it is asked for
	// only when the outcome can change them: a changing action, a
	// failure or refusal, or any action while a failing streak is open.
	Hash *ActionSum
	// Result identifies a failing result, for repeat-failing.
	Result       [sha256.Size]byte
	BytesWritten int64
	// BytesRead is what a read (a file's content, a search's matching
	// lines) brought back into the session.
	BytesRead int64
	CommandMS int64
	IdleTTL   time.Duration
	// Slot is what Admit noted of the same action (AdmitArgs.Slot), if
	// anything.
	Slot *Slot
}

// Counters are one session's counters. Start and Now are microseconds of
// the store's clock (Start 0: nothing counted yet).
type Counters struct {
	Actions             int64
	Risk                int64
	Errors              int64
	ConsecutiveErrors   int64
	Refusals            int64
	ConsecutiveRefusals int64
	Start, Now          int64
	BytesWritten        int64
	CommandMS           int64
	Repeats             int64
	FailingRepeats      int64
	BytesRead           int64
}

// MemoryCounters is a CounterStore in this process's memory: one budget
// per process. Sessions idle longer than their IdleTTL are swept.
//
// Its clock is the process's monotonic clock, read as microseconds since
// the Unix epoch from the wall time when the store was made: a step of the
// wall clock does not stretch or shrink a session's wall time, its idle
// time or a rate bucket (time a machine spends suspended may not count).
type MemoryCounters struct {
	mu       sync.Mutex
	sessions map[SessionKey]*memSession
	tenants  map[string]*bucket
	now      func() time.Time // SetClock's; nil: epoch and the monotonic clock
	epoch    time.Time        // carries a monotonic reading
	epochUS  int64
	ops      int
	last     *memSession // the session the last call found
}

type memSession struct {
	store                *MemoryCounters
	key                  SessionKey
	c                    Counters
	bucket               bucket
	lastPrint, failPrint Print
	failSig              [sha256.Size]byte
	expires              int64 // µs
	gone                 bool  // no longer in the store's map: a Slot to it is stale
}

// bucket is a token bucket: tokens as of at (µs); a zero at is full.
type bucket struct {
	tokens float64
	at     int64
}

// NewMemoryCounters returns an empty in-memory store.
func NewMemoryCounters() *MemoryCounters {
	epoch := time.Now()
	return &MemoryCounters{sessions: map[SessionKey]*memSession{}, tenants: map[string]*bucket{}, epoch: epoch, epochUS: epoch.UnixMicro()}
}

// clock is the store's time in µs; m.mu is held. One read of the
// monotonic clock costs about half of time.Now, which reads both clocks.
func (m *MemoryCounters) clock() int64 {
	if m.now != nil {
		return m.now().UnixMicro()
	}
	return m.epochUS + int64(time.Since(m.epoch)/time.Microsecond)
}

// SetClock replaces the store's clock (tests of wall time and rates).
func (m *MemoryCounters) SetClock(now func() time.Time) {
	m.mu.Lock()
	m.now = now
	m.mu.Unlock()
}

// sweepEvery is how many calls pass between sweeps of idle sessions.
const sweepEvery = 4096

// session returns key's counters, found through slot when it still
// points at them, and otherwise looked up (and created, or re-created
// when idle too long) and noted in slot. It extends their life by ttl.
func (m *MemoryCounters) session(key SessionKey, slot *Slot, now int64, ttl time.Duration) *memSession {
	if ttl <= 0 {
		ttl = DefaultIdleTTL
	}
	if slot != nil {
		if s := slot.s; s != nil && s.store == m && !s.gone && s.expires >= now && s.key == key {
			s.expires = now + int64(ttl/time.Microsecond)
			return s
		}
	}
	s := m.last // the session of the last call: most calls are one session's
	if s == nil || s.gone || s.expires < now || s.key != key {
		s = m.lookup(key, now)
		m.last = s
	}
	s.expires = now + int64(ttl/time.Microsecond)
	if slot != nil {
		*slot = Slot{s}
	}
	return s
}

func (m *MemoryCounters) lookup(key SessionKey, now int64) *memSession {
	m.ops++
	if m.ops%sweepEvery == 0 {
		for k, s := range m.sessions {
			if s.expires < now {
				s.gone = true
				delete(m.sessions, k)
			}
		}
		for t, b := range m.tenants {
			if b.at > 0 && b.at < now-int64(time.Hour/time.Microsecond) {
				delete(m.tenants, t)
			}
		}
	}
	s := m.sessions[key]
	if s != nil && s.expires < now {
		s.gone = true // idle too long: forgotten, as Redis forgets it
		s = nil
	}
	if s == nil {
		s = &memSession{store: m, key: key}
		m.sessions[key] = s
	}
	return s
}

// Admit implements CounterStore.
func (m *MemoryCounters) Admit(_ context.Context, key SessionKey, args AdmitArgs) (Verdict, Counters, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.session(key, args.Slot, now, args.IdleTTL)
	var tb *bucket
	if args.Limits.TenantRate > 0 {
		if tb = m.tenants[key.Tenant]; tb == nil {
			tb = &bucket{}
			m.tenants[key.Tenant] = tb
		}
	}
	v := s.admit(args, tb, now)
	c := s.c
	c.Now = now
	return v, c, nil
}

// admit is the rule both stores apply (RedisCounters' admitScript is the
// same in Lua).
func (s *memSession) admit(args AdmitArgs, tb *bucket, now int64) Verdict {
	l, c := args.Limits, &s.c
	budget := func(name string) Verdict { return Verdict{Code: action.CodeBudgetExhausted, Limit: name} }
	switch {
	case l.MaxActions > 0 && c.Actions >= l.MaxActions:
		return budget(BudgetActions)
	case l.MaxRisk > 0 && c.Risk+args.Weight > l.MaxRisk:
		return budget(BudgetRisk)
	case l.MaxErrors > 0 && c.Errors >= l.MaxErrors:
		return budget(BudgetErrors)
	case l.MaxConsecutiveErrors > 0 && c.ConsecutiveErrors >= l.MaxConsecutiveErrors:
		return budget(BudgetConsecutiveErrors)
	case l.MaxWall > 0 && c.Start > 0 && now-c.Start >= int64(l.MaxWall/time.Microsecond):
		return budget(BudgetWall)
	case l.MaxBytesWritten > 0 && c.BytesWritten >= l.MaxBytesWritten:
		return budget(BudgetBytesWritten)
	case l.RepeatFailing > 0 && c.FailingRepeats >= l.RepeatFailing && args.Hash.is(&s.failPrint):
		return Verdict{Code: action.CodeRepeatedAction, Limit: RepeatFailing}
	case l.RepeatIdentical > 0 && args.Changes && c.Repeats >= l.RepeatIdentical && args.Hash.is(&s.lastPrint):
		return Verdict{Code: action.CodeRepeatedAction, Limit: RepeatIdentical}
	}
	var st, tt float64
	if l.SessionRate > 0 {
		st = s.bucket.refill(l.SessionRate, now)
		if st < 1 {
			return rateLimited(RateSession, st, l.SessionRate)
		}
	}
	if tb != nil {
		tt = tb.refill(l.TenantRate, now)
		if tt < 1 {
			return rateLimited(RateTenant, tt, l.TenantRate)
		}
	}
	if args.Count {
		if l.SessionRate > 0 {
			s.bucket.tokens--
		}
		if tb != nil {
			tb.tokens--
		}
		c.Actions++
		c.Risk += args.Weight
		if c.Start == 0 {
			c.Start = now
		}
	}
	return Verdict{}
}

// refill brings b up to now at rate and returns its tokens.
func (b *bucket) refill(rate float64, now int64) float64 {
	burst := math.Max(1, rate)
	if b.at == 0 {
		b.tokens = burst
	} else {
		b.tokens = math.Min(burst, b.tokens+float64(now-b.at)*rate/1e6)
	}
	b.at = now
	return b.tokens
}

func rateLimited(limit string, tokens, rate float64) Verdict {
	ms := math.Ceil((1 - tokens) * 1000 / rate)
	return Verdict{Code: action.CodeRateLimited, Limit: limit, RetryAfter: time.Duration(ms) * time.Millisecond}
}

// Settle implements CounterStore.
func (m *MemoryCounters) Settle(_ context.Context, key SessionKey, o Settlement) (Counters, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.session(key, o.Slot, now, o.IdleTTL)
	s.settle(o)
	c := s.c
	c.Now = now
	return c, nil
}

// settle is the rule both stores apply (settleScript in Lua).
func (s *memSession) settle(o Settlement) {
	c := &s.c
	if o.Counted && !o.Ran {
		c.Actions = max(c.Actions-1, 0)
		c.Risk = max(c.Risk-o.Weight, 0)
	}
	switch {
	case o.Refused:
		c.Refusals++
		c.ConsecutiveRefusals++
	case o.Failed:
		c.Errors++
		c.ConsecutiveErrors++
	case o.Ran:
		c.ConsecutiveErrors, c.ConsecutiveRefusals = 0, 0
	}
	if !o.Ran {
		return
	}
	c.BytesWritten += o.BytesWritten
	c.BytesRead += o.BytesRead
	c.CommandMS += o.CommandMS
	if !o.Changes && !o.Failed && !o.Refused && c.FailingRepeats == 0 {
		return // no repeat count can change: the action need not be hashed
	}
	p, ok := o.Hash.Print()
	if !ok {
		return
	}
	if o.Changes {
		if c.Repeats > 0 && s.lastPrint == p {
			c.Repeats++
		} else {
			s.lastPrint, c.Repeats = p, 1
		}
	}
	switch {
	case o.Failed || o.Refused:
		if c.FailingRepeats > 0 && s.failPrint == p && s.failSig == o.Result {
			c.FailingRepeats++
		} else {
			s.failPrint, s.failSig, c.FailingRepeats = p, o.Result, 1
		}
	case s.failPrint == p:
		c.FailingRepeats = 0
	}
}

// Get implements CounterStore.
func (m *MemoryCounters) Get(_ context.Context, key SessionKey) (Counters, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	c := Counters{}
	if s := m.sessions[key]; s != nil && s.expires >= now {
		c = s.c
	}
	c.Now = now
	return c, nil
}

// Reset implements CounterStore.
func (m *MemoryCounters) Reset(_ context.Context, key SessionKey) error {
	m.mu.Lock()
	if s := m.sessions[key]; s != nil {
		s.gone = true
		delete(m.sessions, key)
	}
	m.mu.Unlock()
	return nil
}

// Close implements CounterStore; it does nothing.
func (m *MemoryCounters) Close() error { return nil }
