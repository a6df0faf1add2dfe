package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// Sanitizer removes sensitive values and secrets before anything reaches an
// event. *sanitize.Sanitizer implements it.
type Sanitizer interface {
	Value(v any, sensitive []string) any
	String(s string) string
}

// Recorder is the audit log as the dispatcher sees it. durable asks for the
// record to be on stable storage before Record returns; the dispatcher asks
// for it before a trusted action runs and refuses the action when it fails
// (fail closed).
type Recorder interface {
	Record(ctx context.Context, ev ahp.Event, durable bool) error
}

// BatchRecorder is a Recorder that can write several events at once (one
// write to the log instead of one each). The dispatcher writes a trusted
// read's pre_action record together with its post_action record when its
// Recorder is one.
type BatchRecorder interface {
	Recorder
	RecordAll(ctx context.Context, evs []ahp.Event, durable bool) error
}

// Options configure a Harness. Registry, Guard and Sanitizer are required.
type Options struct {
	Registry  *schema.Registry
	Guard     *policy.Guard
	Sanitizer Sanitizer
	// Recorder is the audit log; nil records nothing.
	Recorder Recorder
	// Approvals stores the actions the guard asks a person about; nil
	// reports them needs_confirmation without an approval anyone can give.
	Approvals Approvals
	// AgentID names the agent in events; default "harness".
	AgentID string
	// Logger receives operational logs; nil discards them (a library does
	// not write to stderr on its own).
	Logger *slog.Logger
	// Observer, when set, is told of every observation before its
	// post_action event (governance counts it, redaction rewrites it).
	Observer Observer
}

// Harness is the dispatcher. It is safe for concurrent use; mount runtimes
// and subscribe sinks before the first Execute.
type Harness struct {
	registry  *schema.Registry
	guard     *policy.Guard
	sanitizer Sanitizer
	recorder  Recorder
	batch     BatchRecorder // recorder, when it writes several events at once
	approvals Approvals
	agentID   string
	log       *slog.Logger
	observer  Observer

	runtimes    map[string]mounted
	subscribers []ahp.Sink
	builtin     *Builtin
	// governed: the guard has a governance step, so each request is
	// allocated with room for its admission.
	governed bool

	idPrefix string
	seq      atomic.Uint64
}

type mounted struct {
	source action.Source
	rt     Runtime
}

