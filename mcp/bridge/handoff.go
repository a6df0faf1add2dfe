package bridge

import (
	"sync"
	"sync/atomic"
	"time"
)

// handoffDelay is how long a call may run, from its registration, before
// the reading of the input is passed on to another goroutine: what a
// cancellation, an answer to an elicitation or the next call may wait.
// Where the transport has a gate (see inputGate), the reading is passed
// on only once such input waits.
const handoffDelay = time.Millisecond

// watchLinger is how long the watcher's timer keeps ticking after the
// last call it watched, so that calls in a steady stream do not each
// start it again.
const watchLinger = 20 * time.Millisecond

// handoff passes the reading of the input on, once, or keeps it.
type handoff struct {
	once sync.Once
	// done is set, before pass is called, once the handoff passed the
	// reading on or kept it: arming it again then does nothing.
	done  atomic.Bool
	pass  func()
	watch *watcher
	// gate, when set, starts the watch only once input is waiting (see
	// inputGate); otherwise arm starts it at once.
	gate *inputGate
}

func (h *handoff) fire() {
	if h != nil {
		h.once.Do(func() {
			h.done.Store(true)
			h.pass()
		})
	}
}

// arm passes the reading on after handoffDelay, unless keep comes first;
// with a gate, only if input is waiting by then (or comes later).
func (h *handoff) arm() {
	switch {
	case h == nil || h.done.Load():
	case h.gate != nil:
		h.gate.open(h)
	default:
		h.watch.start(h, time.Now())
	}
}

// hold stops h's watch and its gate's registration of the input, without
// ending h: arm starts them again. Once h has passed the reading on, the
// gate is the next reader's, and hold leaves it alone.
func (h *handoff) hold() {
	h.watch.end(h)
	if h.gate != nil {
		h.gate.drop(h)
	}
}

// keep ends the handoff; it reports whether the reading was kept (not
// passed on before).
func (h *handoff) keep() bool {
	if h == nil {
		return false
	}
	kept := false
	h.once.Do(func() {
		h.done.Store(true)
		kept = true
	})
	h.watch.end(h)
	if h.gate != nil {
		h.gate.leave(h)
	}
	return kept
}

// watcher times the handoffs of one transport. Only the goroutine that
// reads the input arms one, and one at a time: the call it serves, then
// the write of its answer. A timer per handoff, started and stopped for
// every call, would wake another thread of the process at least twice a
// call (once to take the new timer, once when the stopped one was due).
// The watcher's one timer is not stopped when a call ends in time: it
// ticks every handoffDelay while calls come to it (and watchLinger after
// the last; with a gate, only calls during which input came do), and at
// each tick passes the reading on if the handoff it watches is
// handoffDelay old, or waits for the rest of that time.
type watcher struct {
	mu      sync.Mutex
	timer   *time.Timer
	cur     *handoff  // the handoff watched, nil when none
	since   time.Time // when the last handoff (cur, when set) was armed
	ticking bool      // timer is due
	stopped bool
	watched int // handoffs started, for the tests
}

// start watches h, armed at armed: it is passed on handoffDelay after
// that.
func (w *watcher) start(h *handoff, armed time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == h || w.stopped || h.done.Load() {
		// done: h passed the reading on since it was armed, and the next
		// reader's handoff, armed after that, keeps the watch.
		return
	}
	w.cur, w.since = h, armed
	w.watched++
	if w.ticking {
		return // the next tick comes within handoffDelay, and waits for the rest
	}
	w.ticking = true
	wait := max(0, handoffDelay-time.Since(armed))
	if w.timer == nil {
		w.timer = time.AfterFunc(wait, w.tick)
	} else {
		w.timer.Reset(wait)
	}
}

// end stops watching h (answered, or passed on).
func (w *watcher) end(h *handoff) {
	w.mu.Lock()
	if w.cur == h {
		w.cur = nil
	}
	w.mu.Unlock()
}

// tick runs when the timer is due: it passes on the handoff watched once
// it is handoffDelay old, else waits for the rest of that delay, and keeps
// ticking until watchLinger after the last handoff armed.
func (w *watcher) tick() {
	now := time.Now()
	w.mu.Lock()
	h, age := w.cur, now.Sub(w.since)
	switch {
	case w.stopped:
		w.ticking = false
		h = nil
	case h != nil && age >= handoffDelay:
		w.cur = nil
		w.timer.Reset(handoffDelay)
	case h != nil:
		w.timer.Reset(handoffDelay - age)
		h = nil
	case age < watchLinger:
		w.timer.Reset(handoffDelay)
	default:
		w.ticking = false
	}
	w.mu.Unlock()
	if h != nil {
		h.fire()
	}
}

// stop ends the ticks; a handoff still watched is not passed on.
func (w *watcher) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped, w.cur = true, nil
	if w.timer != nil {
		w.timer.Stop()
	}
}
