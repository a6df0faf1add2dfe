// Package supervisor lets an external AHP harness supervise Harness's own
// actions (harness.ahp.supervisor): a guard step sends each request's
// sanitized pre_action to the harness and enforces its decision, and the
// actions' post_action and error events go to it as notifications.
//
// It fails closed: a harness that cannot be reached, answers too late,
// speaks another protocol version or answers nonsense refuses the action
// (harness_blocked, the reason saying why). Telemetry never slows the
// agent's loop: it waits in a bounded queue, and when the queue is full
// the oldest event is dropped and counted.
package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/policy"
)

// Client is the connection to the harness: what the supervisor needs of
// an AHP client (ahp.Client satisfies it).
type Client interface {
	// Send sends a blocking event and returns the harness's decision.
	Send(ctx context.Context, ev ahp.WireEvent) (ahp.Decision, error)
	// Notify sends a notification.
	Notify(ctx context.Context, ev ahp.WireEvent) error
	Close() error
}

// StepName is the guard step's name, as decisions and audit records show it.
const StepName = "ahp_supervisor"

// Options configure a Supervisor.
type Options struct {
	// Timeout bounds each exchange (default 2 s).
	Timeout time.Duration
	// MaxDefers bounds how often one action is deferred before it is
	// refused (default 3); MaxDeferDelay caps each wait (default 10 s).
	MaxDefers     int
	MaxDeferDelay time.Duration
	// QueueSize bounds the notifications waiting to be sent (default 1024).
	QueueSize int
	// Logger receives what went wrong with telemetry; nil: discarded.
	Logger *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// Supervisor consults one external harness.
type Supervisor struct {
	c    Client
	opts Options

	queue   chan ahp.WireEvent
	dropped atomic.Uint64
	sent    atomic.Uint64
	failed  atomic.Uint64
	done    chan struct{}
	closing sync.Once

	mu       sync.Mutex
	sessions map[string]string // session id -> agent id, for session_end
}

// New returns a Supervisor over c; it starts the telemetry sender.
func New(c Client, opts Options) *Supervisor {
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	if opts.MaxDefers <= 0 {
		opts.MaxDefers = 3
	}
	if opts.MaxDeferDelay <= 0 {
		opts.MaxDeferDelay = 10 * time.Second
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 1024
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Supervisor{c: c, opts: opts, queue: make(chan ahp.WireEvent, opts.QueueSize), done: make(chan struct{}),
		sessions: map[string]string{}}
	go s.send()
	return s
}

// Step is the guard step that consults the harness.
func (s *Supervisor) Step() policy.Step { return policy.Step{Name: StepName, Fn: s.decide} }

// maxSessions bounds the sessions remembered for session_end.
const maxSessions = 10000

func (s *Supervisor) decide(ctx context.Context, req *policy.Request) policy.Decision {
	a := &req.Action
	s.sessionStart(a)
	args := req.SanitizedInput()
	if args == nil {
		args = map[string]any{}
	}
	extra := map[string]any{"action": a.Name, "phase": string(req.Phase)}
	for k, v := range map[string]string{"action_id": a.ID, "tenant": a.Tenant, "task_id": a.TaskID, "step_id": a.StepID, "principal": req.Principal} {
		if v != "" {
			extra[k] = v
		}
	}
	if req.Schema != nil {
		extra["risk"] = string(req.Schema.Risk)
	}
	payload, err := ahp.NewPreAction(a.Name, args, extra)
	if err != nil {
		return blocked("the pre_action for the AHP supervisor could not be built: " + err.Error())
	}
	ev := s.event(ahp.PreAction, a, payload)
	for n := 0; ; n++ {
		d, err := s.ask(ctx, ev)
		if err != nil {
			if ctx.Err() != nil {
				return policy.GaveUp(ctx, "the AHP supervisor")
			}
			return blocked("the AHP supervisor could not be consulted (" + err.Error() + "); every action is refused until it answers")
		}
		switch d.Kind {
		case ahp.Allow:
			if len(d.ModifiedPayload) > 0 {
				return s.modified(a.Name, d.ModifiedPayload)
			}
			return policy.Decision{}
		case ahp.Modify:
			return s.modified(a.Name, d.ModifiedPayload)
		case ahp.Block:
			return blocked("the AHP supervisor blocked " + a.Name + ": " + reasonOr(d.Reason, "no reason given"))
		case ahp.Escalate:
			msg := "the AHP supervisor asks a person to approve " + a.Name + ": " + reasonOr(d.Reason, "no reason given")
			if d.EscalationTarget != "" {
				msg += " (escalated to " + d.EscalationTarget + ")"
			}
			return policy.Decision{Outcome: policy.Ask, Code: action.CodeApprovalRequired, Message: msg}
		case ahp.Defer:
			if n >= s.opts.MaxDefers {
				return blocked(fmt.Sprintf("the AHP supervisor deferred %s %d times; refused (%s)", a.Name, n+1, reasonOr(d.Reason, "no reason given")))
			}
			delay := min(time.Duration(d.RetryAfterMS)*time.Millisecond, s.opts.MaxDeferDelay)
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return policy.GaveUp(ctx, "the AHP supervisor")
			case <-t.C:
			}
			ev.Timestamp = s.opts.Now().UTC().Format(time.RFC3339Nano)
		default:
			return blocked(fmt.Sprintf("the AHP supervisor answered an unknown decision %q", d.Kind))
		}
	}
}

// ask sends ev within the configured timeout.
func (s *Supervisor) ask(ctx context.Context, ev ahp.WireEvent) (ahp.Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	d, err := s.c.Send(ctx, ev)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("no answer within %s", s.opts.Timeout)
	}
	return d, err
}

