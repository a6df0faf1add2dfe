package trusted

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
)

// Principal is an authenticated caller: who it is and, when its key is
// bound to one, the tenant it acts for. A principal without a tenant may
// name any tenant in its actions (the guard's tenant rules still apply);
// a token is bound to the principal's tenant, not to the action's.
type Principal struct {
	Name   string
	Tenant string
}

// DefaultTTL is how long a token is valid when Options.TTL is zero (SPEC:
// token-ttl-seconds: 300).
const DefaultTTL = 300 * time.Second

// Options configure a Service. Harness is required.
type Options struct {
	Harness *runtime.Harness
	// Store keeps the tokens; nil means a new MemoryStore (owned, and
	// closed, by the Service).
	Store TokenStore
	// TTL is the lifetime of a token; zero means DefaultTTL.
	TTL time.Duration
	// Events, when set, is told of every token event (see TokenEvent).
	Events func(TokenEvent)
	// Audit, when set, receives a record for every token minted or
	// refused as stale (see TokenRecord); a redeemed token's run is
	// recorded by the Harness under the action_id the minted record names. Minting fails closed: a
	// preview whose record cannot be written mints nothing.
	Audit audit.Appender
	// Approvals is the store of what waits for a person (the one the
	// Harness requests approvals in); nil: the approval methods answer
	// that there is none.
	Approvals ApprovalStore
	// AllowSelfApproval lets a principal decide its own requests
	// (harness.approvals.allow-self-approval).
	AllowSelfApproval bool
	// Now replaces time.Now, for tests.
	Now    func() time.Time
	Logger *slog.Logger
}

// TokenEvent names what happened to a token, for metrics.
type TokenEvent string

// Token events.
const (
	TokenMinted   TokenEvent = "minted"   // a preview stored a new token
	TokenRedeemed TokenEvent = "redeemed" // a token was consumed and its action ran
	TokenExpired  TokenEvent = "expired"  // a consumed token had expired; nothing ran
	TokenRefused  TokenEvent = "refused"  // unknown, used, foreign or malformed token
	TokenStale    TokenEvent = "stale"    // consumed, but the files changed since preview; nothing ran
)

// Service is the preview -> one-time token -> execute flow of SPEC section
// 5, independent of HTTP. It is safe for concurrent use.
type Service struct {
	h        *runtime.Harness
	store    TokenStore
	ownStore bool
	ttl      time.Duration
	events   func(TokenEvent)
	audit    audit.Appender
	now      func() time.Time
	log      *slog.Logger

	approvals ApprovalStore
	allowSelf bool
	decided   broadcast // woken at every decision made here
}

// NewService returns a Service over opts.
func NewService(opts Options) (*Service, error) {
	if opts.Harness == nil {
		return nil, errors.New("trusted.NewService: a Harness is required")
	}
	s := &Service{
		h: opts.Harness, store: opts.Store, ttl: opts.TTL, events: opts.Events, audit: opts.Audit, now: opts.Now, log: opts.Logger,
		approvals: opts.Approvals, allowSelf: opts.AllowSelfApproval,
	}
	if s.store == nil {
		s.store, s.ownStore = NewMemoryStore(0), true
	}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.events == nil {
		s.events = func(TokenEvent) {}
	}
	return s, nil
}

// Store returns the token store.
func (s *Service) Store() TokenStore { return s.store }

// Harness returns the dispatcher the service runs actions on.
func (s *Service) Harness() *runtime.Harness { return s.h }

// Close closes the store if the Service created it.
func (s *Service) Close() error {
	if s.ownStore {
		return s.store.Close()
	}
	return nil
}

// PreviewResult is the answer to a preview: the token (returned once and
// never stored), when it expires, what the action will do, and the
// canonical hash of the action it is bound to.
type PreviewResult struct {
	Token      string         `json:"token"`
	ExpiresAt  time.Time      `json:"expires_at"`
	Preview    map[string]any `json:"preview"`
	ActionHash string         `json:"action_hash"`
}

