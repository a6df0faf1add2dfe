//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package audit

import "os"

// lockFile is a no-op where flock is not available: there, keeping one
// writer process per log file is the operator's job.
func lockFile(*os.File) error { return nil }
