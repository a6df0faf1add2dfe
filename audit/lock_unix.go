//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on f, waiting until ctx is done, and
// returns the function that releases it. flock locks belong to an open file
// description, so two *JSONL of one process exclude each other just as two
// processes do.
func lockFile(ctx context.Context, f *os.File) (unlock func(), err error) {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	flock := func(how int) (ferr error) {
		if err := raw.Control(func(fd uintptr) { ferr = syscall.Flock(int(fd), how) }); err != nil {
			return err
		}
		return ferr
	}
	wait := 50 * time.Microsecond
	for {
		err := flock(syscall.LOCK_EX | syscall.LOCK_NB)
		if err == nil {
			return func() { _ = flock(syscall.LOCK_UN) }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		// Holders keep the lock for one write and at most one fsync, so a
		// short poll costs little and lets the wait honour ctx.
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 5*time.Millisecond)
	}
}
