//go:build linux && !race

// The race detector changes how the scheduler treats the goroutines it
// runs (under it, the reader here is never preempted, yields or not): the
// Makefile runs this test again without it.

package bridge

import (
	"bufio"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/stretchr/testify/require"
)

// preemptionsWhileServing serves calls of a tool that answers at once, one
// at a time for d, over pipes whose server ends block, and counts the
// preemption signals the process receives meanwhile.
func preemptionsWhileServing(t *testing.T, d time.Duration) (signals, calls int) {
	srv := serverWithReadTool(t, "now", func(context.Context) (map[string]any, error) {
		return map[string]any{"ok": true}, nil
	})
	in, out, req, respFile := testkit.BlockingPipes(t)
	served := make(chan error, 1)
	go func() {
		err := srv.ServeStdio(context.Background(), in, out)
		out.Close()
		served <- err
	}()
	resp := bufio.NewReader(respFile)
	call := func(line string) string {
		_, err := fmt.Fprintln(req, line)
		require.NoError(t, err)
		answer, err := resp.ReadString('\n')
		require.NoError(t, err)
		return answer
	}
	call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	_, err := fmt.Fprintln(req, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	require.NoError(t, err)
	signals = testkit.Preemptions(func() {
		for start := time.Now(); time.Since(start) < d; calls++ {
			answer := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"now","arguments":{}}}`, calls+1))
			require.Contains(t, answer, `"status":"ok"`)
		}
	})
	req.Close()
	require.NoError(t, <-served)
	return signals, calls
}

// TestStdioReaderYieldsToTheScheduler: the goroutine that reads the input
// and answers the calls itself passes through the scheduler often enough
// that the runtime's monitor never takes it for one that will not yield
// (see tune.Yielder). Without the yields (the control), the monitor
// preempts it about every 10 ms.
func TestStdioReaderYieldsToTheScheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("serves calls for 1 s")
	}
	testkit.CheckYields(t, func(t *testing.T) (int, int) { return preemptionsWhileServing(t, 500*time.Millisecond) })
}
