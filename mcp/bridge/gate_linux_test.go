package bridge

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatePipe is a kernel pipe whose read end has a gate, with its watcher.
func gatePipe(t *testing.T) (*inputGate, *watcher, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	watch := &watcher{}
	g := newInputGate(r, watch)
	if g == nil {
		t.Fatal("no gate for a pipe")
	}
	t.Cleanup(func() { g.stop(); watch.stop() })
	return g, watch, w
}

// gatedCall is watchedCall with the gate g.
func gatedCall(w *watcher, g *inputGate) (*handoff, *atomic.Int64) {
	h, passed := watchedCall(w)
	h.gate = g
	return h, passed
}

func timerStarted(w *watcher) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.timer != nil
}

func isReady(g *inputGate) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ready
}

// input writes one byte to the gate's pipe.
func input(t *testing.T, in *os.File) {
	t.Helper()
	if _, err := in.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
}

func watched(w *watcher) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.watched
}

func gateEvents(g *inputGate) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.events
}

// TestGateKeepsTheWatcherAsleepWithoutInput: calls during which nothing
// comes never start the watcher's timer, however long they run; input
// that comes during a call has its reading passed on, not before
// handoffDelay from the call's arming.
func TestGateKeepsTheWatcherAsleepWithoutInput(t *testing.T) {
	g, watch, in := gatePipe(t)
	for i := 0; i < 50; i++ {
		h, passed := gatedCall(watch, g)
		h.arm()
		if !h.keep() || passed.Load() != 0 {
			t.Fatalf("call %d answered at once was passed on", i)
		}
		// The answer's write: armed and kept under the same registration.
		w, _ := gatedCall(watch, g)
		w.arm()
		w.keep()
		g.close()
	}
	long, passed := gatedCall(watch, g)
	armed := time.Now()
	long.arm()
	time.Sleep(5 * handoffDelay)
	if passed.Load() != 0 || timerStarted(watch) {
		t.Fatal("a long call with no input waiting was passed on, or woke the watcher")
	}

	input(t, in)
	waitFor(t, "input during a long call passing its reading on", func() bool { return passed.Load() != 0 })
	if d := time.Duration(passed.Load() - armed.UnixNano()); d < handoffDelay {
		t.Errorf("passed on %v after arming, before handoffDelay", d)
	}
	long.keep()
	g.close()
}

// TestGateCountsFromTheArming: input that comes soon after a call's
// arming passes its reading on handoffDelay after the arming, and input
// already waiting when a call is armed counts as come.
func TestGateCountsFromTheArming(t *testing.T) {
	g, watch, in := gatePipe(t)
	h, passed := gatedCall(watch, g)
	armed := time.Now()
	h.arm()
	input(t, in)
	waitFor(t, "the reading passed on", func() bool { return passed.Load() != 0 })
	if d := time.Duration(passed.Load() - armed.UnixNano()); d < handoffDelay {
		t.Errorf("passed on %v after arming, before handoffDelay", d)
	}
	g.close()

	// The byte written is still unread: the next call finds it waiting.
	next, passed := gatedCall(watch, g)
	next.arm()
	waitFor(t, "a call armed with input waiting passed on", func() bool { return passed.Load() != 0 })
	g.close()
}

// TestGateInputBetweenCallAndWrite: input that comes after the call was
// kept but before its answer's write is armed still counts for that write.
func TestGateInputBetweenCallAndWrite(t *testing.T) {
	g, watch, in := gatePipe(t)
	call, _ := gatedCall(watch, g)
	call.arm()
	call.keep()
	input(t, in)
	waitFor(t, "the gate seeing the input", func() bool { return isReady(g) })
	write, passed := gatedCall(watch, g)
	write.arm()
	waitFor(t, "the write's handoff passed on", func() bool { return passed.Load() != 0 })
	g.close()
}

// TestGateIgnoresWhatCameBeforeClose: once closed (the reader reads on),
// input is the reader's: it passes nothing on, even to a handoff armed
// later under a new registration, from an event of the old one.
func TestGateIgnoresWhatCameBeforeClose(t *testing.T) {
	g, watch, in := gatePipe(t)
	h, passed := gatedCall(watch, g)
	h.arm()
	g.close()
	input(t, in)
	time.Sleep(5 * handoffDelay)
	if passed.Load() != 0 {
		t.Fatal("a handoff was passed on after its gate closed")
	}
	g.readable(g.gen) // late: no registration now
	if isReady(g) {
		t.Fatal("an event after close marked the input ready")
	}
}

// TestHandoffHold: a held handoff has no registration, so input that
// comes then passes nothing on; armed again, it finds that input waiting.
// A handoff that was passed on holds and arms nothing: the registration a
// next reader armed for its own call stays, and input still passes that
// call's reading on.
func TestHandoffHold(t *testing.T) {
	g, watch, in := gatePipe(t)
	w, passed := gatedCall(watch, g)
	w.arm()
	w.hold()
	input(t, in)
	time.Sleep(5 * handoffDelay)
	if passed.Load() != 0 || isReady(g) {
		t.Fatal("input reached a held handoff")
	}
	w.arm()
	waitFor(t, "the handoff armed again passed on", func() bool { return passed.Load() != 0 })
	g.close()

	g, watch, in = gatePipe(t)
	old, _ := gatedCall(watch, g)
	old.arm()
	old.fire() // passed on: the gate is the next reader's
	g.close()
	next, passed := gatedCall(watch, g)
	next.arm()
	old.hold()
	old.arm() // as before a write that would block: nothing to arm
	input(t, in)
	waitFor(t, "the next reader's call passed on", func() bool { return passed.Load() != 0 })
	g.close()
}

