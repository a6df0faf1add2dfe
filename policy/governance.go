package policy

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"time"
	"unsafe"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/schema"
)

// Budget names, as the configuration spells them and decisions and audit
// records name them.
const (
	BudgetActions           = "max-actions"
	BudgetRisk              = "max-risk"
	BudgetErrors            = "max-errors"
	BudgetConsecutiveErrors = "max-consecutive-errors"
	BudgetWall              = "max-wall-seconds"
	BudgetBytesWritten      = "max-bytes-written"
	RepeatFailing           = "repeat-failing"
	RepeatIdentical         = "repeat-identical"
	RateSession             = "rate.session-per-second"
	RateTenant              = "rate.tenant-per-second"
)

// StepGovernance is the name of the governance step.
const StepGovernance = "governance"

// Defaults of SPEC section 3.
const (
	DefaultRepeatFailing   = 3
	DefaultRepeatIdentical = 5
	DefaultIdleTTL         = 24 * time.Hour
)

// DefaultRiskWeights are what one action of each risk class spends of
// max-risk unless configured; a class not listed weighs 1.
var DefaultRiskWeights = map[string]int64{
	string(schema.RiskRead): 1, string(schema.RiskWrite): 5, string(schema.RiskExec): 10, string(schema.RiskNetwork): 10,
}

// Limits are one session's budgets (0: no limit).
type Limits struct {
	MaxActions           int64
	MaxErrors            int64
	MaxConsecutiveErrors int64
	MaxRisk              int64
	// RiskWeights maps a risk class to what one action of it spends of
	// MaxRisk; nil means DefaultRiskWeights, a class not listed weighs 1.
	RiskWeights     map[string]int64
	MaxWall         time.Duration
	MaxBytesWritten int64
	RepeatFailing   int64
	RepeatIdentical int64
	// SessionRate and TenantRate are token buckets in actions per second,
	// each holding at most max(1, rate) tokens (a second's worth).
	SessionRate float64
	TenantRate  float64
}

func (l *Limits) none() bool {
	return l.MaxActions == 0 && l.MaxErrors == 0 && l.MaxConsecutiveErrors == 0 && l.MaxRisk == 0 &&
		l.MaxWall == 0 && l.MaxBytesWritten == 0 && l.RepeatFailing == 0 && l.RepeatIdentical == 0 &&
		l.SessionRate == 0 && l.TenantRate == 0
}

func (l *Limits) weight(r schema.Risk) int64 {
	w := l.RiskWeights
	if w == nil {
		w = DefaultRiskWeights
	}
	if v, ok := w[string(r)]; ok {
		return v
	}
	return 1
}

func (l *Limits) check() error {
	for name, v := range map[string]int64{
		BudgetActions: l.MaxActions, BudgetErrors: l.MaxErrors, BudgetConsecutiveErrors: l.MaxConsecutiveErrors,
		BudgetRisk: l.MaxRisk, BudgetWall: int64(l.MaxWall), BudgetBytesWritten: l.MaxBytesWritten,
		RepeatFailing: l.RepeatFailing, RepeatIdentical: l.RepeatIdentical,
	} {
		if v < 0 {
			return fmt.Errorf("%s is negative", name)
		}
	}
	for class, w := range l.RiskWeights {
		if w < 0 {
			return fmt.Errorf("risk weight of %s is negative", class)
		}
	}
	for name, r := range map[string]float64{RateSession: l.SessionRate, RateTenant: l.TenantRate} {
		if r < 0 || math.IsNaN(r) || math.IsInf(r, 0) {
			return fmt.Errorf("%s must be a non-negative number", name)
		}
	}
	return nil
}

// GovernanceOptions configure a Governor.
type GovernanceOptions struct {
	// Limits apply to every session whose tenant has none of its own.
	Limits Limits
	// Tenants are complete limits per tenant (the configuration merges a
	// tenant's overrides over the global ones).
	Tenants map[string]Limits
	// Store keeps the counters; nil means a new MemoryCounters (owned, and
	// closed, by the Governor).
	Store CounterStore
	// IdleTTL is how long a session's counters outlive its last action;
	// zero means DefaultIdleTTL.
	IdleTTL time.Duration
	// Logger receives the failures to count an outcome; nil discards.
	Logger *slog.Logger
}