// New returns a Harness with the builtin runtime mounted as "builtin".
func New(opts Options) (*Harness, error) {
	if opts.Registry == nil || opts.Guard == nil || opts.Sanitizer == nil {
		return nil, errors.New("runtime.New: Registry, Guard and Sanitizer are required")
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return nil, fmt.Errorf("runtime.New: %w", err)
	}
	h := &Harness{
		registry:  opts.Registry,
		guard:     opts.Guard,
		sanitizer: opts.Sanitizer,
		recorder:  opts.Recorder,
		approvals: opts.Approvals,
		agentID:   opts.AgentID,
		log:       opts.Logger,
		observer:  opts.Observer,
		runtimes:  map[string]mounted{},
		idPrefix:  "act-" + hex.EncodeToString(rnd[:]) + "-",
		governed:  slices.Contains(opts.Guard.Checks(), policy.StepGovernance),
	}
	h.batch, _ = opts.Recorder.(BatchRecorder)
	if h.agentID == "" {
		h.agentID = "harness"
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.builtin = &Builtin{funcs: map[string]BuiltinFunc{}}
	h.Mount(schema.RuntimeBuiltin, action.SourceBuiltin, h.builtin)
	return h, nil
}

// Mount makes rt the runtime for actions whose schema names runtime name;
// observations from it carry source.
func (h *Harness) Mount(name string, source action.Source, rt Runtime) {
	h.runtimes[name] = mounted{source: source, rt: rt}
}

// Subscribe adds an in-process sink for every event. A subscriber's error
// is logged and does not stop the action.
func (h *Harness) Subscribe(s ahp.Sink) { h.subscribers = append(h.subscribers, s) }

// Registry returns the schema registry.
func (h *Harness) Registry() *schema.Registry { return h.registry }

// Guard returns the policy guard.
func (h *Harness) Guard() *policy.Guard { return h.guard }

// Builtin returns the builtin runtime, where programs register Go functions.
func (h *Harness) Builtin() *Builtin { return h.builtin }

// Decide runs the guard alone, without dispatching or emitting anything,
// in the phase of ctx (WithPhase), and returns its decision and the
// action's schema (nil when the action is unknown). The preview flow uses
// it. A Modify decision's new input is in the returned decision's Input.
func (h *Harness) Decide(ctx context.Context, a action.Action) (policy.Decision, *schema.ActionSchema) {
	req := h.request(ctx, a)
	d := h.guard.Decide(ctx, req)
	if d.Outcome == policy.Modify {
		d.Input = req.Action.Input
	}
	return d, req.Schema
}

// governedRequest is a request allocated with room for what the
// governance step admits (policy.Admission): the request lives as long as
// the action, and so does its admission.
type governedRequest struct {
	req policy.Request
	adm policy.Admission
}

// request builds the guard's request for a in the phase of ctx.
func (h *Harness) request(ctx context.Context, a action.Action) *policy.Request {
	var req *policy.Request
	var room *policy.Admission
	if h.governed {
		g := new(governedRequest)
		req, room = &g.req, &g.adm
	} else {
		req = new(policy.Request)
	}
	*req = policy.Request{Action: a, Principal: PrincipalFrom(ctx), Phase: PhaseFrom(ctx), Sanitizer: h.sanitizer, Governance: room}
	return req
}

// Execute takes one action through the whole pipeline and returns its
// observation. It never panics and never returns a raw error: a refusal, a
// failure, a panicking tool and a missed deadline are all observations.
func (h *Harness) Execute(ctx context.Context, a action.Action) (obs action.Observation) {
	start := time.Now()
	id, _ := ctx.Value(actionIDKey).(string)
	if id == "" {
		id = h.idPrefix + strconv.FormatUint(h.seq.Add(1), 10)
	}
	a.ID = id
	obs.ActionID, obs.Action = id, a.Name
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("harness: panic while executing action", "action", a.Name, "action_id", id, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			obs = h.fail(id, a.Name, action.SourceHarness, action.Errorf(action.CodeInternal, "internal error while executing %s", a.Name))
			obs.LatencyMS = ms(time.Since(start))
		}
	}()

	req := h.request(ctx, a)
	d := h.guard.Decide(ctx, req)
	sc := req.Schema
	ev := eventFrame{h: h, ctx: ctx, a: &a, id: id, principal: req.Principal, phase: req.Phase, decision: d, req: req}
	if h.recorder != nil || len(h.subscribers) > 0 { // nobody to tell: nothing to sanitize
		ev.sanitizeInput(req, a)
	}
	a = req.Action // what runs is what the guard allowed
	if !d.Plain() {
		obs.Decision = d.Info()
	}
	// A trusted action that can change something (a write, a command, a
	// call out) runs only after the record that it is about to run is on
	// stable storage (fail closed), and so is its outcome. A trusted read
	// changes nothing: its records are handed to the operating system
	// without an fsync of their own (the next durable record or the OS
	// flushes them), and with a BatchRecorder its pre_action record is
	// written with its post_action record, in one write, before the
	// observation is returned; if they cannot be written, the read's result
	// is withheld (fail closed). A crash may lose the record of a read,
	// whose result then reached nobody, never that of a change.
	recorded := sc != nil && sc.Trusted
	durable := recorded && sc.Risk != schema.RiskRead
	held := recorded && !durable && h.batch != nil

	// An ask that a person already answered (the approved plan the trusted
	// service runs, or a session-scoped approval) lets the action run; its
	// events name the approval.
	askAnswered := false
	if d.Outcome == policy.Ask {
		ev.approval, askAnswered = h.approved(ctx, a)
	}
	if d.Outcome == policy.Ask && !askAnswered {
		obs = h.ask(ctx, a, sc, d, obs)
		obs.LatencyMS = ms(time.Since(start))
		ev.approval = ""
		if obs.Approval != nil {
			ev.approval = obs.Approval.ID
		}
		ev.emit(ahp.PreAction, nil, false)
		h.observe(ctx, req, &obs)
		ev.emit(ahp.PostAction, &obs, false)
		return obs
	}
	if !d.Allowed() && !askAnswered {
		obs.Source, obs.Status, obs.Code, obs.Message = action.SourcePolicy, d.Code.Status(), d.Code, d.Message
		if d.Code == action.CodeRateLimited && d.RetryAfter > 0 { // for Retry-After
			obs.Payload = map[string]any{"retry_after_ms": d.RetryAfter.Milliseconds()}
		}
		obs.LatencyMS = ms(time.Since(start))
		ev.emit(ahp.PreAction, nil, false)
		h.observe(ctx, req, &obs)
		ev.emit(ahp.PostAction, &obs, false)
		return obs
	}
	m, ok := h.runtimes[sc.Runtime]
	if !ok {
		obs = h.fail(id, a.Name, action.SourceHarness, action.Errorf(action.CodeInternal, "no runtime %q is mounted for %s", sc.Runtime, a.Name))
		obs.LatencyMS = ms(time.Since(start))
		ev.emit(ahp.PreAction, nil, false)
		h.observe(ctx, req, &obs)
		ev.emit(ahp.PostAction, &obs, false)
		return obs
	}
	if held {
		ev.hold(ahp.PreAction)
	} else if err := ev.emit(ahp.PreAction, nil, durable); err != nil && recorded {
		obs = h.fail(id, a.Name, action.SourceHarness, action.Errorf(action.CodeInternal, "the audit log cannot record this trusted action, so it does not run: %v", err))
		obs.LatencyMS = ms(time.Since(start))
		h.observe(ctx, req, &obs)
		ev.emit(ahp.Error, &obs, false)
		return obs
	}

	payload, err := h.run(ctx, m.rt, a, sc.Risk == schema.RiskRead)
	obs.Source = m.source
	if err != nil {
		code := action.CodeOf(err)
		if ctxErr := ctx.Err(); ctxErr != nil && code == action.CodeInternal {
			code = ctxCode(ctxErr)
			err = &action.Error{Code: code, Message: fmt.Sprintf("%s did not finish: %v", a.Name, ctxErr)}
		}
		obs.Status, obs.Code, obs.Message = statusFor(code), code, action.MessageOf(err)
		var ae *action.Error
		if errors.As(err, &ae) && ae.Payload != nil {
			obs.Payload = ae.Payload
		}
	} else {
		obs.Status, obs.Payload = action.StatusOK, payload
	}
	obs.LatencyMS = ms(time.Since(start))
	h.observe(ctx, req, &obs)
	if err := ev.emit(ahp.PostAction, &obs, durable); err != nil && held {
		// Neither of the read's records is in the log: its result is
		// withheld.
		obs = h.fail(id, a.Name, action.SourceHarness, action.Errorf(action.CodeInternal, "the audit log cannot record this trusted action, so its result is withheld: %v", err))
		obs.LatencyMS = ms(time.Since(start))
		ev.emit(ahp.Error, &obs, false)
		return obs
	}
	if obs.Status == action.StatusError {
		ev.emit(ahp.Error, &obs, false)
	}
	return obs
}