// modified is the decision for a harness's modified payload: the new
// arguments (the guard validates them against the schema again). The
// payload is a pre_action payload; a tool named in it must be the same.
func (s *Supervisor) modified(name string, mp json.RawMessage) policy.Decision {
	call, err := ahp.ReadPreAction(mp)
	if err != nil {
		// A payload without a tool: its arguments alone.
		var only struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(mp, &only) != nil || len(only.Arguments) == 0 {
			return blocked("the AHP supervisor's modified payload is not a pre_action payload with arguments: " + err.Error())
		}
		call = &ahp.PreActionPayload{Tool: name, Arguments: only.Arguments}
	}
	if call.Tool != name {
		return blocked(fmt.Sprintf("the AHP supervisor's modified payload names tool %q for action %s", call.Tool, name))
	}
	var in map[string]any
	if err := json.Unmarshal(call.Arguments, &in); err != nil || in == nil {
		return blocked("the AHP supervisor's modified arguments are not an object")
	}
	return policy.Decision{Outcome: policy.Modify, Input: in, Message: "arguments modified by the AHP supervisor"}
}

func blocked(msg string) policy.Decision {
	return policy.Decision{Outcome: policy.Deny, Code: action.CodeHarnessBlocked, Message: msg}
}

func reasonOr(r, def string) string {
	if r == "" {
		return def
	}
	return r
}

func (s *Supervisor) event(t ahp.EventType, a *action.Action, payload json.RawMessage) ahp.WireEvent {
	return ahp.WireEvent{EventType: t, SessionID: a.SessionID, AgentID: agentOf(a), Timestamp: s.opts.Now().UTC().Format(time.RFC3339Nano),
		Payload: payload}
}

func agentOf(a *action.Action) string {
	if a.AgentID != "" {
		return a.AgentID
	}
	return "harness"
}

// sessionStart sends session_start the first time a session is seen (a
// failure to deliver it is counted; the pre_action that follows decides).
func (s *Supervisor) sessionStart(a *action.Action) {
	if a.SessionID == "" {
		return
	}
	s.mu.Lock()
	_, seen := s.sessions[a.SessionID]
	if !seen && len(s.sessions) < maxSessions {
		s.sessions[a.SessionID] = agentOf(a)
	}
	s.mu.Unlock()
	if !seen {
		// Sent before the session's first pre_action, not queued behind it.
		s.deliver(s.event(ahp.SessionStart, a, json.RawMessage(`{}`)))
	}
}

// Emit sends an action's post_action and error events to the harness as
// notifications (it is an ahp.Sink: subscribe it to the Harness). It never
// blocks.
func (s *Supervisor) Emit(_ context.Context, ev ahp.Event) error {
	if ev.EventType != ahp.PostAction && ev.EventType != ahp.Error {
		return nil
	}
	var tool string
	if ev.Payload != nil {
		tool = ev.Payload.Action
	}
	body, err := json.Marshal(ev.Payload)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(body, &m) != nil || m == nil {
		m = map[string]any{}
	}
	m["tool_name"], m["tool"] = tool, tool
	payload, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	s.enqueue(ahp.WireEvent{EventType: ev.EventType, SessionID: ev.SessionID, AgentID: ev.AgentID,
		Timestamp: ev.Timestamp.UTC().Format(time.RFC3339Nano), Depth: uint32(max(ev.Depth, 0)), Payload: payload})
	return nil
}

// enqueue adds ev to the telemetry queue, dropping the oldest event when
// it is full.
func (s *Supervisor) enqueue(ev ahp.WireEvent) {
	for {
		select {
		case s.queue <- ev:
			return
		default:
		}
		select {
		case <-s.queue:
			s.dropped.Add(1)
		default:
		}
	}
}

// send delivers the queued telemetry until Close.
func (s *Supervisor) send() {
	for {
		select {
		case ev := <-s.queue:
			s.deliver(ev)
		case <-s.done:
			return
		}
	}
}

func (s *Supervisor) deliver(ev ahp.WireEvent) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	if err := s.c.Notify(ctx, ev); err != nil {
		s.failed.Add(1)
		s.opts.Logger.Debug("ahp supervisor: a notification was not delivered", "event", string(ev.EventType), "err", err)
		return
	}
	s.sent.Add(1)
}

// Stats are the telemetry counters.
type Stats struct {
	Sent, Failed, Dropped uint64
}

// Stats returns the telemetry counters: delivered, failed, and dropped
// because the queue was full.
func (s *Supervisor) Stats() Stats {
	return Stats{Sent: s.sent.Load(), Failed: s.failed.Load(), Dropped: s.dropped.Load()}
}

// Close sends session_end for the sessions seen and what is queued
// (bounded by ctx), then closes the connection.
func (s *Supervisor) Close(ctx context.Context) error {
	var err error
	s.closing.Do(func() {
		close(s.done)
		s.mu.Lock()
		for id, agent := range s.sessions {
			a := action.Action{SessionID: id, AgentID: agent}
			s.enqueue(s.event(ahp.SessionEnd, &a, json.RawMessage(`{}`)))
		}
		s.mu.Unlock()
	drain:
		for ctx.Err() == nil {
			select {
			case ev := <-s.queue:
				s.deliver(ev)
			default:
				break drain
			}
		}
		err = s.c.Close()
	})
	return err
}
