package bridge

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/sanitize"
)

const (
	// confirmID keys the confirmation in the elicitation's input requests.
	confirmID = "confirm"
	// confirmTTL bounds how long a shown preview may be confirmed.
	confirmTTL = 10 * time.Minute

	defaultReadHeaderTimeout = 10 * time.Second
)

// TrustFlow is the preview -> one-time token -> execute flow of SPEC
// section 1 (package trusted's Service, through an adapter that names the
// principal). With one, a confirmed action runs from its token: exactly
// the action previewed, and refused with stale_preview when a file it
// touches changed since the preview. Without one, the bridge re-previews
// the action at confirmation and runs it only when the preview is
// unchanged, which leaves a short window between that check and the run.
type TrustFlow interface {
	// Preview refuses with an *action.Error carrying the guard's code, or
	// returns what the action would do and a token that Execute redeems
	// once.
	Preview(ctx context.Context, a action.Action) (preview map[string]any, token string, err error)
	// Execute redeems a token and runs its action with trust.
	Execute(ctx context.Context, token string) (action.Observation, error)
}

// ConfirmationRecorder is what a TrustFlow may also do: record, durably
// and before the action runs, that a person confirmed a through the MCP
// client (named client) before token runs it — the audit log's approval
// record of the confirmation. An error keeps the action from running.
type ConfirmationRecorder interface {
	RecordConfirmation(ctx context.Context, a action.Action, token, client string) (approvalID string, err error)
}

// WithTrustFlow makes confirmed actions run through f.
func WithTrustFlow(f TrustFlow) ServerOption { return func(s *Server) { s.flow = f } }

// pendingTokens keeps the tokens of previews waiting for the person's
// answer, by the nonce of their request state: a token never leaves the
// process, even with clients that echo the request state.
type pendingTokens struct {
	mu sync.Mutex
	m  map[string]pendingToken
}

type pendingToken struct {
	token string
	at    time.Time
}

func (p *pendingTokens) put(nonce, token string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]pendingToken{}
	}
	for n, t := range p.m { // forget the ones nobody answered
		if now.Sub(t.at) > confirmTTL {
			delete(p.m, n)
		}
	}
	p.m[nonce] = pendingToken{token: token, at: now}
}

// take returns and forgets the token stored under nonce.
func (p *pendingTokens) take(nonce string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.m[nonce]
	delete(p.m, nonce)
	return t.token, ok
}

// confirmAndRun runs a trusted action listed in
// harness.mcp.bridge.trusted-actions: the first round asks the person,
// through elicitation, to confirm the preview; the second, carrying the
// answer and the signed request state, runs exactly the previewed action,
// or refuses with stale_preview when the preview is no longer what was
// shown.
//
// With clients of protocol revisions before 2026-07-28 the mcp-go server
// plays both rounds itself (a server-initiated elicitation/create), so the
// request state never leaves this process; newer clients echo it back, and
// its HMAC under a per-process key keeps them from forging one.
func (s *Server) confirmAndRun(ctx context.Context, req mcpgo.CallToolRequest, a action.Action) (*mcpgo.CallToolResult, error) {
	if len(req.Params.InputResponses) == 0 && req.Params.RequestState == "" {
		return s.askConfirmation(ctx, a)
	}
	hash, err := a.Hash()
	if err != nil {
		return toolResult(s.blocked(a, policy.Decision{Code: action.CodeInvalidInput, Message: err.Error()})), nil
	}
	nonce, shownPreview, ok := s.verifyState(req.Params.RequestState, hash, time.Now())
	if !ok {
		return toolResult(s.blocked(a, policy.Decision{Code: action.CodeStalePreview,
			Message: "the confirmation does not match this action or has expired; call the tool again to see a new preview"})), nil
	}
	var token string
	if s.flow != nil {
		var ok bool
		if token, ok = s.pending.take(nonce); !ok {
			return toolResult(s.blocked(a, policy.Decision{Code: action.CodeStalePreview,
				Message: "this confirmation was already used or has expired; call the tool again to see a new preview"})), nil
		}
	}
	answer := mcpserver.ElicitationResponse(req.Params.InputResponses, confirmID)
	if answer == nil || answer.Action != mcpgo.ElicitationResponseActionAccept || !confirmedIn(answer.Content) {
		how := "declined"
		if answer != nil && answer.Action == mcpgo.ElicitationResponseActionCancel {
			how = "cancelled"
		}
		return toolResult(s.blocked(a, policy.Decision{Code: action.CodeTrustRequired,
			Message: fmt.Sprintf("%s was not run: the person %s the confirmation", a.Name, how)})), nil
	}
	if rec, ok := s.flow.(ConfirmationRecorder); ok && s.flow != nil {
		if _, err := rec.RecordConfirmation(ctx, a, token, clientName(ctx)); err != nil {
			return toolResult(flowRefusal(a, err)), nil
		}
	}
	if s.flow != nil {
		obs, err := s.flow.Execute(ctx, token)
		if err != nil && obs.Action == "" { // a run refused as stale keeps its observation (action_id, source)
			return toolResult(flowRefusal(a, err)), nil
		}
		return toolResult(obs), nil
	}
	_, plan, refused := s.h.Prepare(ctx, a)
	if refused != nil {
		return toolResult(*refused), nil
	}
	preview := plan.Preview
	if preview == nil {
		preview = map[string]any{}
	}
	if previewDigest(preview) != shownPreview {
		return toolResult(s.blocked(a, policy.Decision{Code: action.CodeStalePreview,
			Message: "what " + a.Name + " would do changed since the preview was confirmed; call the tool again to see the new preview"})), nil
	}
	a.Trusted = true
	return toolResult(s.h.Execute(ctx, a)), nil
}

