package bridge

import (
	"sync"
	"time"
)

// handoffDelay is how long a call may run, from its registration, before
// the reading of the input is passed on to another goroutine: what a
// cancellation, an answer to an elicitation or the next call may wait.
const handoffDelay = time.Millisecond

// watchLinger is how long the watcher's timer keeps ticking after the
// last call it watched, so that calls in a steady stream do not each
// start it again.
const watchLinger = 20 * time.Millisecond

// handoff passes the reading of the input on, once, or keeps it.
type handoff struct {
	once  sync.Once
	pass  func()
	watch *watcher
}

func (h *handoff) fire() {
	if h != nil {
		h.once.Do(h.pass)
	}
}

// arm passes the reading on after handoffDelay, unless keep comes first.
func (h *handoff) arm() {
	if h != nil {
		h.watch.start(h)
	}
}

// keep ends the handoff; it reports whether the reading was kept (not
// passed on before).
func (h *handoff) keep() bool {
	if h == nil {
		return false
	}
	kept := false
	h.once.Do(func() { kept = true })
	h.watch.end(h)
	return kept
}

// watcher times the handoffs of one transport. Only the goroutine that
// reads the input arms one, and one at a time: the call it serves, then
// the write of its answer. A timer per handoff, started and stopped for
// every call, would wake another thread of the process at least twice a
// call (once to take the new timer, once when the stopped one was due).
// The watcher's one timer is not stopped when a call ends in time: it
// ticks every handoffDelay while calls come (and watchLinger after the
// last), and at each tick passes the reading on if the handoff it
// watches is handoffDelay old, or waits for the rest of that time.
type watcher struct {
	mu      sync.Mutex
	timer   *time.Timer
	cur     *handoff  // the handoff watched, nil when none
	since   time.Time // when the last handoff (cur, when set) was armed
	ticking bool      // timer is due
	stopped bool
}

// start watches h.
func (w *watcher) start(h *handoff) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == h || w.stopped {
		return
	}
	w.cur, w.since = h, now
	if w.ticking {
		return // the next tick comes within handoffDelay, and waits for the rest
	}
	w.ticking = true
	if w.timer == nil {
		w.timer = time.AfterFunc(handoffDelay, w.tick)
	} else {
		w.timer.Reset(handoffDelay)
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
