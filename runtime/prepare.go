package runtime

import (
	"context"
	"strconv"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/policy"
)

// Prepare is the preview of an action that runs only with trust or a
// person's approval (the HTTP preview, an MCP confirmation): it runs the
// guard as for a trusted action in the preview phase (unless ctx names
// another phase) and, when the guard allows, asks the action's runtime for
// its plan. It returns the action as the guard left it (a step may have
// modified its input; Trusted false) and the plan.
//
// A refusal, by the guard or because the runtime will not plan the action
// (a path outside the root, a command not allowed), is recorded as Execute
// records one (pre_action with the decision, post_action with the
// observation) and returned as a non-nil observation, so that a refused
// preview is audited and answered the same way as the same action refused
// through any other entry point. An "ask" creates the approval, as Execute
// does. Nothing runs.
func (h *Harness) Prepare(ctx context.Context, a action.Action) (action.Action, action.Plan, *action.Observation) {
	start := time.Now()
	if _, ok := ctx.Value(phaseKey).(policy.Phase); !ok {
		ctx = WithPhase(ctx, policy.PhasePreview)
	}
	id, _ := ctx.Value(actionIDKey).(string)
	if id == "" {
		id = h.idPrefix + strconv.FormatUint(h.seq.Add(1), 10)
	}
	a.ID, a.Trusted = id, true
	req := h.request(ctx, a)
	d := h.guard.Decide(ctx, req)
	sc := req.Schema
	next := req.Action
	next.Trusted = false

	var plan action.Plan
	var err error
	answered := false // an ask a session-scoped approval answers
	if d.Outcome == policy.Ask {
		_, answered = h.approved(ctx, next)
	}
	if d.Allowed() || answered {
		if plan, err = h.Plan(ctx, req.Action); err == nil {
			return next, plan, nil
		}
	}
	obs := action.Observation{ActionID: id, Action: a.Name, Decision: d.Info()}
	ev := eventFrame{h: h, ctx: ctx, a: &a, id: id, principal: req.Principal, phase: req.Phase, decision: d, req: req}
	if h.recorder != nil || len(h.subscribers) > 0 {
		ev.sanitizeInput(req, a)
	}
	switch {
	case d.Outcome == policy.Ask:
		obs = h.ask(ctx, next, sc, d, obs)
		if obs.Approval != nil {
			ev.approval = obs.Approval.ID
		}
	case !d.Allowed():
		obs.Source, obs.Status, obs.Code, obs.Message = action.SourcePolicy, d.Code.Status(), d.Code, d.Message
	default: // the guard allowed; the runtime refused to plan
		if d.Plain() {
			obs.Decision = nil
		}
		obs.Source = action.SourceHarness
		if m, ok := h.runtimes[sc.Runtime]; ok {
			obs.Source = m.source
		}
		obs.Code, obs.Message = action.CodeOf(err), action.MessageOf(err)
		obs.Status = obs.Code.Status()
	}
	obs.LatencyMS = ms(time.Since(start))
	ev.emit(ahp.PreAction, nil, false)
	ev.emit(ahp.PostAction, &obs, false)
	if obs.Status == action.StatusError {
		ev.emit(ahp.Error, &obs, false)
	}
	return next, plan, &obs
}
