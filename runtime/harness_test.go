package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
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

// collector is an in-process subscriber that keeps every event.
type collector struct {
	mu     sync.Mutex
	events []ahp.Event
}

func (c *collector) Emit(_ context.Context, ev ahp.Event) error {
	c.mu.Lock()
	c.events = append(c.events, ev)
	c.mu.Unlock()
	return nil
}

func (c *collector) byType(t ahp.EventType) []ahp.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []ahp.Event
	for _, ev := range c.events {
		if ev.EventType == t {
			out = append(out, ev)
		}
	}
	return out
}

func newTestHarness(t testing.TB, yaml string, opts ...config.Option) *Harness {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(yaml), opts...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	reg := schema.Catalog()
	h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions()), Sanitizer: s})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

type loginInput struct {
	User     string `json:"user"`
	Password string `json:"password"`
	Note     string `json:"note,omitempty"`
}

type loginOutput struct {
	Welcome string `json:"welcome"`
}

func TestBuiltinActionEventsAreSanitized(t *testing.T) {
	h := newTestHarness(t, "harness: {}\n")
	events := &collector{}
	h.Subscribe(events)
	err := RegisterFunc(h, Spec{Name: "login", Description: "log in", Sensitive: []string{"password"}},
		func(ctx context.Context, in loginInput) (loginOutput, error) {
			return loginOutput{Welcome: "hello " + in.User}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	const password = "correct horse battery staple"
	const awsKey = "AKIAIOSFODNN7EXAMPLF"
	obs := h.Execute(context.Background(), action.Action{Name: "login", SessionID: "s-1", TaskID: "t-1", StepID: "3",
		Input: map[string]any{"user": "ann", "password": password, "note": "my key is " + awsKey}})
	if !obs.OK() || obs.Source != action.SourceBuiltin || obs.Payload["welcome"] != "hello ann" {
		t.Fatalf("observation %+v", obs)
	}
	pre, post := events.byType(ahp.PreAction), events.byType(ahp.PostAction)
	if len(pre) != 1 || len(post) != 1 {
		t.Fatalf("events: %d pre_action, %d post_action", len(pre), len(post))
	}
	for _, ev := range []ahp.Event{pre[0], post[0]} {
		if ev.Version != "2.4" || ev.SessionID != "s-1" || ev.AgentID == "" || ev.Timestamp.IsZero() {
			t.Fatalf("event frame %+v", ev)
		}
		if ev.Payload.TaskID != "t-1" || ev.Payload.StepID != "3" || ev.Payload.ActionID != obs.ActionID {
			t.Fatalf("event ids %+v", ev.Payload)
		}
		raw, _ := json.Marshal(ev)
		if strings.Contains(string(raw), password) || strings.Contains(string(raw), awsKey) {
			t.Fatalf("a secret reached an event: %s", raw)
		}
	}
	in := pre[0].Payload.Input.(map[string]any)
	if in["user"] != "ann" || !strings.HasPrefix(in["password"].(string), "hmac-sha256:") {
		t.Fatalf("sanitized input %+v", in)
	}
	if !strings.Contains(in["note"].(string), "hmac-sha256:") {
		t.Fatalf("secret-shaped value not redacted: %v", in["note"])
	}
	sum := post[0].Payload.Observation
	if sum.Status != "ok" || sum.Source != "builtin" {
		t.Fatalf("observation summary %+v", sum)
	}
	if len(sum.PayloadKeys) != 1 || sum.PayloadKeys[0] != "welcome" {
		t.Fatalf("payload keys %v", sum.PayloadKeys)
	}
	if raw, _ := json.Marshal(post[0]); strings.Contains(string(raw), "hello ann") {
		t.Fatal("post_action carries the payload itself")
	}
}

func TestRefusalsAreObservationsWithEvents(t *testing.T) {
	h := newTestHarness(t, "harness: {}\n")
	events := &collector{}
	h.Subscribe(events)
	ran := false
	h.Mount(schema.RuntimeWorkspace, action.SourceWorkspace, RuntimeFunc(func(context.Context, action.Action) (map[string]any, error) {
		ran = true
		return nil, nil
	}))
	cases := []struct {
		name string
		a    action.Action
		code action.Code
	}{
		{"unknown action", action.Action{Name: "no_such_action"}, action.CodeUnknownAction},
		{"invalid input", action.Action{Name: "workspace_read_file", Input: map[string]any{"path": 42}, Trusted: true}, action.CodeInvalidInput},
		{"trust required", action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "a", "content": "x"}}, action.CodeTrustRequired},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := h.Execute(context.Background(), tc.a)
			if obs.Source != action.SourcePolicy || obs.Status != action.StatusBlocked || obs.Code != tc.code {
				t.Fatalf("observation %+v", obs)
			}
		})
	}
	if ran {
		t.Fatal("a runtime ran for a refused action")
	}
	if n := len(events.byType(ahp.PostAction)); n != len(cases) {
		t.Fatalf("%d post_action events for %d refusals", n, len(cases))
	}
}

