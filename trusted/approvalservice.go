package trusted

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/runtime"
)

// PermApprove allows deciding approvals (SPEC section 5).
const PermApprove Permission = "agent:approve"

// Bounds of the approval service.
const (
	// MaxApprovalReasonBytes bounds a decision's reason (invalid_input,
	// HTTP 400, beyond).
	MaxApprovalReasonBytes = 1024
	// MaxApprovalWait bounds one long poll of GET /v1/approvals/{id}.
	MaxApprovalWait = 60 * time.Second
	// approvalPoll is how often a waiter looks at the store for a decision
	// made on another replica (a decision made here wakes it at once).
	approvalPoll = 250 * time.Millisecond
)

// Decision methods: how a person decided.
const (
	MethodAPI     = "api"
	MethodConsole = "console"
	MethodMCP     = "mcp"
)

// ApprovalView is an approval as the API, the console and the library
// show it. Input is the action's input as the sanitizer left it (secrets
// are markers); Preview is what the person decides on.
type ApprovalView struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	Action     string          `json:"action"`
	ActionID   string          `json:"action_id,omitempty"`
	Input      map[string]any  `json:"input,omitempty"`
	SessionID  string          `json:"session_id,omitempty"`
	TaskID     string          `json:"task_id,omitempty"`
	Principal  string          `json:"principal"`
	Tenant     string          `json:"tenant,omitempty"`
	ActionHash string          `json:"action_hash"`
	Preview    map[string]any  `json:"preview,omitempty"`
	Decision   action.Decision `json:"decision"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	DecidedAt  *time.Time      `json:"decided_at,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Method     string          `json:"method,omitempty"`
	// Code is what the requester's action answers now: approval_required
	// while pending, approval_denied or approval_expired; empty once
	// approved.
	Code action.Code `json:"code,omitempty"`
	// Claimed: the approved action was handed out to run (its token was
	// given to the requester, or AwaitApproval ran it).
	Claimed bool `json:"claimed,omitempty"`
	// Token is set once, in the answer to the requester's poll that
	// claimed the approved action: a one-time token (POST
	// /v1/actions/execute/{token}) that runs exactly the approved plan.
	Token          string     `json:"token,omitempty"`
	TokenExpiresAt *time.Time `json:"token_expires_at,omitempty"`
}

// ApprovalDecision is a person's answer to an approval: Approve (with
// Scope "once", the default, or "session") or deny, with an optional
// Reason (at most MaxApprovalReasonBytes), made through Method ("api",
// the default, "console" or "mcp").
type ApprovalDecision struct {
	Approve bool
	Scope   string
	Reason  string
	Method  string
}

func viewOf(st StoredApproval) ApprovalView {
	p := st.Pending
	v := ApprovalView{
		ID: st.ID, Status: st.Status, Action: p.Action.Name, ActionID: p.ActionID, SessionID: p.Action.SessionID,
		TaskID: p.Action.TaskID, Principal: p.Principal, Tenant: st.Tenant(), ActionHash: p.ActionHash,
		Preview: p.Preview, Decision: p.Decision, CreatedAt: p.Created, ExpiresAt: st.ExpiresAt,
		DecidedBy: st.DecidedBy, Scope: st.Scope, Reason: st.Reason, Method: st.Method, Claimed: st.Claimed,
	}
	switch st.Status {
	case ApprovalPending:
		v.Code = action.CodeApprovalRequired
	case ApprovalDenied:
		v.Code = action.CodeApprovalDenied
	case ApprovalExpired:
		v.Code = action.CodeApprovalExpired
	}
	if m, ok := p.Input.(map[string]any); ok {
		v.Input = m
	}
	if !st.DecidedAt.IsZero() {
		t := st.DecidedAt
		v.DecidedAt = &t
	}
	return v
}

// broadcast wakes every waiter at once: wait returns a channel closed at
// the next wake.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) wake() {
	b.mu.Lock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
	b.mu.Unlock()
}

func (s *Service) approvalStore() (ApprovalStore, error) {
	if s.approvals == nil {
		return nil, action.Errorf(action.CodeNotFound, "no approvals store is configured")
	}
	return s.approvals, nil
}