// TestGateOnlyForPollableInput: input epoll cannot watch gets no gate
// (its calls go to the watcher at once); a gate stopped is inert.
func TestGateOnlyForPollableInput(t *testing.T) {
	pr, pw := io.Pipe()
	defer pr.Close()
	defer pw.Close()
	if newInputGate(pr, &watcher{}) != nil {
		t.Error("a gate for an io.Pipe")
	}
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{path, os.DevNull} {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		if newInputGate(f, &watcher{}) != nil {
			t.Errorf("a gate for %s", name)
		}
		f.Close()
	}

	g, watch, _ := gatePipe(t)
	g.stop()
	h, passed := gatedCall(watch, g)
	h.arm() // no registration: watched at once, as without a gate
	waitFor(t, "a handoff armed on a stopped gate passed on", func() bool { return passed.Load() != 0 })
	g.close()
}

// TestServeStdioGateSparesTheWatcher: through a kernel pipe, calls made one
// at a time never start the watcher's timer; a call that runs on while
// the next one comes still has its reading passed on, and the next one is
// answered meanwhile.
func TestServeStdioGateSparesTheWatcher(t *testing.T) {
	transports := make(chan *stdioTransport, 1)
	onTransport = func(t *stdioTransport) { transports <- t }
	defer func() { onTransport = nil }()
	srv, evs := fastBridge(t, "harness: {auto-approved-actions: [workspace_read_file]}\n")
	inW, outR, done := serveStdio(t, srv, osPipe)
	tr := <-transports
	require.NotNil(t, tr.gate, "no gate on a kernel pipe")

	call, send := caller(t, inW, outR), sender(t, inW)
	call(initLine)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The notification may come with the next call, in one read. A next
	// call that comes before the reader is back at its reading (after its
	// write) is input during a handoff, by design: the client pauses.
	before := watched(&tr.watch)
	for i := 0; i < 50; i++ {
		m := call(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shapes","arguments":{}}}`, 10+i))
		require.Equal(t, float64(10+i), m["id"])
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, watched(&tr.watch)-before, 5, "calls made one at a time went to the watcher")

	send(`{"jsonrpc":"2.0","id":"nap","method":"tools/call","params":{"name":"nap","arguments":{}}}`)
	waitFor(t, "the nap running", func() bool { return len(evs.Types("nap")) > 0 })
	m := call(`{"jsonrpc":"2.0","id":"next","method":"tools/call","params":{"name":"shapes","arguments":{}}}`)
	assert.Equal(t, "next", m["id"], "the next call is answered while the nap goes on")
	m = call(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nap"}}`)
	assert.Equal(t, "nap", m["id"])
	endInput(t, inW, done)
}

// TestServeStdioNextCallRightAfterTheAnswer: a client sends its next call
// the moment an answer arrives, which may be before the reader is back at
// its reading. On a socket, the answer is written without blocking, once
// the input's registration ended: such a call wakes no one but the reader
// (neither the gate nor the watcher). On a pipe, where a write may block,
// the gate stays for the write, and such a call goes to the watcher (the
// control that shows the test can tell). The hook sends the next call
// right after each answer is written and gives epoll time to report it.
func TestServeStdioNextCallRightAfterTheAnswer(t *testing.T) {
	for _, c := range []struct {
		name  string
		pipe  pipeMaker
		check func(t *testing.T, watched, events int)
	}{
		{"socket pair", func(t *testing.T) (io.ReadCloser, io.WriteCloser) { return socketPair(t) }, func(t *testing.T, watched, events int) {
			assert.Zero(t, watched, "calls went to the watcher")
			assert.Zero(t, events, "calls woke the gate")
		}},
		{"pipe", osPipe, func(t *testing.T, watched, events int) {
			assert.Positive(t, watched, "the control: on a pipe the gate stays for the write")
			assert.Positive(t, events, "the control: on a pipe the gate stays for the write")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const calls = 20
			call := func(i int) string {
				return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"shapes","arguments":{}}}`, 100+i)
			}
			transports := make(chan *stdioTransport, 1)
			onTransport = func(t *stdioTransport) { transports <- t }
			defer func() { onTransport = nil }()
			// Set before ServeStdio starts, and counting answers from
			// initialize's: answer i (0 is initialize's) is followed by
			// call i, from 1 on (the test sends call 0).
			var answered atomic.Int32
			var inW io.WriteCloser
			onAnswered = func() {
				if i := int(answered.Add(1)) - 1; i >= 1 && i < calls {
					_, _ = io.WriteString(inW, call(i)+"\n")
					time.Sleep(2 * time.Millisecond)
				}
			}
			defer func() { onAnswered = nil }()
			srv, _ := fastBridge(t, "harness: {auto-approved-actions: [workspace_read_file]}\n")
			w, outR, done := serveStdio(t, srv, c.pipe)
			inW = w
			tr := <-transports
			require.NotNil(t, tr.gate)
			answers := bufio.NewScanner(outR)
			answers.Buffer(nil, 1<<20)
			send := sender(t, inW)
			send(initLine)
			require.True(t, answers.Scan())
			send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

			watchedBefore, eventsBefore := watched(&tr.watch), gateEvents(tr.gate)
			send(call(0))
			for i := 0; i < calls; i++ {
				require.True(t, answers.Scan(), "no answer %d", i)
				var m map[string]any
				require.NoError(t, json.Unmarshal(answers.Bytes(), &m))
				assert.Equal(t, float64(100+i), m["id"])
			}
			c.check(t, watched(&tr.watch)-watchedBefore, gateEvents(tr.gate)-eventsBefore)
			endInput(t, inW, done)
		})
	}
}
