//go:build linux && !(amd64 || arm64)

package workspace

import "errors"

// denyUnixSockets has no filter for this architecture; see the amd64 and
// arm64 version.
func denyUnixSockets() error {
	return errors.New("no seccomp filter for Unix sockets on this architecture")
}
