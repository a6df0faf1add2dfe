package bridge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
)

// Calls that wait for a person's approval: when the guard asks (a rule's
// ask, an external harness's escalate), Execute answers needs_confirmation
// with a pending approval that a person decides elsewhere (the console of
// harness serve, the approvals API), whatever the client supports. The
// bridge then holds its answer for the decision a bounded time; if nobody
// has decided by then, it answers with the approval's id and where to
// decide it, and remembers the approval: the same call again (same
// session, same arguments) waits for that approval again instead of asking
// anew, and runs exactly the approved plan once it is approved.

// ApprovalFlow runs what a person approved: package trusted's Service,
// through an adapter that names the bridge's principal (the requester).
type ApprovalFlow interface {
	// Await waits, as long as ctx allows, for the approval id to be
	// decided and then runs exactly the approved plan. A denial or an
	// expiry is an observation (approval_denied, approval_expired). When
	// ctx ends first, the error carries the code timeout or canceled and
	// the approval stays pending.
	Await(ctx context.Context, id string) (action.Observation, error)
}

// WithApprovals makes calls that wait for approval wait up to wait for
// the decision (0: answer at once) and name consoleURL (may be empty) as
// the place to decide.
func WithApprovals(f ApprovalFlow, wait time.Duration, consoleURL string) ServerOption {
	return func(s *Server) {
		s.approvals = &approvalWaits{flow: f, wait: wait, console: consoleURL, byCall: map[string]waiting{}}
	}
}

// maxWaiting bounds the calls remembered as waiting for approval.
const maxWaiting = 4096

type approvalWaits struct {
	flow    ApprovalFlow
	wait    time.Duration
	console string

	mu     sync.Mutex
	byCall map[string]waiting // session + action hash -> the approval
}

type waiting struct {
	id       string
	expires  string
	preview  map[string]any
	actionID string
	decision *action.Decision
}

// callKey names a call for its approval: the session and the action's
// canonical hash.
func callKey(session string, a action.Action) (string, bool) {
	h, err := a.Hash()
	if err != nil {
		return "", false
	}
	return session + "\x00" + h, true
}

// none reports whether no call waits for an approval.
func (w *approvalWaits) none() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.byCall) == 0
}

func (w *approvalWaits) get(key string) (waiting, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.byCall[key]
	return p, ok
}

func (w *approvalWaits) put(key string, p waiting) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.byCall[key]; !ok && len(w.byCall) >= maxWaiting {
		for k := range w.byCall { // any one: the oldest is not worth an index
			delete(w.byCall, k)
			break
		}
	}
	w.byCall[key] = p
}

func (w *approvalWaits) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.byCall, key)
}

// pending answers whether this call already waits for an approval, and
// if so waits for it again.
func (s *Server) resumeApproval(ctx context.Context, session string, a action.Action) (action.Observation, bool) {
	if s.approvals == nil || s.approvals.none() {
		return action.Observation{}, false // no call waits: no key to compute
	}
	key, ok := callKey(session, a)
	if !ok {
		return action.Observation{}, false
	}
	p, ok := s.approvals.get(key)
	if !ok {
		return action.Observation{}, false
	}
	return s.awaitApproval(ctx, key, a, p), true
}

// afterRun takes over an observation that waits for approval: the bridge
// remembers it and waits for the decision.
func (s *Server) afterRun(ctx context.Context, session string, a action.Action, obs action.Observation) action.Observation {
	if s.approvals == nil || obs.Status != action.StatusNeedsConfirmation || obs.Approval == nil || obs.Approval.ID == "" {
		return obs
	}
	key, ok := callKey(session, a)
	if !ok {
		return obs
	}
	p := waiting{id: obs.Approval.ID, expires: obs.Approval.ExpiresAt, preview: obs.Approval.Preview, actionID: obs.ActionID, decision: obs.Decision}
	s.approvals.put(key, p)
	return s.awaitApproval(ctx, key, a, p)
}

// awaitApproval waits (bounded) for the approval of the call key and runs
// it once approved; a call still pending is answered with the approval's
// id and where to decide it.
func (s *Server) awaitApproval(ctx context.Context, key string, a action.Action, p waiting) action.Observation {
	w := s.approvals
	if w.wait > 0 {
		wctx, cancel := context.WithTimeout(ctx, w.wait)
		obs, err := w.flow.Await(wctx, p.id)
		cancel()
		if err == nil {
			w.forget(key)
			return obs
		}
		if ctx.Err() != nil { // the client went away: the approval stays
			return s.stillPending(a, p)
		}
		if code := action.CodeOf(err); code != action.CodeTimeout && code != action.CodeCanceled && !errors.Is(err, context.DeadlineExceeded) {
			w.forget(key) // unknown, already run, …: the next call asks anew
			return flowRefusal(a, err)
		}
	}
	return s.stillPending(a, p)
}

// stillPending is the answer of a call whose approval nobody decided yet.
func (s *Server) stillPending(a action.Action, p waiting) action.Observation {
	var where string
	if s.approvals.console != "" {
		where = "in the approval console at " + s.approvals.console
	} else {
		where = "in the approval console of harness serve (/console/) sharing this store, or with POST /v1/approvals/" + p.id + "/approve"
	}
	msg := []string{a.Name + " waits for a person's approval " + p.id}
	if p.expires != "" {
		msg[0] += " (until " + p.expires + ")"
	}
	msg = append(msg, "a person approves or denies it "+where,
		"call the tool again with the same arguments to wait for the decision; it runs once approved")
	return action.Observation{
		ActionID: p.actionID, Action: a.Name, Source: action.SourcePolicy, Status: action.StatusNeedsConfirmation,
		Code: action.CodeApprovalRequired, Message: strings.Join(msg, "; "),
		Approval: &action.Approval{ID: p.id, ExpiresAt: p.expires, Preview: p.preview}, Decision: p.decision,
	}
}