func TestPanickingToolBecomesInternal(t *testing.T) {
	h := newTestHarness(t, "harness: {}\n")
	if err := h.Register(Spec{Name: "boom"}, func(context.Context, map[string]any) (map[string]any, error) {
		panic("kaboom")
	}); err != nil {
		t.Fatal(err)
	}
	obs := h.Execute(context.Background(), action.Action{Name: "boom"})
	if obs.Status != action.StatusError || obs.Code != action.CodeInternal {
		t.Fatalf("observation %+v", obs)
	}
	if strings.Contains(obs.Message, "kaboom") {
		t.Fatal("panic value leaked to the model")
	}
	// With a cancellable context the tool runs on another goroutine: still caught.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if obs := h.Execute(ctx, action.Action{Name: "boom"}); obs.Code != action.CodeInternal {
		t.Fatalf("observation %+v", obs)
	}
}

func TestDeadlineGivesTimeout(t *testing.T) {
	h := newTestHarness(t, "harness: {}\n")
	release := make(chan struct{})
	defer close(release)
	if err := h.Register(Spec{Name: "stuck"}, func(ctx context.Context, _ map[string]any) (map[string]any, error) {
		<-release // ignores ctx on purpose: the Harness must answer anyway
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	obs := h.Execute(ctx, action.Action{Name: "stuck"})
	if obs.Code != action.CodeTimeout || obs.Status != action.StatusError {
		t.Fatalf("observation %+v", obs)
	}
}

func TestRuntimeErrorCodesAndPayload(t *testing.T) {
	h := newTestHarness(t, "harness: {}\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h.Register(Spec{Name: "outside"}, func(context.Context, map[string]any) (map[string]any, error) {
		return nil, action.Errorf(action.CodePathOutsideRoot, "no")
	}))
	must(h.Register(Spec{Name: "partial"}, func(context.Context, map[string]any) (map[string]any, error) {
		return nil, &action.Error{Code: action.CodeTimeout, Message: "slow", Payload: map[string]any{"stdout": "half"}}
	}))
	must(h.Register(Spec{Name: "plain"}, func(context.Context, map[string]any) (map[string]any, error) {
		return nil, errors.New("disk on fire")
	}))
	if o := h.Execute(context.Background(), action.Action{Name: "outside"}); o.Status != action.StatusBlocked || o.Code != action.CodePathOutsideRoot || o.Source != action.SourceBuiltin {
		t.Fatalf("outside: %+v", o)
	}
	if o := h.Execute(context.Background(), action.Action{Name: "partial"}); o.Code != action.CodeTimeout || o.Payload["stdout"] != "half" {
		t.Fatalf("partial: %+v", o)
	}
	if o := h.Execute(context.Background(), action.Action{Name: "plain"}); o.Code != action.CodeInternal || o.Status != action.StatusError {
		t.Fatalf("plain: %+v", o)
	}
}

type failingRecorder struct{ calls int }

func (f *failingRecorder) Record(context.Context, ahp.Event, bool) error {
	f.calls++
	return errors.New("disk full")
}

