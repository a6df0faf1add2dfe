package testkit

import (
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
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
	urg := make(chan os.Signal, 4096)
	signal.Notify(urg, unix.SIGURG)
	defer signal.Stop(urg)
	var counting atomic.Bool
	var count atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range urg {
			if counting.Load() {
				count.Add(1)
			}
		}
	}()
	func() {
		defer debug.SetGCPercent(debug.SetGCPercent(-1))
		counting.Store(true)
		defer counting.Store(false)
		fn()
	}()
	signal.Stop(urg)
	close(urg)
	<-done
	return int(count.Load())
}
