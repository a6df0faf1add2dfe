//go:build !unix

package workspace

import (
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
