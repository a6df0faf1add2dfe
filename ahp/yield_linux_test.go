//go:build linux && !race

// The race detector changes how the scheduler treats the goroutines it
// runs: the Makefile runs this test again without it.

package ahp

import (
	"bufio"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/internal/testkit"
)

// preemptionsWhileStreaming serves pre_action events one at a time for d
// over pipes whose server ends block (harness ahp serve --stdio), and
// counts the preemption signals the process receives meanwhile.
func preemptionsWhileStreaming(t *testing.T, d time.Duration, maxConcurrent int) (signals, events int) {
	srv := NewServer(HandlerFunc(func(context.Context, *WireEvent) (Decision, error) {
		return Decision{Kind: Allow}, nil
	}), ServerOptions{MaxConcurrent: maxConcurrent})
	in, out, req, respFile := testkit.BlockingPipes(t)
	served := make(chan error, 1)
	go func() { served <- srv.ServeStream(context.Background(), in, out) }()
	resp := bufio.NewReader(respFile)
	call := func(line string) string {
		t.Helper()
		if _, err := fmt.Fprintln(req, line); err != nil {
			t.Fatal(err)
		}
		answer, err := resp.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return answer
	}
	call(`{"jsonrpc":"2.0","id":"h","method":"ahp/handshake","params":{"protocol_version":"2.4","agent_info":{"framework":"t","version":"1","capabilities":["pre_action"]},"session_id":"s","agent_id":"a"}}`)
	signals = testkit.Preemptions(func() {
		for start := time.Now(); time.Since(start) < d; events++ {
			answer := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ahp/event","params":{"event_type":"pre_action","session_id":"s","agent_id":"a","timestamp":"2026-01-01T00:00:00Z","depth":0,"payload":{"tool":"bash","arguments":{"command":"ls"}}}}`, events))
			if !strings.Contains(answer, `"decision":"allow"`) {
				t.Fatalf("answer %q", answer)
			}
		}
	})
	req.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	return signals, events
}

// TestStreamReaderYieldsToTheScheduler: the goroutine that reads a stream
// passes through the scheduler often enough that the runtime's monitor
// never takes it for one that will not yield (see tune.Yielder), whether
// it answers each event itself (in order) or hands it to a goroutine of
// its own. Without the yields (the control), the monitor preempts it about
// every 10 ms.
func TestStreamReaderYieldsToTheScheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("serves events for 2 s")
	}
	for _, mode := range []struct {
		name string
		max  int
	}{{"in order", 1}, {"concurrent", 0}} {
		t.Run(mode.name, func(t *testing.T) {
			testkit.CheckYields(t, func(t *testing.T) (int, int) {
				return preemptionsWhileStreaming(t, 500*time.Millisecond, mode.max)
			})
		})
	}
}