// current returns the approval id, expiring it first (with its audit
// record) when it is pending past its expiry.
func (s *Service) current(ctx context.Context, id string) (StoredApproval, error) {
	store, err := s.approvalStore()
	if err != nil {
		return StoredApproval{}, err
	}
	st, err := store.Get(ctx, id)
	if err != nil {
		return StoredApproval{}, storeError(err)
	}
	if st.Status == ApprovalPending && !s.now().Before(st.ExpiresAt) {
		return s.expire(ctx, st)
	}
	return st, nil
}

// expire moves st to expired, once across replicas; whoever does records
// it.
func (s *Service) expire(ctx context.Context, st StoredApproval) (StoredApproval, error) {
	got, err := s.approvals.Decide(ctx, st.ID, StoreDecision{Status: ApprovalExpired, At: s.now()})
	switch {
	case errors.Is(err, ErrApprovalExpired):
		s.recordApproval(ctx, ApprovalExpired, got)
		s.decided.wake()
		return got, nil
	case errors.Is(err, ErrApprovalDecided), errors.Is(err, errNotExpired):
		return got, nil
	case err != nil:
		return StoredApproval{}, storeError(err)
	}
	return got, nil
}

// storeError gives a store's failure a code (internal when it has none).
func storeError(err error) error {
	var ae *action.Error
	if errors.As(err, &ae) {
		return err
	}
	return &action.Error{Code: action.CodeInternal, Message: "approvals store unavailable", Err: err}
}

// ListApprovals returns the approvals with status (pending, approved,
// denied, expired; "" for all), newest first. Pending approvals past
// their expiry are expired (and recorded) first.
func (s *Service) ListApprovals(ctx context.Context, status string) ([]ApprovalView, error) {
	switch status {
	case "", ApprovalPending, ApprovalApproved, ApprovalDenied, ApprovalExpired:
	default:
		return nil, action.Errorf(action.CodeInvalidInput, "status: pending, approved, denied or expired")
	}
	store, err := s.approvalStore()
	if err != nil {
		return nil, err
	}
	list, err := store.List(ctx, "")
	if err != nil {
		return nil, storeError(err)
	}
	out := make([]ApprovalView, 0, len(list))
	now := s.now()
	for _, st := range list {
		if st.Status == ApprovalPending && !now.Before(st.ExpiresAt) {
			if st, err = s.expire(ctx, st); err != nil {
				return nil, err
			}
		}
		if status == "" || st.Status == status {
			out = append(out, viewOf(st))
		}
	}
	return out, nil
}

// GetApproval returns the approval id; not_found when there is none.
func (s *Service) GetApproval(ctx context.Context, id string) (ApprovalView, error) {
	st, err := s.current(ctx, id)
	if err != nil {
		return ApprovalView{}, err
	}
	return viewOf(st), nil
}

// ExpireApprovals expires (and records) every pending approval past its
// expiry and returns how many it expired. harness serve calls it now and
// then, so that an expiry is recorded even when nobody looks.
func (s *Service) ExpireApprovals(ctx context.Context) (int, error) {
	store, err := s.approvalStore()
	if err != nil {
		return 0, err
	}
	list, err := store.List(ctx, ApprovalPending)
	if err != nil {
		return 0, storeError(err)
	}
	n := 0
	for _, st := range list {
		if s.now().Before(st.ExpiresAt) {
			continue
		}
		got, err := s.expire(ctx, st)
		if err != nil {
			return n, err
		}
		if got.Status == ApprovalExpired {
			n++
		}
	}
	return n, nil
}

