package supervisor

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/policy"
)

// stuckClient never delivers a notification until released.
type stuckClient struct {
	release chan struct{}
	got     chan ahp.WireEvent
}

func (c *stuckClient) Send(context.Context, ahp.WireEvent) (ahp.Decision, error) {
	return ahp.Decision{Kind: ahp.Allow}, nil
}

func (c *stuckClient) Notify(ctx context.Context, ev ahp.WireEvent) error {
	select {
	case <-c.release:
		c.got <- ev
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *stuckClient) Close() error { return nil }

// TestTelemetryDropsTheOldestWhenFull: a harness that does not take
// notifications never slows the loop; beyond the queue, the oldest events
// are dropped and counted, and the newest are the ones delivered.
func TestTelemetryDropsTheOldestWhenFull(t *testing.T) {
	c := &stuckClient{release: make(chan struct{}), got: make(chan ahp.WireEvent, 100)}
	s := New(c, Options{QueueSize: 4, Timeout: 5 * time.Second})
	start := time.Now()
	for i := 0; i < 20; i++ {
		_ = s.Emit(context.Background(), ahp.Event{EventType: ahp.PostAction, SessionID: "s", AgentID: "a",
			Timestamp: time.Unix(int64(i), 0), Payload: &ahp.ActionPayload{Action: "workspace_read_file", StepID: string(rune('a' + i))}})
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Emit blocked for %s", d)
	}
	// One event may be in the sender's hands; the queue holds the 4 newest.
	if st := s.Stats(); st.Dropped < 20-4-1 || st.Dropped > 20-4 {
		t.Fatalf("dropped %d, want %d or %d", st.Dropped, 20-4-1, 20-4)
	}
	close(c.release)
	// The queue's 4 newest arrive (after the one the sender held, if any).
	newest := time.Unix(19, 0).UTC().Format(time.RFC3339Nano)
	var stamps []string
	for !slices.Contains(stamps, newest) {
		select {
		case ev := <-c.got:
			stamps = append(stamps, ev.Timestamp)
		case <-time.After(5 * time.Second):
			t.Fatalf("the newest event was not delivered: %v", stamps)
		}
	}
	if len(stamps) > 5 {
		t.Fatalf("delivered %d events, want the 4 kept (and one in flight): %v", len(stamps), stamps)
	}
	if err := s.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// failingClient fails every exchange.
type failingClient struct{ err error }

func (c failingClient) Send(context.Context, ahp.WireEvent) (ahp.Decision, error) {
	return ahp.Decision{}, c.err
}
func (c failingClient) Notify(context.Context, ahp.WireEvent) error { return c.err }
func (c failingClient) Close() error                                { return nil }

func TestStepFailsClosed(t *testing.T) {
	s := New(failingClient{errors.New("connection refused")}, Options{})
	defer s.Close(context.Background())
	req := &policy.Request{Action: action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a"}}}
	d := s.Step().Fn(context.Background(), req)
	if d.Outcome != policy.Deny || d.Code != action.CodeHarnessBlocked {
		t.Fatalf("%+v", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if d := s.Step().Fn(ctx, req); d.Allowed() {
		t.Fatalf("a canceled request was allowed: %+v", d)
	}
}

// BenchmarkStepOverUnix measures what the external-harness guard step
// adds to an action: one pre_action round trip over a Unix socket to a
// harness that allows everything (the handler's own time is nil).
func BenchmarkStepOverUnix(b *testing.B) {
	dir, err := os.MkdirTemp("", "supb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "h.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	srv := ahp.NewServer(ahp.HandlerFunc(func(context.Context, *ahp.WireEvent) (ahp.Decision, error) {
		return ahp.Decision{Kind: ahp.Allow}, nil
	}), ahp.ServerOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, ln)
	c, err := ahp.Dial(ctx, ahp.ClientOptions{Transport: ahp.TransportUnix, Socket: sock})
	if err != nil {
		b.Fatal(err)
	}
	s := New(c, Options{})
	defer s.Close(context.Background())
	step := s.Step()
	req := &policy.Request{Action: action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "README.md"}, SessionID: "s"}}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if d := step.Fn(context.Background(), req); !d.Allowed() {
			b.Fatalf("%+v", d)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
