//go:build !unix

package workspace

import (
	"errors"
	"time"
)

func mkfifo(path string) error { return errors.New("unsupported") }

func cpuTime() time.Duration { return 0 }