// Governor stops runaway sessions: it keeps counters per session
// (the action's tenant and session_id, or its principal and tenant when it
// has no session_id) and refuses an action once a budget is spent, once
// the same action keeps failing or repeating, or while a rate limit holds.
//
// The counters are updated in two places, each atomic in its store (one
// Lua script per call in Redis, so replicas sharing it enforce one budget
// exactly):
//
//   - the "governance" guard step (Governor.Step) checks every limit and,
//     in phase direct or execute, reserves the action: one action, its risk
//     weight and one token of each rate bucket. A preview is checked, not
//     counted: the execute that redeems its token is the action.
//   - the observer (Governor.Observe, called by the dispatcher with every
//     observation) counts the outcome: errors and refusals (consecutive and
//     total), bytes written and read, command time, repeats; and gives back the
//     reservation of an action a later guard step refused (trust_required,
//     for one), since it did not run.
//
// When several halts apply, the first in this order decides (the more
// lasting reason first: a session whose budget is spent is told so rather
// than to retry in a second):
//
//  1. budget_exhausted, naming the budget, in the order max-actions,
//     max-risk, max-errors, max-consecutive-errors, max-wall-seconds,
//     max-bytes-written;
//  2. repeated_action: repeat-failing (this action failed the same way
//     that many times in a row: an error, a non-zero exit or a refusal by
//     its runtime, with the same message and output), then repeat-identical (this action, one
//     that changes or runs something, was issued that many times with no
//     other such action between; reads between change nothing and do not
//     break the run, and reads are not counted);
//  3. rate_limited, naming rate.session-per-second, then
//     rate.tenant-per-second, with the delay after which a retry can
//     succeed (the HTTP API answers 429 with Retry-After).
//
// What counts as what: an action that reached its runtime and came back ok
// (and, for a command, exited 0) is a success and ends every consecutive
// count; status error, or a command that exited non-zero, is an error;
// status blocked (by any guard step or by the runtime's own confinement)
// is a refusal; needs_confirmation is neither. Errors and refusals are
// counted after the fact, so concurrent actions of one session may pass
// max-errors by the number in flight; actions and risk are reserved before
// the action runs and are exact. Bytes written are what a write action's
// payload reports as bytes_written, else the length of the content or
// patch it was given; bytes read are what a read action (risk read)
// brought back: its payload's bytes_read, else the length of its content
// (workspace_read_file) or of its matching lines (workspace_search_text).
// Bytes read are counted, not budgeted.
//
// Limits of 0 are no limit. Counters only grow within a session; an
// operator resets them (Governor.Reset, POST /v1/sessions/{id}/reset).
// A session idle for GovernanceOptions.IdleTTL (default a day) is
// forgotten. A preview the guard refuses is not counted: only the
// dispatcher's observations are.
//
// A Governor is safe for concurrent use.
type Governor struct {
	limits   Limits
	tenants  map[string]*Limits
	store    CounterStore
	ownStore bool
	idleTTL  time.Duration
	hashing  bool // some limits check repeats, which needs the action's hash
	log      *slog.Logger
}