// Preview runs the guard on a as a trusted action for principal p,
// computes what it would do without doing it, and mints a one-time token
// bound to the action's canonical hash, p's name and tenant, an expiry and
// the state of the files the action will touch.
//
// a.Trusted is ignored (trust comes from p's permission, which the caller
// has checked). When p is bound to a tenant, a.Tenant must be empty (it is
// then set to p's) or equal to it. A refusal is an *action.Error carrying
// the guard's code; nothing is stored then.
func (s *Service) Preview(ctx context.Context, p Principal, a action.Action) (PreviewResult, error) {
	a.Trusted = false
	a.ID = "" // action ids are Harness's, never the caller's
	if p.Tenant != "" {
		if a.Tenant != "" && a.Tenant != p.Tenant {
			return PreviewResult{}, action.Errorf(action.CodeTenantNotAllowed, "principal %s acts for tenant %q, not %q", p.Name, p.Tenant, a.Tenant)
		}
		a.Tenant = p.Tenant
	}
	ctx = runtime.WithPhase(runtime.WithPrincipal(ctx, p.Name), policy.PhasePreview)

	// The guard decides as for a trusted action; the action's runtime plans
	// it (the same plan an approval stores). A refusal is audited as any
	// other entry point's would be, and answered with its observation.
	a, plan, refused := s.h.Prepare(ctx, a)
	if refused != nil {
		return PreviewResult{}, &action.Refusal{Observation: *refused}
	}
	a.ID = ""
	preview, files := plan.Preview, plan.Preconditions
	if preview == nil {
		preview = map[string]any{}
	}

	hash, err := a.Hash()
	if err != nil {
		return PreviewResult{}, action.Errorf(action.CodeInvalidInput, "action cannot be hashed: %v", err)
	}
	token, id, err := NewToken()
	if err != nil {
		return PreviewResult{}, &action.Error{Code: action.CodeInternal, Message: "cannot mint a token", Err: err}
	}
	now := s.now()
	rec := Record{
		Action: a, ActionHash: hash, Principal: p.Name, Tenant: p.Tenant,
		CreatedAt: now.UTC(), ExpiresAt: now.Add(s.ttl).UTC(), Files: files,
	}
	if err := s.record(ctx, TokenMinted, id, rec, ""); err != nil {
		return PreviewResult{}, &action.Error{Code: action.CodeInternal, Message: "the audit log cannot record the token, so none is minted", Err: err}
	}
	if err := s.store.Put(ctx, id, rec); err != nil {
		if errors.Is(err, ErrTokenLimit) {
			return PreviewResult{}, err // rate_limited or too_large, with retry_after_ms
		}
		return PreviewResult{}, &action.Error{Code: action.CodeInternal, Message: "cannot store the token", Err: err}
	}
	s.events(TokenMinted)
	return PreviewResult{Token: token, ExpiresAt: rec.ExpiresAt, Preview: preview, ActionHash: hash}, nil
}

// codeError makes sure err carries a code (internal when it has none).
func codeError(err error) error {
	var ae *action.Error
	if errors.As(err, &ae) {
		return err
	}
	return &action.Error{Code: action.CodeInternal, Message: err.Error(), Err: err}
}

// notFound is the one answer for an unknown, used, expired, malformed or
// foreign token.
func notFound() error {
	return action.Errorf(action.CodeNotFound, "no such token (tokens are single-use and expire)")
}

// Execute redeems token for principal p and runs the action it was minted
// for, with trust, through the Harness (so the guard runs again and the
// events are emitted).
//
// The token is consumed atomically before anything else happens: of any
// number of concurrent calls, across every replica sharing the store, at
// most one gets past this point, and a token is never usable twice, even
// when the action is then refused. An unknown, used, expired, malformed or
// foreign token (another principal's or tenant's) gives the same
// *action.Error with code not_found; a foreign caller does not consume it.
//
// The action runs with the preview's preconditions (action.WithPreconditions):
// its runtime checks them under its own write locks and answers
// stale_preview, touching nothing, if a file changed. Once the token is
// consumed, the action is run detached from
// ctx's cancellation (values are kept): a caller that disconnects does not
// cut it short. Errors are *action.Error; a refused or failed action that
// did run is an Observation, not an error.
func (s *Service) Execute(ctx context.Context, p Principal, token string) (action.Observation, error) {
	if !wellFormed(token) {
		s.events(TokenRefused)
		return action.Observation{}, notFound()
	}
	id := TokenID(token)
	rec, err := s.store.Consume(ctx, id, p.Name, p.Tenant)
	if errors.Is(err, ErrTokenNotFound) {
		s.events(TokenRefused)
		return action.Observation{}, notFound()
	}
	if err != nil {
		return action.Observation{}, &action.Error{Code: action.CodeInternal, Message: "token store unavailable", Err: err}
	}
	if !s.now().Before(rec.ExpiresAt) {
		s.events(TokenExpired)
		return action.Observation{}, notFound()
	}
	return s.run(ctx, p, id, rec)
}

