package runtime

import (
	"context"
	"errors"
	"fmt"
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

// orderRecorder notes, for each event, whether it was asked to be durable,
// and can refuse pre_action records.
type orderRecorder struct {
	mu      sync.Mutex
	events  []string // "<event type>:<durable>"
	failPre bool
}

func (r *orderRecorder) Record(_ context.Context, ev ahp.Event, durable bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.EventType == ahp.PreAction && r.failPre {
		return errors.New("disk full")
	}
	d := "buffered"
	if durable {
		d = "durable"
	}
	r.events = append(r.events, string(ev.EventType)+":"+d)
	return nil
}

func (r *orderRecorder) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// TestTrustedChangesAreDurableBeforeTheyRun: a trusted write, command or
// MCP call runs only once its pre_action record was asked to be on stable
// storage; a trusted read runs once its record is in the log, without
// waiting for an fsync; and any trusted action whose pre_action record
// fails does not run (fail closed), reads included.
func TestTrustedChangesAreDurableBeforeTheyRun(t *testing.T) {
	cases := []struct {
		name    string
		a       action.Action
		runtime string
		want    string // the pre_action record the runtime finds made when it runs
	}{
		{"write", action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "a", "content": "x"}, Trusted: true}, schema.RuntimeWorkspace, "pre_action:durable"},
		{"command", action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "make"}, Trusted: true}, schema.RuntimeWorkspace, "pre_action:durable"},
		{"MCP call", action.Action{Name: "mcp_call", Input: map[string]any{"server": "s", "tool": "t"}, Trusted: true}, schema.RuntimeMCP, "pre_action:durable"},
		{"read", action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a"}, Trusted: true}, schema.RuntimeWorkspace, "pre_action:buffered"},
		{"listing", action.Action{Name: "workspace_list_files", Input: map[string]any{}, Trusted: true}, schema.RuntimeWorkspace, "pre_action:buffered"},
	}
	for _, tc := range cases {
		for _, failPre := range []bool{false, true} {
			name := tc.name
			if failPre {
				name += " with the audit log failing"
			}
			t.Run(name, func(t *testing.T) {
				cfg := config.Default()
				s, _ := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef")})
				reg := schema.Catalog()
				rec := &orderRecorder{failPre: failPre}
				h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions()), Sanitizer: s, Recorder: rec})
				if err != nil {
					t.Fatal(err)
				}
				var atRun []string
				ran := false
				h.Mount(tc.runtime, action.SourceWorkspace, RuntimeFunc(func(context.Context, action.Action) (map[string]any, error) {
					ran, atRun = true, rec.seen()
					return map[string]any{}, nil
				}))
				obs := h.Execute(context.Background(), tc.a)
				if failPre {
					if ran || obs.Code != action.CodeInternal {
						t.Fatalf("ran %v, observation %s/%s: a trusted action whose record failed must not run", ran, obs.Status, obs.Code)
					}
					return
				}
				if !ran || !obs.OK() {
					t.Fatalf("ran %v, observation %+v", ran, obs)
				}
				if len(atRun) != 1 || atRun[0] != tc.want {
					t.Fatalf("records made when the runtime ran: %v, want [%s]", atRun, tc.want)
				}
			})
		}
	}
}

// batchRecorder is an orderRecorder that also writes several events at
// once, noting each batch as "[type type …]:<durable>", and can refuse
// batches.
type batchRecorder struct {
	orderRecorder
	failAll bool
}

func (r *batchRecorder) RecordAll(_ context.Context, evs []ahp.Event, durable bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failAll {
		return errors.New("disk full")
	}
	s := "["
	for i, ev := range evs {
		if i > 0 {
			s += " "
		}
		s += string(ev.EventType)
	}
	d := "buffered"
	if durable {
		d = "durable"
	}
	r.events = append(r.events, s+"]:"+d)
	return nil
}

