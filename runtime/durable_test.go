package runtime

import (
	"context"
	"errors"
	"sync"
	"testing"

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