// DecideApproval approves or denies the pending approval id for approver.
// It refuses, changing nothing: a reason longer than
// MaxApprovalReasonBytes, a scope other than once or session (a denial
// has none; session needs the action to have a session) or an unknown
// method (invalid_input); an unknown approval or one of another tenant
// than a tenant-bound approver's (not_found); the requester's own
// approval unless AllowSelfApproval (CodeSelfApproval); an approval
// already decided (ErrApprovalDecided, already_decided) or expired
// (approval_expired). Of concurrent decisions, across replicas, exactly
// one is made. Every decision (and an expiry found here) is an audit
// record naming the approver, scope, method and action hash.
func (s *Service) DecideApproval(ctx context.Context, id string, approver Principal, d ApprovalDecision) (ApprovalView, error) {
	if len(d.Reason) > MaxApprovalReasonBytes {
		return ApprovalView{}, action.Errorf(action.CodeInvalidInput, "reason: at most %d bytes", MaxApprovalReasonBytes)
	}
	switch {
	case !d.Approve && d.Scope != "":
		return ApprovalView{}, action.Errorf(action.CodeInvalidInput, "a denial has no scope")
	case d.Approve && d.Scope == "":
		d.Scope = ScopeOnce
	case d.Approve && d.Scope != ScopeOnce && d.Scope != ScopeSession:
		return ApprovalView{}, action.Errorf(action.CodeInvalidInput, `scope: "once" or "session"`)
	}
	switch d.Method {
	case "":
		d.Method = MethodAPI
	case MethodAPI, MethodConsole, MethodMCP:
	default:
		return ApprovalView{}, action.Errorf(action.CodeInvalidInput, "method: api, console or mcp")
	}
	if approver.Name == "" {
		return ApprovalView{}, action.Errorf(action.CodeInvalidInput, "the approver has no name")
	}
	st, err := s.current(ctx, id)
	if err != nil {
		return ApprovalView{}, err
	}
	if approver.Tenant != "" && approver.Tenant != st.Tenant() {
		return ApprovalView{}, ErrApprovalNotFound
	}
	if st.Status == ApprovalExpired {
		return viewOf(st), ErrApprovalExpired
	}
	if st.Status != ApprovalPending {
		return viewOf(st), ErrApprovalDecided
	}
	if approver.Name == st.Pending.Principal && !s.allowSelf {
		return ApprovalView{}, action.Errorf(CodeSelfApproval, "principal %s may not decide its own request", approver.Name)
	}
	if d.Scope == ScopeSession && st.Pending.Action.SessionID == "" {
		return ApprovalView{}, action.Errorf(action.CodeInvalidInput, "the action has no session_id: approve it once")
	}
	sd := StoreDecision{Status: ApprovalDenied, DecidedBy: approver.Name, Scope: d.Scope, Reason: d.Reason, Method: d.Method, At: s.now()}
	if d.Approve {
		sd.Status = ApprovalApproved
	}
	got, err := s.approvals.Decide(ctx, id, sd)
	switch {
	case errors.Is(err, ErrApprovalExpired):
		s.recordApproval(ctx, ApprovalExpired, got)
		s.decided.wake()
		return viewOf(got), err
	case err != nil:
		if errors.Is(err, ErrApprovalDecided) || errors.Is(err, ErrApprovalNotFound) {
			return viewOf(got), err
		}
		return ApprovalView{}, storeError(err)
	}
	s.recordApproval(ctx, got.Status, got)
	s.decided.wake()
	return viewOf(got), nil
}

// requester reports whether p asked for st.
func requester(p Principal, st StoredApproval) bool {
	return isRequester(p, st.Pending.Principal, st.Tenant())
}

// isRequester reports whether p is the principal (of the tenant) that
// asked.
func isRequester(p Principal, principal, tenant string) bool {
	return p.Name != "" && p.Name == principal && (p.Tenant == "" || p.Tenant == tenant)
}

// WaitApproval returns the approval id once it is decided or expired, or
// when wait has passed (pending then), or ctx is done (its error).
func (s *Service) WaitApproval(ctx context.Context, id string, wait time.Duration) (ApprovalView, error) {
	st, err := s.waitDecided(ctx, id, wait)
	if err != nil {
		return ApprovalView{}, err
	}
	return viewOf(st), nil
}

func (s *Service) waitDecided(ctx context.Context, id string, wait time.Duration) (StoredApproval, error) {
	var deadline <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(approvalPoll)
	defer tick.Stop()
	for {
		woken := s.decided.wait() // before the read: no decision is missed
		st, err := s.current(ctx, id)
		if err != nil || st.Status != ApprovalPending || wait <= 0 {
			return st, err
		}
		select {
		case <-woken:
		case <-tick.C:
		case <-deadline:
			return s.current(ctx, id)
		case <-ctx.Done():
			return StoredApproval{}, &action.Error{Code: ctxErrCode(ctx.Err()), Message: "stopped waiting for the approval", Err: ctx.Err()}
		}
	}
}

