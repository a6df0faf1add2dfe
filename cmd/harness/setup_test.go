package main

import (
	"runtime/debug"
	"testing"
)

func TestTuneServiceGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "")
	tuneServiceGC()
	if got := debug.SetGCPercent(100); got != serviceGCPercent {
		t.Errorf("without GOGC the GC percent is %d, want %d", got, serviceGCPercent)
	}
	t.Setenv("GOGC", "100")
	tuneServiceGC()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("with GOGC set the GC percent is %d, want it left alone (100)", got)
	}
}
