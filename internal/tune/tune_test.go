package tune

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestGCAndProcs(t *testing.T) {
	prevGC := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prevGC)
	prevProcs := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(prevProcs)
	runtime.SetDefaultGOMAXPROCS()
	procs := runtime.GOMAXPROCS(0)

	t.Setenv("GOGC", "")
	t.Setenv("GOMAXPROCS", "")
	GC()
	Procs()
	Procs() // idempotent
	if got := debug.SetGCPercent(100); got != GCPercent {
		t.Errorf("without GOGC the GC percent is %d, want %d", got, GCPercent)
	}
	if got := runtime.GOMAXPROCS(procs); got != ProcsPerCPU*procs {
		t.Errorf("without GOMAXPROCS it is %d, want %d", got, ProcsPerCPU*procs)
	}

	t.Setenv("GOGC", "100")
	t.Setenv("GOMAXPROCS", "3")
	runtime.GOMAXPROCS(3)
	GC()
	Procs()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the GC percent is %d, want it left alone (100)", got)
	}
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("with GOMAXPROCS set it is %d, want it left alone (3)", got)
	}
}