func ctxErrCode(err error) action.Code {
	if errors.Is(err, context.Canceled) {
		return action.CodeCanceled
	}
	return action.CodeTimeout
}

// ClaimApprovalToken hands the requester p of the approved approval id a
// one-time token that runs exactly the approved plan (its stored
// preconditions: a file changed since answers stale_preview at execute).
// The token is handed out once: a second claim answers already_decided.
// Another principal gets not_found; an approval that is not approved
// answers already_decided with its view.
func (s *Service) ClaimApprovalToken(ctx context.Context, p Principal, id string) (ApprovalView, error) {
	st, err := s.current(ctx, id)
	if err != nil {
		return ApprovalView{}, err
	}
	if !requester(p, st) {
		return ApprovalView{}, ErrApprovalNotFound
	}
	if st.Status != ApprovalApproved {
		return viewOf(st), ErrApprovalDecided
	}
	if st.Claimed {
		return viewOf(st), ErrApprovalClaimed
	}
	// The claim comes first, so that of concurrent polls (on any replica)
	// one mints; a log or store failure after it leaves the approval
	// claimed with no token (approve a new request).
	token, tid, err := NewToken()
	if err != nil {
		return ApprovalView{}, &action.Error{Code: action.CodeInternal, Message: "cannot mint a token", Err: err}
	}
	rec := s.approvedRecord(p, st)
	got, err := s.approvals.Claim(ctx, id)
	if err != nil {
		if errors.Is(err, ErrApprovalClaimed) || errors.Is(err, ErrApprovalDecided) {
			return viewOf(got), err
		}
		return ApprovalView{}, storeError(err)
	}
	if err := s.record(ctx, TokenMinted, tid, rec, ""); err != nil {
		return ApprovalView{}, &action.Error{Code: action.CodeInternal, Message: "the audit log cannot record the token, so none is minted", Err: err}
	}
	if err := s.store.Put(ctx, tid, rec); err != nil {
		return ApprovalView{}, &action.Error{Code: action.CodeInternal, Message: "cannot store the token", Err: err}
	}
	s.events(TokenMinted)
	v := viewOf(got)
	v.Token = token
	exp := rec.ExpiresAt
	v.TokenExpiresAt = &exp
	return v, nil
}

// approvedRecord is the token record of an approved approval for p: the
// stored action, hash and preconditions.
func (s *Service) approvedRecord(p Principal, st StoredApproval) Record {
	now := s.now()
	a := st.Pending.Action
	a.ID, a.Trusted = "", false
	return Record{
		Action: a, ActionHash: st.Pending.ActionHash, Principal: p.Name, Tenant: p.Tenant,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(s.ttl).UTC(), Files: st.Pending.Preconditions, ApprovalID: st.ID,
	}
}

// AwaitApproval waits, as long as ctx allows, for a person to decide the
// approval id that p requested, and then runs exactly the approved plan
// (as a redeemed token would: stale files answer stale_preview and run
// nothing). A denial answers an observation with code approval_denied, an
// expiry approval_expired; nothing runs then. An approval another
// principal requested is not_found; one already handed out to run
// answers already_decided. When ctx ends first, the error carries
// canceled or timeout and the approval stays as it is.
func (s *Service) AwaitApproval(ctx context.Context, p Principal, id string) (action.Observation, error) {
	st, err := s.current(ctx, id)
	if err != nil {
		return action.Observation{}, err
	}
	if !requester(p, st) {
		return action.Observation{}, ErrApprovalNotFound
	}
	for st.Status == ApprovalPending {
		if st, err = s.waitDecided(ctx, id, MaxApprovalWait); err != nil {
			return action.Observation{}, err
		}
	}
	refused := func(code action.Code, msg string) action.Observation {
		return action.Observation{
			ActionID: st.Pending.ActionID, Action: st.Pending.Action.Name, Source: action.SourcePolicy,
			Status: code.Status(), Code: code, Message: msg, Decision: &st.Pending.Decision,
		}
	}
	switch st.Status {
	case ApprovalDenied:
		msg := "denied by " + st.DecidedBy
		if st.Reason != "" {
			msg += ": " + st.Reason
		}
		return refused(action.CodeApprovalDenied, msg), nil
	case ApprovalExpired:
		return refused(action.CodeApprovalExpired, "nobody decided before the approval expired"), nil
	}
	rec := s.approvedRecord(p, st)
	if _, err := s.approvals.Claim(ctx, id); err != nil {
		return action.Observation{}, storeError(err)
	}
	_, tid, err := NewToken() // names the run in the audit log, as a token would
	if err != nil {
		return action.Observation{}, &action.Error{Code: action.CodeInternal, Message: "cannot name the run", Err: err}
	}
	if err := s.record(ctx, TokenMinted, tid, rec, ""); err != nil {
		return action.Observation{}, &action.Error{Code: action.CodeInternal, Message: "the audit log cannot record the run, so it does not run", Err: err}
	}
	s.events(TokenMinted)
	return s.run(ctx, p, tid, rec)
}

