//go:build linux && !race

// The race detector changes how the scheduler treats the goroutines it
// runs (under it, the reader here is never preempted, yields or not): the
// Makefile runs this test again without it.

package bridge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// preemptionsWhileServing serves calls of a tool that answers at once, one
// at a time for d, over pipes whose server ends block (as the stdin and
// stdout a client hands its child do), and counts the SIGURG signals the
// process receives meanwhile: the runtime's monitor sends one to preempt a
// goroutine it believes has run for 10 ms without a turn of the scheduler
// (and the garbage collector one to each goroutine it must stop).
func preemptionsWhileServing(t *testing.T, d time.Duration) (signals, calls int) {
	cfg := testConfig(t, "harness: {}\n")
	cfg.Harness.Workspace.Root = t.TempDir()
	h, closeFn, err := buildHarness(cfg, nil)
	require.NoError(t, err)
	defer closeFn()
	require.NoError(t, h.Register(runtime.Spec{Name: "now", Description: "answers at once", Risk: schema.RiskRead,
		Input: json.RawMessage(`{"type":"object"}`)}, func(context.Context, map[string]any) (map[string]any, error) {
		return map[string]any{"ok": true}, nil
	}))
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
	require.NoError(t, err)

	// pipe returns its ends; the client's (read end of out, write end of
	// in) go through Go's poller, the server's block in the system call.
	pipe := func(clientReads bool) (r, w *os.File) {
		var fds [2]int
		require.NoError(t, unix.Pipe2(fds[:], unix.O_CLOEXEC))
		client := fds[1]
		if clientReads {
			client = fds[0]
		}
		require.NoError(t, unix.SetNonblock(client, true))
		return os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	}
	inR, inW := pipe(false)
	outR, outW := pipe(true)
	defer outR.Close()
	served := make(chan error, 1)
	go func() {
		err := srv.ServeStdio(context.Background(), inR, outW)
		inR.Close()
		outW.Close()
		served <- err
	}()

	urg := make(chan os.Signal, 1024)
	var counting atomic.Bool
	var count atomic.Int64
	signal.Notify(urg, unix.SIGURG)
	defer signal.Stop(urg)
	go func() {
		for range urg {
			if counting.Load() {
				count.Add(1)
			}
		}
	}()

	resp := bufio.NewReader(outR)
	send := func(line string) {
		_, err := fmt.Fprintln(inW, line)
		require.NoError(t, err)
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	_, err = resp.ReadBytes('\n')
	require.NoError(t, err)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The collector, which signals goroutines to scan their stacks, is
	// off while the signals are counted.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	counting.Store(true)
	for start := time.Now(); time.Since(start) < d; calls++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"now","arguments":{}}}`, calls+1))
		line, err := resp.ReadBytes('\n')
		require.NoError(t, err)
		require.Contains(t, string(line), `"status":"ok"`)
	}
	counting.Store(false)
	inW.Close()
	require.NoError(t, <-served)
	return int(count.Load()), calls
}

// TestStdioReaderYieldsToTheScheduler: the goroutine that reads the input
// and answers the calls itself passes through the scheduler often enough
// that the runtime's monitor never takes it for one that will not yield.
// Without the yields (the control), the monitor preempts it about every
// 10 ms.
func TestStdioReaderYieldsToTheScheduler(t *testing.T) {
	if testing.Short() {
		t.Skip("serves calls for 1 s")
	}
	const d = 500 * time.Millisecond
	signals, calls := preemptionsWhileServing(t, d)
	t.Logf("with yields: %d calls, %d SIGURG", calls, signals)

	saved := yieldScheduler
	yieldScheduler = func() {}
	defer func() { yieldScheduler = saved }()
	without, wcalls := preemptionsWhileServing(t, d)
	t.Logf("without: %d calls, %d SIGURG", wcalls, without)

	if without < 4 {
		t.Skipf("without yields, only %d preemption signals in %v: this machine cannot tell", without, d)
	}
	if signals > without/4 {
		t.Errorf("%d preemption signals in %v of calls, against %d without yields: the reader is preempted as a goroutine that never yields", signals, d, without)
	}
}