func TestTrustedActionFailsClosedWithoutAudit(t *testing.T) {
	cfg := config.Default()
	s, _ := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef")})
	reg := schema.Catalog()
	rec := &failingRecorder{}
	h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions()), Sanitizer: s, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	h.Mount(schema.RuntimeWorkspace, action.SourceWorkspace, RuntimeFunc(func(context.Context, action.Action) (map[string]any, error) {
		ran = true
		return map[string]any{}, nil
	}))
	obs := h.Execute(context.Background(), action.Action{Name: "workspace_list_files", Input: map[string]any{}, Trusted: true})
	if ran || obs.Code != action.CodeInternal || !strings.Contains(obs.Message, "audit") {
		t.Fatalf("trusted action ran without an audit record: ran=%v %+v", ran, obs)
	}
	// An untrusted builtin still runs when the audit log fails: only trusted actions fail closed.
	if err := h.Register(Spec{Name: "noop"}, func(context.Context, map[string]any) (map[string]any, error) { return map[string]any{}, nil }); err != nil {
		t.Fatal(err)
	}
	if obs := h.Execute(context.Background(), action.Action{Name: "noop"}); !obs.OK() {
		t.Fatalf("untrusted action: %+v", obs)
	}
}

func TestConcurrentExecute(t *testing.T) {
	h := newTestHarness(t, "harness: {}\n")
	events := &collector{}
	h.Subscribe(events)
	if err := h.Register(Spec{Name: "echo", Input: json.RawMessage(`{"properties":{"n":{"type":"integer"}}}`)},
		func(_ context.Context, in map[string]any) (map[string]any, error) {
			return map[string]any{"n": in["n"]}, nil
		}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ids := sync.Map{}
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				obs := h.Execute(context.Background(), action.Action{Name: "echo", Input: map[string]any{"n": g*1000 + i}})
				if !obs.OK() || obs.Payload["n"] != g*1000+i {
					t.Errorf("observation %+v", obs)
					return
				}
				if _, dup := ids.LoadOrStore(obs.ActionID, true); dup {
					t.Errorf("duplicate action id %s", obs.ActionID)
				}
			}
		}(g)
	}
	wg.Wait()
	if n := len(events.byType(ahp.PostAction)); n != 800 {
		t.Fatalf("%d post_action events, want 800", n)
	}
}

func BenchmarkExecuteNoop(b *testing.B) {
	h := newTestHarness(b, "harness: {}\n")
	h.Subscribe(ahp.Discard)
	if err := h.Register(Spec{Name: "noop", Input: json.RawMessage(`{"properties":{"text":{"type":"string"},"n":{"type":"integer"}}}`)},
		func(context.Context, map[string]any) (map[string]any, error) { return nil, nil }); err != nil {
		b.Fatal(err)
	}
	a := action.Action{Name: "noop", SessionID: "s", Input: map[string]any{"text": "hello", "n": 3}}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if obs := h.Execute(ctx, a); !obs.OK() {
			b.Fatal(obs)
		}
	}
}

type flagRecorder struct {
	mu    sync.Mutex
	flags map[string]bool // event type -> durable
}

func (f *flagRecorder) Record(_ context.Context, ev ahp.Event, durable bool) error {
	f.mu.Lock()
	f.flags[string(ev.EventType)] = durable
	f.mu.Unlock()
	return nil
}

func TestAuditDurability(t *testing.T) {
	cases := []struct {
		name              string
		a                 action.Action
		wantPre, wantPost bool
	}{
		{"untrusted builtin", action.Action{Name: "noop"}, false, false},
		{"trusted read", action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a"}, Trusted: true}, false, false},
		{"trusted write", action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "a", "content": "x"}, Trusted: true}, true, true},
		{"trusted exec", action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "pwd"}, Trusted: true}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			s, _ := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef")})
			reg := schema.Catalog()
			rec := &flagRecorder{flags: map[string]bool{}}
			h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions()), Sanitizer: s, Recorder: rec})
			if err != nil {
				t.Fatal(err)
			}
			h.Mount(schema.RuntimeWorkspace, action.SourceWorkspace, RuntimeFunc(func(context.Context, action.Action) (map[string]any, error) {
				return map[string]any{}, nil
			}))
			h.Register(Spec{Name: "noop"}, func(context.Context, map[string]any) (map[string]any, error) { return nil, nil })
			if obs := h.Execute(context.Background(), tc.a); !obs.OK() {
				t.Fatalf("observation %+v", obs)
			}
			if rec.flags["pre_action"] != tc.wantPre || rec.flags["post_action"] != tc.wantPost {
				t.Fatalf("durable pre=%v post=%v, want %v %v", rec.flags["pre_action"], rec.flags["post_action"], tc.wantPre, tc.wantPost)
			}
		})
	}
}
