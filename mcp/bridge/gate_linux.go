package bridge

import (
	"io"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// inputGate lets the watcher sleep while nothing waits to be read. A call
// served by the goroutine that reads the input needs its reading passed
// on only when the input has something for it: a cancellation, an
// elicitation's answer, the next call. With a client that waits for each
// answer, nothing comes while a call runs, and a watcher ticking every
// handoffDelay while calls come woke a thread of the process about once a
// call for nothing (on a 2-CPU machine, the client paid for those wake-ups
// in its own CPU time).
//
// So the gate registers the input in an epoll instance of its own, one
// shot, while a handoff is armed (from the call's registration until its
// answer is written), and starts the watcher, counting from the handoff's
// arming, only once the input is readable. The epoll instance is itself
// watched by the runtime's poller, so nothing polls or ticks meanwhile:
// the cost is an epoll_ctl to register the input, and one to remove it
// before the next read. A line already read into the reader's buffer is
// not seen by the gate: such a call's handoff goes to the watcher at
// once (see lead).
type inputGate struct {
	fd    int      // the input's descriptor
	epfd  int      // the epoll instance
	ep    *os.File // epfd, non-blocking, in the runtime's poller
	watch *watcher

	mu      sync.Mutex
	stopped bool      // ep is closed, or closing
	gen     int32     // the registration's number, in its events' data
	armed   bool      // the input is registered (one shot) as gen
	ready   bool      // the input was readable while armed
	cur     *handoff  // the handoff armed, nil when none
	since   time.Time // when cur was armed
	events  int       // events of a live registration taken, for the tests
}

// newInputGate returns a gate for in, or nil when in is not a descriptor
// that epoll can watch (a regular file, /dev/null, an io.Pipe): calls then
// go to the watcher at once.
func newInputGate(in io.Reader, w *watcher) *inputGate {
	f, ok := in.(*os.File)
	if !ok {
		return nil
	}
	fd := -1
	if rc, err := f.SyscallConn(); err == nil {
		_ = rc.Control(func(p uintptr) { fd = int(p) }) // unlike f.Fd, leaves its mode alone
	}
	if fd < 0 {
		return nil
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil
	}
	probe := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT}
	if unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, fd, &probe) != nil || unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, fd, nil) != nil {
		unix.Close(epfd)
		return nil
	}
	if unix.SetNonblock(epfd, true) != nil {
		unix.Close(epfd)
		return nil
	}
	g := &inputGate{fd: fd, epfd: epfd, ep: os.NewFile(uintptr(epfd), "mcp-input-gate"), watch: w}
	rc, err := g.ep.SyscallConn()
	if err != nil {
		g.ep.Close()
		return nil
	}
	go g.run(rc)
	return g
}

// run takes the gate's events until stop closes the epoll instance.
func (g *inputGate) run(rc syscall.RawConn) {
	var evs [4]unix.EpollEvent
	_ = rc.Read(func(epfd uintptr) bool {
		n, err := unix.EpollWait(int(epfd), evs[:], 0)
		for err == unix.EINTR {
			n, err = unix.EpollWait(int(epfd), evs[:], 0)
		}
		for i := 0; err == nil && i < n; i++ {
			g.readable(evs[i].Fd)
		}
		return false // wait for the next: only stop ends this
	})
}

// readable records that the input registered as gen can be read, and
// starts the watcher for the handoff armed.
func (g *inputGate) readable(gen int32) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped || !g.armed || gen != g.gen {
		return // an event of a registration removed since
	}
	g.events++
	g.ready = true
	if g.cur != nil {
		g.watch.start(g.cur, g.since)
	}
}

// open arms h: registers the input unless it is already, and starts the
// watcher at once when the input was found readable.
func (g *inputGate) open(h *handoff) {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if h.done.Load() {
		// Passed on since arm looked (done is set before the next reader
		// is given the reading, and so before it armed anything here).
		return
	}
	g.cur, g.since = h, now
	if g.ready {
		g.watch.start(h, now)
		return
	}
	if g.armed {
		return
	}
	g.gen++
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: g.gen}
	if g.stopped || unix.EpollCtl(g.epfd, unix.EPOLL_CTL_ADD, g.fd, &ev) != nil {
		// Cannot tell when input comes: watch as without a gate.
		g.watch.start(h, now)
		return
	}
	g.armed = true
}

// leave ends h's part: the registration stays until close, for the
// handoff of the answer's write.
func (g *inputGate) leave(h *handoff) {
	g.mu.Lock()
	if g.cur == h {
		g.cur = nil
	}
	g.mu.Unlock()
}

// close removes the registration before the input is read again: what
// comes then is the reader's.
func (g *inputGate) close() {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unregister()
}

// drop is close, if h is the handoff armed: a reader that passed the
// reading on leaves the registration to the next reader, which may have
// armed a call of its own since.
func (g *inputGate) drop(h *handoff) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cur == h {
		g.unregister()
	}
}

// unregister removes the input's registration. The caller holds mu.
func (g *inputGate) unregister() {
	if g.armed && !g.stopped {
		_ = unix.EpollCtl(g.epfd, unix.EPOLL_CTL_DEL, g.fd, nil)
	}
	g.armed, g.ready, g.cur = false, false, nil
}

// stop closes the epoll instance, which ends run. A reader left behind
// uses the gate no more.
func (g *inputGate) stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	_ = g.ep.Close() // waits for run's callback, which may wait for g.mu
}