// observe hands the observation to the Observer, if any.
func (h *Harness) observe(ctx context.Context, req *policy.Request, obs *action.Observation) {
	if h.observer != nil {
		h.observer.Observe(ctx, req, obs)
	}
}

// run calls the runtime, turning a panic into an internal error. A read
// is answered as soon as ctx is done (by the runtime itself when it is
// ContextHonouring); an action that may change something (a write, a
// command, a network call) is waited for, so that its observation says
// what happened rather than "timeout" for a write that lands after it
// (runtimes honour ctx and stop as soon as they safely can).
func (h *Harness) run(ctx context.Context, rt Runtime, a action.Action, read bool) (map[string]any, error) {
	if err := ctx.Err(); err != nil {
		return nil, &action.Error{Code: ctxCode(err), Message: fmt.Sprintf("%s did not start: %v", a.Name, err)}
	}
	if ctx.Done() == nil || !read || honours(rt) {
		return h.runSafely(ctx, rt, a)
	}
	type result struct {
		payload map[string]any
		err     error
	}
	done := make(chan result, 1)
	go func() {
		p, err := h.runSafely(ctx, rt, a)
		done <- result{p, err}
	}()
	select {
	case r := <-done:
		return r.payload, r.err
	case <-ctx.Done():
		return nil, &action.Error{Code: ctxCode(ctx.Err()), Message: fmt.Sprintf("%s did not finish: %v", a.Name, ctx.Err())}
	}
}

