package testkit

import (
	"os"
	"os/signal"
	"runtime/debug"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/harness-runtime/harness/internal/tune"
)

// BlockingPipes returns two pipes as a client hands them to its child as
// stdin and stdout: the server's ends (in, read; out, written) block in
// their system calls, the client's (req, written; resp, read) go through
// Go's poller. They are closed when the test ends.
func BlockingPipes(t testing.TB) (in, out, req, resp *os.File) {
	t.Helper()
	pipe := func(clientEnd int) (r, w *os.File) {
		var fds [2]int
		if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		if err := unix.SetNonblock(fds[clientEnd], true); err != nil {
			t.Fatal(err)
		}
		r, w = os.NewFile(uintptr(fds[0]), "pipe-r"), os.NewFile(uintptr(fds[1]), "pipe-w")
		t.Cleanup(func() { r.Close(); w.Close() })
		return r, w
	}
	in, req = pipe(1)
	resp, out = pipe(0)
	return in, out, req, resp
}

// Preemptions runs fn with the garbage collector off and returns how many
// SIGURG signals the process received meanwhile. The runtime sends one to
// preempt a goroutine its monitor believes has run for 10 ms without a
// turn of the scheduler (and the collector one to each goroutine whose
// stack it scans, hence the collector off).
func Preemptions(fn func()) int {
	urg := make(chan os.Signal, 1<<16) // more than a run can receive
	func() {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		signal.Notify(urg, unix.SIGURG)
		defer signal.Stop(urg) // when it returns, nothing more is sent
		fn()
	}()
	return len(urg)
}

// CheckYields checks that a stream reader keeps the runtime's monitor
// quiet (see tune.Yielder): serve serves a stream for a while and returns
// the preemption signals received meanwhile (Preemptions) and how many
// messages it served. It runs once as built and once with tune.Sched a
// no-op (the control), and fails when the first run got more than a
// quarter of the control's signals; it skips when the control got fewer
// than 4, too few on this machine to tell.
func CheckYields(t *testing.T, serve func(t *testing.T) (signals, messages int)) {
	t.Helper()
	signals, n := serve(t)
	t.Logf("with yields: %d messages, %d SIGURG", n, signals)
	saved := tune.Sched
	tune.Sched = func() {}
	defer func() { tune.Sched = saved }()
	without, wn := serve(t)
	t.Logf("without: %d messages, %d SIGURG", wn, without)
	if without < 4 {
		t.Skipf("without yields, only %d preemption signals: this machine cannot tell", without)
	}
	if signals > without/4 {
		t.Errorf("%d preemption signals, against %d without yields: the reader is preempted as a goroutine that never yields", signals, without)
	}
}
