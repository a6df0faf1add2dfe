//go:build unix

package workspace

import (
	"syscall"
	"time"
)

// cpuTimeWithChildren is the user and system time of this process and its reaped
// children.
func cpuTimeWithChildren() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}
