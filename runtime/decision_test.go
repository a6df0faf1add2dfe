package runtime

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/schema"
)

// harnessWith builds a Harness whose guard has one extra validating step
// answering d, an approvals store that keeps what it is given, and an
// "echo" builtin that counts its runs.
func harnessWith(t *testing.T, d func(*policy.Request) policy.Decision) (*Harness, *fakeApprovals, *collector, *int) {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte("harness: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	reg := schema.Catalog()
	step := policy.Step{Name: "test_step", Fn: func(_ context.Context, r *policy.Request) policy.Decision { return d(r) }}
	ap := &fakeApprovals{}
	h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions(), policy.Steps{Validating: []policy.Step{step}}),
		Sanitizer: s, Approvals: ap})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	type in struct {
		Text string `json:"text"`
	}
	if err := RegisterFunc(h, Spec{Name: "echo", Description: "echo"}, func(_ context.Context, i in) (map[string]any, error) {
		runs++
		return map[string]any{"text": i.Text}, nil
	}); err != nil {
		t.Fatal(err)
	}
	events := &collector{}
	h.Subscribe(events)
	return h, ap, events, &runs
}

type fakeApprovals struct {
	mu  sync.Mutex
	got []PendingApproval
}

func (f *fakeApprovals) Request(_ context.Context, p PendingApproval) (action.Approval, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, p)
	return action.Approval{ID: "apr_test", ExpiresAt: time.Now().Add(time.Minute).Format(time.RFC3339), Preview: p.Preview}, nil
}

func echoAction(text string) action.Action {
	return action.Action{Name: "echo", Input: map[string]any{"text": text}}
}

func TestExecutePlainAllowCarriesNoDecision(t *testing.T) {
	h, _, events, runs := harnessWith(t, func(*policy.Request) policy.Decision { return policy.Decision{} })
	obs := h.Execute(context.Background(), echoAction("hi"))
	if obs.Status != action.StatusOK || obs.Decision != nil || *runs != 1 {
		t.Fatalf("%s", obs.JSON())
	}
	pre := events.byType(ahp.PreAction)
	if len(pre) != 1 || pre[0].Payload.Decision == nil || pre[0].Payload.Decision.Outcome != "allow" || pre[0].Payload.Phase != "direct" {
		t.Fatalf("the audit record of every action carries the decision and phase: %+v", pre[0].Payload)
	}
}

func TestExecuteDenyCarriesStepRuleAndReason(t *testing.T) {
	h, _, events, runs := harnessWith(t, func(*policy.Request) policy.Decision {
		return policy.Decision{Outcome: policy.Deny, Code: action.CodeRuleDenied, Rule: "no-echo", Message: "echo is off today"}
	})
	obs := h.Execute(context.Background(), echoAction("hi"))
	if obs.Status != action.StatusBlocked || obs.Code != action.CodeRuleDenied || obs.Source != action.SourcePolicy || *runs != 0 {
		t.Fatalf("%s", obs.JSON())
	}
	want := action.Decision{Step: "test_step", Rule: "no-echo", Outcome: "deny", Reason: "echo is off today"}
	if obs.Decision == nil || *obs.Decision != want {
		t.Fatalf("decision %+v, want %+v", obs.Decision, want)
	}
	if d := events.byType(ahp.PreAction)[0].Payload.Decision; d == nil || *d != want {
		t.Fatalf("audited decision %+v", d)
	}
}

func TestExecuteAskPlansStoresAndRunsNothing(t *testing.T) {
	h, ap, events, runs := harnessWith(t, func(*policy.Request) policy.Decision { return policy.AskWith("a person decides") })
	obs := h.Execute(WithPrincipal(context.Background(), "alice"), echoAction("hi"))
	if obs.Status != action.StatusNeedsConfirmation || obs.Code != action.CodeApprovalRequired || *runs != 0 {
		t.Fatalf("%s", obs.JSON())
	}
	if obs.Approval == nil || obs.Approval.ID != "apr_test" || obs.Approval.Preview == nil {
		t.Fatalf("approval %+v", obs.Approval)
	}
	if len(ap.got) != 1 || ap.got[0].Principal != "alice" || ap.got[0].ActionHash == "" || ap.got[0].Action.Trusted {
		t.Fatalf("pending %+v", ap.got)
	}
	if obs.Decision == nil || obs.Decision.Outcome != "ask" {
		t.Fatalf("decision %+v", obs.Decision)
	}
	if id := events.byType(ahp.PreAction)[0].Payload.ApprovalID; id != "apr_test" {
		t.Fatalf("the audit record links the approval: %q", id)
	}
	if obs.Code.ExitCode() != 4 {
		t.Fatal("needs_confirmation exits 4")
	}
}

