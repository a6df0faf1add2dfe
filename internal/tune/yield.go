package tune

import (
	"runtime"
	"time"
)

// YieldEvery is how long a Yielder's goroutine goes, at most, without a
// turn of the scheduler while it serves what it reads.
const YieldEvery = 5 * time.Millisecond

// Sched is what a Yielder calls to pass through the scheduler:
// runtime.Gosched (tests replace it, to see what happens without).
var Sched = runtime.Gosched

// A Yielder is kept by a goroutine that reads a blocking stream (the stdin
// or socket a client hands its child process) and serves what it reads
// itself: harness mcp's reader, harness ahp serve's. Blocked only in read
// system calls, such a goroutine never takes a turn of Go's scheduler.
// After 10 ms the runtime's monitor (sysmon) takes it for one that never
// yields: it sends it a preemption signal, takes its processor away while
// it waits in a read (the next message must first find a processor
// again), and goes back to polling every 20 µs, a thread waking thousands
// of times a second beside a client that may need the CPU. Calling Yield
// before each read lets the goroutine through the scheduler every
// YieldEvery, which keeps the monitor quiet. Measured with perf stat
// against the same binary without it, two runs each: harness mcp serving
// 64 KiB reads to the TypeScript SDK client, context switches a read
// 2.3-2.6 -> 1.5 and CPU a read 4-21% less; harness ahp serve --stdio
// answering pre_action events one at a time, context switches an event
// 4.8-5.4 -> 2.7-3.2 and CPU an event 9-11% less. Neither rate moved beyond
// the noise: the client is what waits.
//
// The zero value is ready; one goroutine at a time may use a Yielder.
type Yielder struct{ last time.Time }

// Yield passes through the scheduler once YieldEvery has passed since it
// last did.
func (y *Yielder) Yield() {
	if now := time.Now(); now.Sub(y.last) >= YieldEvery {
		y.last = now
		Sched()
	}
}