// ApprovalRecord is the audit record of an approval event: requested,
// approved, denied or expired. It names the requester (Principal), the
// approver, scope, reason and method of a decision, the action by name
// and canonical hash, and the action_id of the observation that reported
// the wait (the action's own records carry the approval's id).
type ApprovalRecord struct {
	Kind       string    `json:"kind"` // always "approval"
	Event      string    `json:"event"`
	ApprovalID string    `json:"approval_id"`
	ActionID   string    `json:"action_id,omitempty"`
	Action     string    `json:"action"`
	ActionHash string    `json:"action_hash"`
	Principal  string    `json:"principal"`
	Tenant     string    `json:"tenant,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	TaskID     string    `json:"task_id,omitempty"`
	Approver   string    `json:"approver,omitempty"`
	Scope      string    `json:"scope,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Method     string    `json:"method,omitempty"`
	Rule       string    `json:"rule,omitempty"`
	Time       time.Time `json:"time"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// ApprovalRequested is the event of a new approval's record.
const ApprovalRequested = "requested"

func approvalRecord(event string, st StoredApproval, at time.Time) ApprovalRecord {
	p := st.Pending
	return ApprovalRecord{
		Kind: "approval", Event: event, ApprovalID: st.ID, ActionID: p.ActionID, Action: p.Action.Name,
		ActionHash: p.ActionHash, Principal: p.Principal, Tenant: st.Tenant(), SessionID: p.Action.SessionID,
		TaskID: p.Action.TaskID, Approver: st.DecidedBy, Scope: st.Scope, Reason: st.Reason, Method: st.Method,
		Rule: p.Decision.Rule, Time: at.UTC(), ExpiresAt: st.ExpiresAt,
	}
}

// recordApproval writes a decision's or an expiry's record (durably: it
// says who let an action run). The decision is made by then: a failure is
// logged.
func (s *Service) recordApproval(ctx context.Context, event string, st StoredApproval) {
	if s.audit == nil {
		return
	}
	at := st.DecidedAt
	if at.IsZero() {
		at = s.now()
	}
	if _, err := s.audit.Append(context.WithoutCancel(ctx), approvalRecord(event, st, at), true); err != nil {
		s.log.Error("trusted: approval audit record failed", "event", event, "approval", st.ID, "err", err)
	}
}

// AuditedApprovals wraps store so that every approval requested through
// it is first an audit record (event requested); a request whose record
// cannot be written fails (the action then waits for nobody). Decisions
// and expiries are recorded by the Service.
func AuditedApprovals(store ApprovalStore, log audit.Appender) ApprovalStore {
	if log == nil {
		return store
	}
	return &auditedApprovals{ApprovalStore: store, log: log}
}

type auditedApprovals struct {
	ApprovalStore
	log audit.Appender
}

func (a *auditedApprovals) Request(ctx context.Context, p runtime.PendingApproval) (action.Approval, error) {
	ap, err := a.ApprovalStore.Request(ctx, p)
	if err != nil {
		return ap, err
	}
	exp, _ := time.Parse(time.RFC3339Nano, ap.ExpiresAt)
	st := StoredApproval{ID: ap.ID, Status: ApprovalPending, Pending: p, ExpiresAt: exp}
	if _, err := a.log.Append(ctx, approvalRecord(ApprovalRequested, st, p.Created), false); err != nil {
		return action.Approval{}, fmt.Errorf("the audit log cannot record the approval: %w", err)
	}
	return ap, nil
}