// flowRefusal is the observation of a TrustFlow error: a refusal by the
// guard or the workspace's rules is blocked, anything else an error.
func flowRefusal(a action.Action, err error) action.Observation {
	var refused *action.Refusal
	if errors.As(err, &refused) {
		return refused.Observation // recorded, with its action id and decision
	}
	code := action.CodeOf(err)
	msg := action.MessageOf(err)
	if code == action.CodeNotFound {
		code, msg = action.CodeStalePreview, "the confirmation expired or was already used; call the tool again to see a new preview"
	}
	obs := action.Observation{Action: a.Name, Source: action.SourceHarness, Status: code.Status(), Code: code, Message: msg}
	switch code {
	case action.CodeUnknownAction, action.CodeActionDisabled, action.CodeTenantNotAllowed, action.CodeInvalidInput,
		action.CodeTrustedRuntimeDisabled, action.CodeTrustRequired, action.CodeBudgetExhausted,
		action.CodeRepeatedAction, action.CodeRateLimited, action.CodeRuleDenied, action.CodeCommandNotAllowed:
		obs.Source = action.SourcePolicy
	}
	return obs
}

// askConfirmation previews the action and asks the person to confirm it.
func (s *Server) askConfirmation(ctx context.Context, a action.Action) (*mcpgo.CallToolResult, error) {
	if !clientCanElicit(ctx) {
		obs := s.h.Execute(ctx, a) // refused by the guard: not trusted
		if obs.Code == action.CodeTrustRequired {
			obs.Message = a.Name + " needs the person's confirmation, and this MCP client cannot ask for it (no elicitation support): " +
				"use a client that supports elicitation, or list it in harness.auto-approved-actions to run it without confirmation"
		}
		return toolResult(obs), nil
	}
	sc, _ := s.h.Registry().Lookup(a.Name)
	var preview map[string]any
	var token string
	if s.flow != nil {
		var err error
		if preview, token, err = s.flow.Preview(ctx, a); err != nil {
			return toolResult(flowRefusal(a, err)), nil
		}
	} else {
		_, plan, refused := s.h.Prepare(ctx, a)
		if refused != nil {
			return toolResult(*refused), nil
		}
		preview = plan.Preview
	}
	if preview == nil {
		preview = map[string]any{}
	}
	hash, herr := a.Hash()
	if herr != nil {
		return toolResult(s.blocked(a, policy.Decision{Code: action.CodeInvalidInput, Message: herr.Error()})), nil
	}
	now := time.Now()
	state, nonce := s.signState(hash, previewDigest(preview), now)
	if token != "" {
		s.pending.put(nonce, token, now)
	}
	risk := "read"
	if sc != nil {
		risk = string(sc.Risk)
	}
	who := strings.TrimPrefix(clientName(ctx), "mcp:")
	if who == "" {
		who = "The MCP client"
	}
	// File contents and command words are the workspace's: nothing in them
	// may change how the person sees what they approve.
	msg := sanitize.Inert(fmt.Sprintf("%s asks Harness to run %s (risk: %s):\n\n%s\n\nRun it?", who, a.Name, risk, renderPreview(preview)))
	params := mcpgo.ElicitationParams{
		Message: msg,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"confirm": map[string]any{"type": "boolean", "title": "Run " + a.Name, "description": "Run exactly what is shown above", "default": false},
			},
			"required": []string{"confirm"},
		},
	}
	return mcpserver.NewInputRequestBuilder(state).Elicit(confirmID, params).ToolResult(), nil
}

// confirmedIn reports whether the form content says confirm: true.
func confirmedIn(content any) bool {
	m, ok := content.(map[string]any)
	if !ok {
		return false
	}
	v, _ := m["confirm"].(bool)
	return v
}

// previewDigest is the SHA-256 of the canonical preview.
func previewDigest(p map[string]any) string {
	raw, err := action.Canonical(p)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// signState binds an action hash and a preview digest to a time:
// "v1.<unix>.<nonce>.<preview digest>.<hmac>".
func (s *Server) signState(actionHash, preview string, now time.Time) (state, nonce string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	nonce = hex.EncodeToString(b[:])
	head := "v1." + strconv.FormatInt(now.Unix(), 10) + "." + nonce + "." + preview
	return head + "." + s.mac(head, actionHash), nonce
}

// verifyState returns the nonce and preview digest of a state signed for
// actionHash that has not expired.
func (s *Server) verifyState(state, actionHash string, now time.Time) (nonce, digest string, ok bool) {
	i := strings.LastIndexByte(state, '.')
	if i < 0 {
		return "", "", false
	}
	head, sig := state[:i], state[i+1:]
	if !hmac.Equal([]byte(sig), []byte(s.mac(head, actionHash))) {
		return "", "", false
	}
	parts := strings.Split(head, ".")
	if len(parts) != 4 || parts[0] != "v1" {
		return "", "", false
	}
	unix, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", "", false
	}
	at := time.Unix(unix, 0)
	if now.Before(at.Add(-time.Minute)) || now.After(at.Add(confirmTTL)) {
		return "", "", false
	}
	return parts[2], parts[3], true
}

func (s *Server) mac(head, actionHash string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(head))
	m.Write([]byte{0})
	m.Write([]byte(actionHash))
	return hex.EncodeToString(m.Sum(nil))
}