// NewGovernor returns a Governor over opts.
func NewGovernor(opts GovernanceOptions) (*Governor, error) {
	g := &Governor{limits: opts.Limits, tenants: map[string]*Limits{}, store: opts.Store, idleTTL: opts.IdleTTL, log: opts.Logger}
	if err := g.limits.check(); err != nil {
		return nil, fmt.Errorf("governance: %w", err)
	}
	g.hashing = g.limits.RepeatFailing > 0 || g.limits.RepeatIdentical > 0
	for t, l := range opts.Tenants {
		if err := l.check(); err != nil {
			return nil, fmt.Errorf("governance: tenant %q: %w", t, err)
		}
		g.tenants[t] = &l
		g.hashing = g.hashing || l.RepeatFailing > 0 || l.RepeatIdentical > 0
	}
	if g.idleTTL <= 0 {
		g.idleTTL = DefaultIdleTTL
	}
	if g.store == nil {
		g.store, g.ownStore = NewMemoryCounters(), true
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

// Close closes the store if the Governor created it.
func (g *Governor) Close() error {
	if g.ownStore {
		return g.store.Close()
	}
	return nil
}

// Step returns the guard step that checks and reserves. Add it last among
// the validating steps, so that an action a rule refuses or asks about is
// not reserved first.
func (g *Governor) Step() Step { return Step{Name: StepGovernance, Fn: g.decide} }

func (g *Governor) limitsFor(tenant string) *Limits {
	if l, ok := g.tenants[tenant]; ok {
		return l
	}
	return &g.limits
}

// SessionKey names the counters an action counts against: its tenant and
// session, or, without a session, its tenant and principal.
type SessionKey struct {
	Tenant    string
	Session   string
	Principal string
}

// KeyOf returns the key of a's counters when principal asks for it.
func KeyOf(a action.Action, principal string) SessionKey {
	if a.SessionID != "" {
		return SessionKey{Tenant: a.Tenant, Session: a.SessionID}
	}
	return SessionKey{Tenant: a.Tenant, Principal: principal}
}

// norm drops the principal of a session's key: a session is one budget
// whoever acts in it.
func (k SessionKey) norm() SessionKey {
	if k.Session != "" {
		k.Principal = ""
	}
	return k
}

// by names the kind of key, as audit records say it.
func (k SessionKey) by() string {
	if k.Session != "" {
		return "session"
	}
	return "principal"
}

// String is the key as stores spell it: unambiguous whatever the names
// hold ("s:" or "p:", then the tenant's length, the tenant and the name).
func (k SessionKey) String() string {
	kind, name := "p:", k.Principal
	if k.Session != "" {
		kind, name = "s:", k.Session
	}
	return kind + strconv.Itoa(len(k.Tenant)) + ":" + k.Tenant + ":" + name
}

// Admission is what the governance step found and reserved for one
// request; the dispatcher's observer settles it and the audit records carry
// its snapshot. Its methods are safe to call on nil. It counts against the
// key of its request (KeyOf the request's action and principal).
//
// It is needed for every governed action, so it holds only what the
// request does not. The zero Admission is empty room for one: a
// dispatcher may point Request.Governance at a zero Admission it
// allocated together with the request (one allocation per action instead
// of two), and the governance step fills that room instead of allocating.
// Until it is filled, an Admission records nothing (its Snapshot is the
// zero value) and the observer treats the request as one the governance
// step never admitted.
type Admission struct {
	limits    *Limits
	slot      Slot // where the store found the counters, for the observer
	counters  tally
	weight    int64
	sum       ActionSum             // unused (nil action) when no repeat limit applies
	hexBuf    [2 * sha256.Size]byte // the hash in hex, once a snapshot needed it
	bySession bool
	hexed     bool
	changes   bool
	counted   bool
}

// tally is what an admission keeps of the counters a store returned:
// every count, and of the clock only the session's wall time (so that an
// Admission and the request it shares an allocation with fit a smaller
// size class).
type tally struct {
	Actions, Risk, Errors, ConsecutiveErrors, Refusals, ConsecutiveRefusals int64
	BytesWritten, BytesRead, CommandMS, Repeats, FailingRepeats             int64
	WallMS                                                                  int64
}

func (t *tally) set(c *Counters) {
	*t = tally{
		Actions: c.Actions, Risk: c.Risk, Errors: c.Errors, ConsecutiveErrors: c.ConsecutiveErrors,
		Refusals: c.Refusals, ConsecutiveRefusals: c.ConsecutiveRefusals, BytesWritten: c.BytesWritten,
		BytesRead: c.BytesRead, CommandMS: c.CommandMS, Repeats: c.Repeats, FailingRepeats: c.FailingRepeats,
	}
	if c.Start > 0 && c.Now > c.Start {
		t.WallMS = (c.Now - c.Start) / 1000
	}
}

// Snapshot returns the session's counters and remaining budgets as the
// audit records carry them: at the decision, and after the observer
// counted the outcome. Nil gives the zero value, which records nothing.
func (a *Admission) Snapshot() ahp.Governance {
	var s ahp.Governance
	a.SnapshotTo(&s)
	return s
}

// SnapshotTo writes Snapshot into *s (an event's payload) without the
// copies of a returned value.
func (a *Admission) SnapshotTo(s *ahp.Governance) {
	if a.empty() {
		*s = ahp.Governance{}
		return
	}
	c, l := &a.counters, a.limits
	*s = ahp.Governance{
		By: "principal", Counted: a.counted, Actions: c.Actions, Errors: c.Errors,
		ConsecutiveErrors: c.ConsecutiveErrors, Refusals: c.Refusals, ConsecutiveRefusals: c.ConsecutiveRefusals,
		Risk: c.Risk, BytesWritten: c.BytesWritten, BytesRead: c.BytesRead, CommandMS: c.CommandMS,
		Repeats: c.Repeats, FailingRepeats: c.FailingRepeats, WallMS: c.WallMS,
	}
	if a.bySession {
		s.By = "session"
	}
	if hash, ok := a.sum.known(); ok {
		if !a.hexed {
			// Written once and never again (the hash of an Admission does
			// not change once set), so the string may share its bytes:
			// every audit record of the action carries it with no
			// allocation.
			encodeHash(&a.hexBuf, &hash)
			a.hexed = true
		}
		s.ActionHash = unsafe.String(&a.hexBuf[0], len(a.hexBuf))
	}
	// In the order of ahp.Budgets.
	for i, limit := range [...]int64{l.MaxActions, l.MaxRisk, l.MaxErrors, l.MaxConsecutiveErrors, int64(l.MaxWall / time.Second), l.MaxBytesWritten} {
		if limit > 0 {
			used := [...]int64{c.Actions, c.Risk, c.Errors, c.ConsecutiveErrors, c.WallMS / 1000, c.BytesWritten}[i]
			s.Remaining.SetIndex(i, max(limit-used, 0))
		}
	}
}

// hexPairs holds the two lower-case hex digits of every byte value.
var hexPairs = func() (t [256][2]byte) {
	const digits = "0123456789abcdef"
	for i := range t {
		t[i] = [2]byte{digits[i>>4], digits[i&15]}
	}
	return t
}()

// encodeHash writes sum in lower-case hex, as hex.Encode does, a byte pair
// per table lookup.
func encodeHash(dst *[2 * sha256.Size]byte, sum *[sha256.Size]byte) {
	for i, b := range sum {
		p := hexPairs[b]
		dst[2*i], dst[2*i+1] = p[0], p[1]
	}
}

// empty reports whether a is nil or room the governance step has not
// filled.
func (a *Admission) empty() bool { return a == nil || a.limits == nil }

// decide is the governance step.
func (g *Governor) decide(ctx context.Context, req *Request) Decision {
	lim := g.limitsFor(req.Action.Tenant)
	if lim.none() {
		return Decision{}
	}
	adm := g.admission(req, lim)
	count := req.Phase != PhasePreview
	v, c, err := g.store.Admit(ctx, KeyOf(req.Action, req.Principal), AdmitArgs{
		Count: count, Hash: g.sum(adm, req), Weight: adm.weight, Changes: adm.changes, Limits: lim, IdleTTL: g.idleTTL, Slot: &adm.slot,
	})
	if err != nil {
		// Fail closed: a budget nobody can check is not a budget. Nothing
		// was admitted, so the request's room stays empty.
		if req.Governance == adm {
			*adm = Admission{}
		}
		return DenyWith(action.CodeInternal, "governance: the session's counters cannot be read, so no action runs: "+err.Error())
	}
	adm.counters.set(&c)
	adm.counted = count && v.Code == action.CodeNone
	req.Governance = adm
	if v.Code == action.CodeNone {
		return Decision{}
	}
	if v.Code == action.CodeRepeatedAction {
		adm.sum.Sum() // its records name the action that repeated
	}
	return Decision{Outcome: Deny, Code: v.Code, Rule: v.Limit, Message: g.message(req, lim, v, &c), RetryAfter: v.RetryAfter}
}

// admission returns a new admission of req under lim: in the room
// req.Governance holds when it is still empty, else newly allocated (a
// request decided again keeps the admission its records already carry).
func (g *Governor) admission(req *Request, lim *Limits) *Admission {
	adm := req.Governance
	if adm == nil || !adm.empty() {
		adm = new(Admission)
	}
	// adm is zero: new, or room nothing filled (decide empties it again
	// when it fails).
	adm.limits, adm.bySession = lim, req.Action.SessionID != ""
	if req.Schema != nil {
		adm.weight = lim.weight(req.Schema.Risk)
		adm.changes = req.Schema.Risk != schema.RiskRead
	}
	return adm
}

// sum is the hash of req's action, kept in adm and computed when a store
// first asks for it, or nil when no repeat limit applies.
func (g *Governor) sum(adm *Admission, req *Request) *ActionSum {
	if !g.hashing {
		return nil
	}
	if adm.sum.action == nil {
		adm.sum.action = &req.Action
	}
	return &adm.sum
}

func (g *Governor) message(req *Request, lim *Limits, v Verdict, c *Counters) string {
	reset := " in this " + KeyOf(req.Action, req.Principal).by() + "; an operator can reset it (POST /v1/sessions/{id}/reset)"
	switch v.Limit {
	case BudgetActions:
		return fmt.Sprintf("budget %s exhausted: %d of %d actions spent%s", v.Limit, c.Actions, lim.MaxActions, reset)
	case BudgetRisk:
		return fmt.Sprintf("budget %s exhausted: %d of %d risk spent and %s weighs %d%s", v.Limit, c.Risk, lim.MaxRisk, req.Action.Name, lim.weight(req.Schema.Risk), reset)
	case BudgetErrors:
		return fmt.Sprintf("budget %s exhausted: %d errors%s", v.Limit, c.Errors, reset)
	case BudgetConsecutiveErrors:
		return fmt.Sprintf("budget %s exhausted: %d errors in a row%s", v.Limit, c.ConsecutiveErrors, reset)
	case BudgetWall:
		return fmt.Sprintf("budget %s exhausted: the session started %s ago (limit %s)%s", v.Limit,
			time.Duration(c.Now-c.Start)*time.Microsecond/time.Second*time.Second, lim.MaxWall, reset)
	case BudgetBytesWritten:
		return fmt.Sprintf("budget %s exhausted: %d of %d bytes written%s", v.Limit, c.BytesWritten, lim.MaxBytesWritten, reset)
	case RepeatFailing:
		return fmt.Sprintf("repeated action: this %s failed the same way %d times in a row (%s: %d); change something before trying it again",
			req.Action.Name, c.FailingRepeats, v.Limit, lim.RepeatFailing)
	case RepeatIdentical:
		return fmt.Sprintf("repeated action: this %s was issued %d times in a row with nothing else changed (%s: %d)",
			req.Action.Name, c.Repeats, v.Limit, lim.RepeatIdentical)
	case RateSession, RateTenant:
		rate, who := lim.SessionRate, "session"
		if v.Limit == RateTenant {
			rate, who = lim.TenantRate, "tenant "+strconv.Quote(req.Action.Tenant)
		}
		return fmt.Sprintf("rate limited: at most %g actions per second for this %s (%s); retry in %d ms",
			rate, who, v.Limit, max(v.RetryAfter.Milliseconds(), 1))
	}
	return "governance refused the action (" + v.Limit + ")"
}

// Observe counts an action's outcome against its session (the dispatcher
// calls it with every observation, before the post_action event): it
// settles what the governance step reserved, and the post_action record
// then carries the counters after it. A failure to count is logged; the
// observation stands.
func (g *Governor) Observe(ctx context.Context, req *Request, obs *action.Observation) {
	adm := req.Governance
	if adm.empty() {
		// Refused before the governance step (or not governed): the
		// refusal still counts.
		lim := g.limitsFor(req.Action.Tenant)
		if lim.none() {
			return
		}
		adm = g.admission(req, lim)
		req.Governance = adm
	}
	o := Settlement{Counted: adm.counted, Weight: adm.weight, Changes: adm.changes, IdleTTL: g.idleTTL, Slot: &adm.slot}
	o.Ran = obs.Source != action.SourcePolicy && obs.Source != action.SourceHarness && obs.Source != ""
	p := obs.Payload
	switch {
	case obs.Status == action.StatusBlocked:
		o.Refused = true
	case obs.Status == action.StatusError, obs.Status == action.StatusOK && exitCode(p) != 0:
		o.Failed = true
	}
	if o.Ran {
		o.Hash = g.sum(adm, req)
		if o.Failed || o.Refused {
			o.Result = resultHash(obs)
			o.Hash.Sum() // its records name the action whose failure counts
		}
		if obs.Status == action.StatusOK {
			if adm.changes {
				o.BytesWritten = bytesWritten(req.Action.Input, p)
			} else {
				o.BytesRead = bytesRead(p)
			}
		}
		if d, ok := p["duration_ms"].(float64); ok && d > 0 {
			o.CommandMS = int64(d)
		}
	}
	c, err := g.store.Settle(ctx, KeyOf(req.Action, req.Principal), o)
	if err != nil {
		g.log.Error("governance: the outcome was not counted", "action", req.Action.Name, "err", err)
		return
	}
	adm.counters.set(&c)
}

// Reset forgets the counters of key (not its tenant's rate bucket).
func (g *Governor) Reset(ctx context.Context, key SessionKey) error {
	if key.Session == "" && key.Principal == "" {
		return errors.New("governance: reset needs a session or a principal")
	}
	return g.store.Reset(ctx, key.norm())
}

// Counters returns key's counters and remaining budgets as an audit
// record would show them.
func (g *Governor) Counters(ctx context.Context, key SessionKey) (ahp.Governance, error) {
	key = key.norm()
	c, err := g.store.Get(ctx, key)
	if err != nil {
		return ahp.Governance{}, err
	}
	a := &Admission{limits: g.limitsFor(key.Tenant), bySession: key.Session != ""}
	a.counters.set(&c)
	return a.Snapshot(), nil
}

// integer is v as an integer when it is one of the number types
// runtimes report, and whether it was.
func integer(v any) (int64, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case float64:
		return int64(v), true
	}
	return 0, false
}

// number is integer(v), or 0.
func number(v any) int64 {
	n, _ := integer(v)
	return n
}

func exitCode(p map[string]any) int64 { return number(p["exit_code"]) }

// bytesWritten is what a write reports it wrote, else what it was given
// to write.
func bytesWritten(input, p map[string]any) int64 {
	if n, ok := integer(p["bytes_written"]); ok {
		return n
	}
	if s, ok := input["content"].(string); ok {
		return int64(len(s))
	}
	if s, ok := input["patch"].(string); ok {
		return int64(len(s))
	}
	return 0
}

// bytesRead is what a read brought back: its payload's bytes_read when
// it reports one, else the length of its content (a file read) or of its
// matching lines (a search).
func bytesRead(p map[string]any) int64 {
	if n, ok := integer(p["bytes_read"]); ok {
		return n
	}
	if s, ok := p["content"].(string); ok {
		return int64(len(s))
	}
	var n int64
	if ms, ok := p["matches"].([]any); ok {
		for _, m := range ms {
			if mm, ok := m.(map[string]any); ok {
				if s, ok := mm["text"].(string); ok {
					n += int64(len(s))
				}
			}
		}
	}
	return n
}

// resultHash identifies a failing result: its status, code and message and,
// for a command, its exit code and output (not its duration).
func resultHash(obs *action.Observation) [sha256.Size]byte {
	h := sha256.New()
	for _, s := range []string{string(obs.Status), string(obs.Code), obs.Message} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	if obs.Payload != nil {
		h.Write([]byte(strconv.FormatInt(exitCode(obs.Payload), 10)))
		for _, k := range []string{"stdout", "stderr"} {
			s, _ := obs.Payload[k].(string)
			h.Write([]byte{0})
			h.Write([]byte(s))
		}
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
