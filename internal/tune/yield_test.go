package tune

import (
	"testing"
	"time"
)

// TestYielderYieldsOncePerPeriod: a goroutine calling Yield in a loop goes
// through the scheduler on its first call and then once per YieldEvery,
// not more often.
func TestYielderYieldsOncePerPeriod(t *testing.T) {
	saved := Sched
	defer func() { Sched = saved }()
	n := 0
	Sched = func() { n++ }
	var y Yielder
	start := time.Now()
	for time.Since(start) < 6*YieldEvery {
		y.Yield()
	}
	elapsed := time.Since(start)
	if most := int(elapsed/YieldEvery) + 1; n < 2 || n > most {
		t.Errorf("%d yields in %v of calls, want 2 to %d (one per %v)", n, elapsed, most, YieldEvery)
	}
}