// ctxCode is the code of a context's end: canceled when the caller went
// away, timeout when a deadline passed.
func ctxCode(err error) action.Code {
	if errors.Is(err, context.Canceled) {
		return action.CodeCanceled
	}
	return action.CodeTimeout
}

// honours reports whether rt stops its reads itself when their context
// ends (ContextHonouring).
func honours(rt Runtime) bool {
	c, ok := rt.(ContextHonouring)
	return ok && c.HonoursContext()
}

func (h *Harness) runSafely(ctx context.Context, rt Runtime, a action.Action) (payload map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("harness: runtime panicked", "action", a.Name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			payload, err = nil, action.Errorf(action.CodeInternal, "%s failed with an internal error", a.Name)
		}
	}()
	return rt.Run(ctx, a)
}

func (h *Harness) fail(id, name string, src action.Source, err *action.Error) action.Observation {
	return action.Observation{ActionID: id, Action: name, Source: src, Status: statusFor(err.Code), Code: err.Code, Message: err.Message}
}

// statusFor maps a code to a status through the code table in action.
func statusFor(code action.Code) action.Status { return code.Status() }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// eventFrame holds what every event of one action shares.
type eventFrame struct {
	h         *Harness
	ctx       context.Context
	a         *action.Action
	id        string
	principal string
	phase     policy.Phase
	decision  policy.Decision
	input     any
	modified  any    // the input as a guard step modified it
	approval  string // the approval an ask created
	// req is the guard's request, whose governance snapshot every event
	// carries (as decided, then as counted).
	req *policy.Request
	// held is an event the subscribers have and the recorder does not
	// yet: the next emit records it first, in the same write.
	held    ahp.Event
	holding bool
}

// emit builds one event and hands it to the recorder and the subscribers.
// It returns the recorder's error, the one that can refuse an action.
func (f *eventFrame) emit(t ahp.EventType, obs *action.Observation, durable bool) error {
	h := f.h
	if h.recorder == nil && len(h.subscribers) == 0 {
		return nil
	}
	ev := f.build(t, obs)
	var recErr error
	switch {
	case f.holding:
		f.holding = false
		recErr = h.batch.RecordAll(f.ctx, []ahp.Event{f.held, ev}, durable)
	case h.recorder != nil:
		recErr = h.recorder.Record(f.ctx, ev, durable)
	}
	if recErr != nil {
		h.log.Error("harness: audit record failed", "action", f.a.Name, "action_id", f.id, "event", string(t), "err", recErr)
	}
	f.publish(ev)
	return recErr
}

// hold builds one event and hands it to the subscribers; the recorder gets
// it with the next event emitted (see BatchRecorder).
func (f *eventFrame) hold(t ahp.EventType) {
	f.held, f.holding = f.build(t, nil), true
	f.publish(f.held)
}

// publish hands ev to the subscribers.
func (f *eventFrame) publish(ev ahp.Event) {
	for _, s := range f.h.subscribers {
		if err := s.Emit(f.ctx, ev); err != nil {
			f.h.log.Warn("harness: event subscriber failed", "event", string(ev.EventType), "err", err)
		}
	}
}

