//go:build !linux

package bridge

import (
	"io"
	"time"
)

// inputGate exists on Linux only (see gate_linux.go): elsewhere every
// handoff goes to the watcher at once.
type inputGate struct{}

func newInputGate(io.Reader, *watcher) *inputGate { return nil }

func (g *inputGate) open(h *handoff) { h.watch.start(h, time.Now()) }
func (g *inputGate) leave(*handoff)  {}
func (g *inputGate) close()          {}
func (g *inputGate) drop(*handoff)   {}
func (g *inputGate) stop()           {}