// TestTrustedReadRecordsInOneWrite: with a BatchRecorder, a trusted read
// runs with its pre_action event already given to the subscribers and its
// two records then written together, before the observation is returned;
// if they cannot be written, the result is withheld (an internal error,
// no payload). A trusted change still runs only after its own durable
// pre_action record.
func TestTrustedReadRecordsInOneWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		a      action.Action
		atRun  []string
		after  []string
		change bool
	}{
		{"read", action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a"}, Trusted: true}, nil, []string{"[pre_action post_action]:buffered"}, false},
		{"listing", action.Action{Name: "workspace_list_files", Input: map[string]any{}, Trusted: true}, nil, []string{"[pre_action post_action]:buffered"}, false},
		{"write", action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "a", "content": "x"}, Trusted: true}, []string{"pre_action:durable"}, []string{"pre_action:durable", "post_action:durable"}, true},
	} {
		for _, fail := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/failing=%v", tc.name, fail), func(t *testing.T) {
				cfg := config.Default()
				s, _ := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef")})
				reg := schema.Catalog()
				rec := &batchRecorder{failAll: fail}
				h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions()), Sanitizer: s, Recorder: rec})
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var published []ahp.EventType
				h.Subscribe(ahp.SinkFunc(func(_ context.Context, ev ahp.Event) error {
					mu.Lock()
					published = append(published, ev.EventType)
					mu.Unlock()
					return nil
				}))
				var atRun []string
				var publishedAtRun []ahp.EventType
				h.Mount(schema.RuntimeWorkspace, action.SourceWorkspace, RuntimeFunc(func(context.Context, action.Action) (map[string]any, error) {
					atRun = rec.seen()
					mu.Lock()
					publishedAtRun = append(publishedAtRun, published...)
					mu.Unlock()
					return map[string]any{"content": "secret-free"}, nil
				}))
				obs := h.Execute(context.Background(), tc.a)
				if fmt.Sprint(atRun) != fmt.Sprint(tc.atRun) {
					t.Fatalf("records when it ran: %v, want %v", atRun, tc.atRun)
				}
				if fmt.Sprint(publishedAtRun) != "[pre_action]" {
					t.Fatalf("events the subscribers had when it ran: %v", publishedAtRun)
				}
				if fail && !tc.change {
					if obs.Code != action.CodeInternal || obs.Payload != nil || !strings.Contains(obs.Message, "withheld") {
						t.Fatalf("a read whose records failed: %+v", obs)
					}
					return
				}
				if !obs.OK() {
					t.Fatalf("observation %+v", obs)
				}
				if got := rec.seen(); fmt.Sprint(got) != fmt.Sprint(tc.after) {
					t.Fatalf("records: %v, want %v", got, tc.after)
				}
			})
		}
	}
}

// honouringRuntime is a workspace-like runtime whose reads block until
// released, ignoring their context, and that says (or not) that it honours
// its context.
type honouringRuntime struct {
	honours bool
	release chan struct{}
}

func (r honouringRuntime) Run(context.Context, action.Action) (map[string]any, error) {
	<-r.release
	return map[string]any{}, nil
}

func (r honouringRuntime) HonoursContext() bool { return r.honours }

// TestContextHonouringReadsRunOnTheCallersGoroutine: a read of a runtime
// that honours its context is waited for (the dispatcher trusts it to stop
// when its context ends, and does not hand it to a goroutine it could
// abandon); a read of any other runtime is answered with timeout when its
// context ends, even if the runtime never returns.
func TestContextHonouringReadsRunOnTheCallersGoroutine(t *testing.T) {
	for _, honours := range []bool{true, false} {
		t.Run(fmt.Sprintf("honours=%v", honours), func(t *testing.T) {
			cfg := config.Default()
			s, _ := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef")})
			reg := schema.Catalog()
			h, err := New(Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions()), Sanitizer: s})
			if err != nil {
				t.Fatal(err)
			}
			rt := honouringRuntime{honours: honours, release: make(chan struct{})}
			h.Mount(schema.RuntimeWorkspace, action.SourceWorkspace, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
			defer cancel()
			done := make(chan action.Observation, 1)
			go func() {
				done <- h.Execute(ctx, action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a"}, Trusted: true})
			}()
			select {
			case obs := <-done:
				if honours {
					t.Fatalf("answered %s/%s before the runtime returned: the read was not waited for", obs.Status, obs.Code)
				}
				if obs.Code != action.CodeTimeout {
					t.Fatalf("observation %s/%s, want timeout", obs.Status, obs.Code)
				}
				close(rt.release)
			case <-time.After(300 * time.Millisecond):
				if !honours {
					t.Fatal("a read of a runtime that does not honour its context was not answered when the context ended")
				}
				close(rt.release)
				if obs := <-done; !obs.OK() {
					t.Fatalf("observation %+v", obs)
				}
			}
		})
	}
}
