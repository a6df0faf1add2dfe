//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f and returns the function that
// releases it. flock locks belong to an open file description, so two
// *JSONL of one process exclude each other just as two processes do.
//
// ctx is checked before waiting, not during: the wait is for another
// writer's single write and at most one fsync, and a blocking flock is
// fair to waiters where polling with LOCK_NB lets a busy writer starve
// them.
func lockFile(ctx context.Context, f *os.File) (unlock func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	flock := func(how int) (ferr error) {
		if err := raw.Control(func(fd uintptr) {
			for {
				ferr = syscall.Flock(int(fd), how)
				if !errors.Is(ferr, syscall.EINTR) {
					return
				}
			}
		}); err != nil {
			return err
		}
		return ferr
	}
	if err := flock(syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { _ = flock(syscall.LOCK_UN) }, nil
}
