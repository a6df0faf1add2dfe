//go:build unix

package runtime_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time this process has used, so that benchmarks on
// a shared, overloaded machine can report CPU cost next to wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
