//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package audit

import (
	"context"
	"os"
)

// lockFile does nothing where flock is not available: there, one process
// per log file is the operator's job (two would fork the chain).
func lockFile(context.Context, *os.File) (func(), error) { return func() {}, nil }