// run runs the action of a consumed (or, for AwaitApproval, claimed)
// token record id for p.
func (s *Service) run(ctx context.Context, p Principal, id string, rec Record) (action.Observation, error) {
	a := rec.Action
	if h, err := a.Hash(); err != nil || h != rec.ActionHash {
		// The store returned an action other than the one previewed.
		s.log.Error("trusted: stored action does not match its hash; refusing", "action", a.Name)
		return action.Observation{}, action.Errorf(action.CodeInternal, "the stored action does not match the previewed hash")
	}

	a.Trusted = true
	// The run's events carry the action_id the minted record announced.
	run := runtime.WithActionID(runtime.WithPrincipal(context.WithoutCancel(ctx), p.Name), runID(id))
	// The runtime runs exactly the previewed plan: only while every file
	// it was planned on is as it was (else stale_preview, nothing runs),
	// checked under the runtime's own write locks.
	run = action.WithPreconditions(run, rec.Files)
	if rec.ApprovalID != "" { // a person approved exactly this action
		run = runtime.WithApproval(run, rec.ApprovalID, rec.ActionHash)
	}
	// The token is spent: the action runs to its end even if the caller
	// goes away, so that a dropped connection never leaves a consumed token
	// whose action was cut short. Runtimes bound it with their own limits.
	obs := s.h.Execute(runtime.WithPhase(run, policy.PhaseExecute), a)
	if obs.Code == action.CodeStalePreview {
		s.events(TokenStale)
		s.record(ctx, TokenStale, id, rec, obs.Message)
		return obs, &action.Error{Code: action.CodeStalePreview, Message: obs.Message}
	}
	s.events(TokenRedeemed)
	return obs, nil
}

// String describes the service for logs.
func (s *Service) String() string {
	return fmt.Sprintf("trusted.Service{ttl: %s, store: %T}", s.ttl, s.store)
}

// TokenRecord is the audit record of a token event. It names the token by
// TokenRef (the first 16 hex digits of its ID, the SHA-256 of the token),
// never by the token itself, and the action by name and canonical hash.
type TokenRecord struct {
	Kind       string     `json:"kind"` // always "trusted_token"
	Event      TokenEvent `json:"event"`
	TokenRef   string     `json:"token_ref"`
	Principal  string     `json:"principal"`
	Tenant     string     `json:"tenant,omitempty"`
	Action     string     `json:"action"`
	ActionHash string     `json:"action_hash"`
	SessionID  string     `json:"session_id,omitempty"`
	ExpiresAt  time.Time  `json:"expires_at"`
	Files      int        `json:"files"`
	// ActionID is the action_id the run's events will carry, which links
	// them to this record; Reason (stale) says what changed.
	ActionID string `json:"action_id"`
	Reason   string `json:"reason,omitempty"`
	// ApprovalID names the approval the token was minted for.
	ApprovalID string `json:"approval_id,omitempty"`
}

// CanonicalValue returns the record as the generic values its JSON
// decodes into, field for field as encoding/json writes it (omitempty
// included), so that the audit log's canonical form of every token event
// needs no JSON round trip. TestTokenRecordCanonicalValue holds the two
// together.
func (r TokenRecord) CanonicalValue() any {
	m := map[string]any{
		"kind": r.Kind, "event": string(r.Event), "token_ref": r.TokenRef, "principal": r.Principal,
		"action": r.Action, "action_hash": r.ActionHash, "expires_at": r.ExpiresAt.Format(time.RFC3339Nano),
		"files": r.Files, "action_id": r.ActionID,
	}
	for k, v := range map[string]string{"tenant": r.Tenant, "session_id": r.SessionID, "reason": r.Reason, "approval_id": r.ApprovalID} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

func tokenRef(id string) string { return id[:16] }

// runID is the action_id of a redeemed token's run: "tok-" and the
// token's ref, which the token's audit records name too.
// when the previewer gave one, else "tok-" and the token's ref.
func runID(id string) string { return "tok-" + tokenRef(id) }

// record writes a token event to the audit log, when there is one. A
// failure is logged here, except for minting, whose caller refuses the
// preview instead.
func (s *Service) record(ctx context.Context, e TokenEvent, id string, rec Record, extra string) error {
	if s.audit == nil {
		return nil
	}
	tr := TokenRecord{
		Kind: "trusted_token", Event: e, TokenRef: tokenRef(id), Principal: rec.Principal, Tenant: rec.Tenant,
		Action: rec.Action.Name, ActionHash: rec.ActionHash, SessionID: rec.Action.SessionID,
		ExpiresAt: rec.ExpiresAt, Files: len(rec.Files), ActionID: runID(id), Reason: extra, ApprovalID: rec.ApprovalID,
	}
	_, err := s.audit.Append(ctx, tr, false)
	if err != nil && e != TokenMinted {
		s.log.Error("trusted: audit record failed", "event", string(e), "err", err)
	}
	return err
}
