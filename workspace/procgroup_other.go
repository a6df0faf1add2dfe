//go:build !unix

package workspace

import (
	"errors"
	"os"
	"os/exec"
)

func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills only the process itself: there are no process
// groups to kill here.
func killProcessGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// writeStatus: there is no sandbox helper here.
func writeStatus(int, []byte) error { return errors.New("no sandbox helper on this platform") }
