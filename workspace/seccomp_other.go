//go:build linux && !(amd64 || arm64)

package workspace

import "errors"

// seccompFilterAvailable is false: the filter is written for the system call
// numbers and argument layout of amd64 and arm64 only.
const seccompFilterAvailable = false

func installSeccomp(bool) error {
	return errors.New("no seccomp filter for this architecture")
}
