package bridge

import (
	"sync/atomic"
	"testing"
	"time"
)

// watchedCall arms a handoff on w that records when its reading is
// passed on.
func watchedCall(w *watcher) (*handoff, *atomic.Int64) {
	var passed atomic.Int64
	h := &handoff{watch: w, pass: func() { passed.Store(time.Now().UnixNano()) }}
	return h, &passed
}

// waitFor polls cond for up to two seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after 2s: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWatcherPassesOnOnlyWhatRunsLong: of calls in a stream, those answered
// at once keep the reading; one that runs on is passed on, not before
// handoffDelay from its own arming (even when the watcher's timer was
// already ticking for the calls before it); once the calls stop, the
// timer stops too.
func TestWatcherPassesOnOnlyWhatRunsLong(t *testing.T) {
	var w watcher
	defer w.stop()
	for i := 0; i < 50; i++ {
		h, passed := watchedCall(&w)
		h.arm()
		if !h.keep() {
			t.Fatalf("call %d answered at once was passed on", i)
		}
		if passed.Load() != 0 {
			t.Fatalf("call %d: pass ran for a kept call", i)
		}
		time.Sleep(handoffDelay / 3) // the timer ticks meanwhile
	}
	long, passed := watchedCall(&w)
	armed := time.Now()
	long.arm()
	waitFor(t, "a long call's reading passed on", func() bool { return passed.Load() != 0 })
	if d := time.Duration(passed.Load() - armed.UnixNano()); d < handoffDelay {
		t.Errorf("passed on %v after arming, before handoffDelay (%v)", d, handoffDelay)
	}
	if long.keep() {
		t.Error("keep after the handoff reported the reading kept")
	}
	waitFor(t, "the timer stopping after the last call", func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		return !w.ticking
	})

	// Idle, then one more long call: the timer starts again.
	again, passed := watchedCall(&w)
	again.arm()
	waitFor(t, "a long call after an idle spell passed on", func() bool { return passed.Load() != 0 })
}

// TestWatcherStopped: after stop, nothing is passed on.
func TestWatcherStopped(t *testing.T) {
	var w watcher
	h, passed := watchedCall(&w)
	h.arm()
	w.stop()
	time.Sleep(5 * handoffDelay)
	if passed.Load() != 0 {
		t.Error("a stopped watcher passed the reading on")
	}
}

// TestWatcherKeepsTheNextReadersHandoff: a handoff that passed the reading
// on, armed or started on the watcher again, does not take the watch from
// the handoff the next reader armed after it, which is still passed on.
func TestWatcherKeepsTheNextReadersHandoff(t *testing.T) {
	var w watcher
	defer w.stop()
	old, _ := watchedCall(&w)
	old.arm()
	old.fire()
	next, passed := watchedCall(&w)
	next.arm()
	old.arm()
	w.start(old, time.Now()) // as when arm looked just before old passed on
	waitFor(t, "the next reader's handoff passed on", func() bool { return passed.Load() != 0 })
}