// build builds one event of the action.
func (f *eventFrame) build(t ahp.EventType, obs *action.Observation) ahp.Event {
	h := f.h
	p := &ahp.ActionPayload{
		ActionID: f.id, Action: f.a.Name, Tenant: f.a.Tenant, TaskID: f.a.TaskID, StepID: f.a.StepID,
		Principal: f.principal, Trusted: f.a.Trusted, Phase: string(f.phase), ApprovalID: f.approval,
	}
	if t == ahp.PreAction {
		p.Input, p.ModifiedInput = f.input, f.modified
		if f.decision.Plain() {
			p.Decision = &plainAllow // shared: sinks never change a payload
		} else {
			p.Decision = f.decision.Info()
		}
	}
	if obs != nil {
		p.Observation = summarize(h.sanitizer, obs)
	}
	if f.req != nil {
		f.req.Governance.SnapshotTo(&p.Governance) // a value: no allocation
	}
	agent := f.a.AgentID
	if agent == "" {
		agent = h.agentID
	}
	return ahp.Event{
		Version: ahp.Version, EventID: f.id + "." + string(t), EventType: t,
		SessionID: f.a.SessionID, AgentID: agent, Timestamp: time.Now().UTC(),
		Depth: depthFrom(f.ctx), Payload: p,
	}
}

// plainAllow is the decision of every action the guard plainly allowed.
var plainAllow = action.Decision{Step: "guard", Outcome: string(policy.Allow)}

// sanitizeInput fills the input the events carry: the input as given and,
// when a guard step modified it, the input that runs.
func (f *eventFrame) sanitizeInput(req *policy.Request, given action.Action) {
	if f.decision.Outcome != policy.Modify {
		f.input = req.SanitizedInput()
		return
	}
	var sensitive []string
	if req.Schema != nil {
		sensitive = req.Schema.Sensitive
	}
	f.input = f.h.sanitizer.Value(given.Input, sensitive)
	f.modified = req.SanitizedInput()
}

// summarize is what an event says of an observation: never the payload
// itself, only its keys.
func summarize(s Sanitizer, o *action.Observation) *ahp.ObservationSummary {
	sum := &ahp.ObservationSummary{
		Source: string(o.Source), Status: string(o.Status), Code: string(o.Code), LatencyMS: o.LatencyMS,
	}
	if o.Message != "" {
		sum.Message = s.String(o.Message)
	}
	if len(o.Payload) > 0 {
		keys := make([]string, 0, len(o.Payload))
		for k := range o.Payload {
			keys = append(keys, s.String(k)) // a runtime may key a payload by data
		}
		sort.Strings(keys)
		sum.PayloadKeys = keys
		if r, ok := o.Payload[RedactedKey].(ahp.Redaction); ok {
			sum.Redacted = &r
		}
	}
	return sum
}

// ask plans an action the guard wants a person to approve, stores it as a
// pending approval, and returns the needs_confirmation observation. Nothing
// runs. A plan that fails is the observation instead (a preview of a path
// that will be refused gets no approval).
func (h *Harness) ask(ctx context.Context, a action.Action, sc *schema.ActionSchema, d policy.Decision, obs action.Observation) action.Observation {
	obs.Source, obs.Status, obs.Code, obs.Message = action.SourcePolicy, action.StatusNeedsConfirmation, action.CodeApprovalRequired, d.Message
	plan, err := h.Plan(ctx, a)
	preview := plan.Preview
	if err != nil {
		obs.Source, obs.Code, obs.Message = action.SourceHarness, action.CodeOf(err), action.MessageOf(err)
		obs.Status = obs.Code.Status()
		return obs
	}
	if h.approvals == nil {
		obs.Message = d.Message + " (no approval service is configured, so nobody can approve it)"
		return obs
	}
	hash, err := a.Hash()
	if err != nil {
		obs.Status, obs.Code, obs.Message = action.StatusBlocked, action.CodeInvalidInput, "action cannot be hashed: "+err.Error()
		return obs
	}
	a.Trusted = false
	var input any
	if h.sanitizer != nil && sc != nil {
		input = h.sanitizer.Value(a.Input, sc.Sensitive)
	}
	ap, err := h.approvals.Request(ctx, PendingApproval{
		ActionID: obs.ActionID, Action: a, ActionHash: hash, Principal: PrincipalFrom(ctx),
		Input: input, Preview: preview, Preconditions: plan.Preconditions, Decision: *d.Info(), Created: time.Now().UTC(),
	})
	if err != nil {
		obs.Source, obs.Status, obs.Code = action.SourceHarness, action.StatusError, action.CodeInternal
		obs.Message = "the approval cannot be stored, so the action waits for nobody: " + err.Error()
		return obs
	}
	obs.Approval = &ap
	return obs
}
