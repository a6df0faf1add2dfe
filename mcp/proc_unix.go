//go:build unix

package mcp

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts a stdio server in its own process group, so that
// Close also ends the children it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

func killProcessGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