func TestExecuteModifyRunsTheNewInputAndAuditsBoth(t *testing.T) {
	h, _, events, runs := harnessWith(t, func(r *policy.Request) policy.Decision {
		return policy.Decision{Outcome: policy.Modify, Input: map[string]any{"text": "changed"}, Message: "softened"}
	})
	obs := h.Execute(context.Background(), echoAction("original"))
	if obs.Status != action.StatusOK || obs.Payload["text"] != "changed" || *runs != 1 {
		t.Fatalf("%s", obs.JSON())
	}
	if obs.Decision == nil || obs.Decision.Outcome != "modify" || obs.Decision.Step != "test_step" {
		t.Fatalf("decision %+v", obs.Decision)
	}
	p := events.byType(ahp.PreAction)[0].Payload
	in, _ := p.Input.(map[string]any)
	mod, _ := p.ModifiedInput.(map[string]any)
	if in["text"] != "original" || mod["text"] != "changed" {
		t.Fatalf("audit shows input %v and modified %v", p.Input, p.ModifiedInput)
	}
}

func TestExecuteInvalidModificationIsRefused(t *testing.T) {
	h, _, _, runs := harnessWith(t, func(r *policy.Request) policy.Decision {
		return policy.Decision{Outcome: policy.Modify, Input: map[string]any{"text": 42}}
	})
	obs := h.Execute(context.Background(), echoAction("x"))
	if obs.Code != action.CodeInvalidInput || *runs != 0 {
		t.Fatalf("%s", obs.JSON())
	}
}

func TestExecuteIgnoresTheCallersActionID(t *testing.T) {
	h, _, events, _ := harnessWith(t, func(*policy.Request) policy.Decision { return policy.Decision{} })
	a := echoAction("x")
	a.ID = "tok-someone-elses"
	obs := h.Execute(context.Background(), a)
	if obs.ActionID == a.ID || events.byType(ahp.PreAction)[0].Payload.ActionID == a.ID {
		t.Fatalf("the caller named the action: %s", obs.ActionID)
	}
	obs = h.Execute(WithActionID(context.Background(), "tok-mine"), echoAction("x"))
	if obs.ActionID != "tok-mine" {
		t.Fatalf("WithActionID: %s", obs.ActionID)
	}
}

func TestExecutePhaseReachesTheGuard(t *testing.T) {
	var seen []policy.Phase
	h, _, _, _ := harnessWith(t, func(r *policy.Request) policy.Decision {
		seen = append(seen, r.Phase)
		return policy.Decision{}
	})
	h.Execute(context.Background(), echoAction("x"))
	h.Execute(WithPhase(context.Background(), policy.PhaseExecute), echoAction("x"))
	if len(seen) != 2 || seen[0] != policy.PhaseDirect || seen[1] != policy.PhaseExecute {
		t.Fatalf("phases %v", seen)
	}
}

// A write is waited for when its context ends: the observation says what
// happened, never "timeout" for a write that lands.
func TestExecuteWaitsForAWriteWhenTheContextEnds(t *testing.T) {
	h := newTestHarness(t, "harness:\n  auto-approved-actions: [slow_write]\n", config.WithActions("slow_write"))
	landed := make(chan struct{})
	type in struct{}
	err := RegisterFunc(h, Spec{Name: "slow_write", Description: "w", Risk: schema.RiskWrite},
		func(ctx context.Context, _ in) (map[string]any, error) {
			time.Sleep(50 * time.Millisecond) // past the deadline, not interruptible
			close(landed)
			return map[string]any{"written": true}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	obs := h.Execute(ctx, action.Action{Name: "slow_write", Input: map[string]any{}})
	select {
	case <-landed:
	default:
		t.Fatal("Execute answered before the write finished")
	}
	if obs.Status != action.StatusOK || obs.Payload["written"] != true {
		t.Fatalf("the write landed, so the observation must say ok: %s", obs.JSON())
	}
}

func TestExecuteCanceledVersusTimeout(t *testing.T) {
	h := newTestHarness(t, "harness: {}\n")
	type in struct{}
	if err := RegisterFunc(h, Spec{Name: "wait", Description: "w"}, func(ctx context.Context, _ in) (map[string]any, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(5 * time.Millisecond); cancel() }()
	if obs := h.Execute(ctx, action.Action{Name: "wait", Input: map[string]any{}}); obs.Code != action.CodeCanceled {
		t.Fatalf("a cancelled context: %s", obs.JSON())
	}
	tctx, tcancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer tcancel()
	if obs := h.Execute(tctx, action.Action{Name: "wait", Input: map[string]any{}}); obs.Code != action.CodeTimeout {
		t.Fatalf("a missed deadline: %s", obs.JSON())
	}
}
