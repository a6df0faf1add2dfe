//go:build unix

package workspace

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command as the leader of a new process group,
// so that a timeout can kill it with everything it started.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup sends SIGKILL to every process of the group led by pid.
func killProcessGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// writeStatus writes b to the helper's status descriptor fd, without an
// *os.File whose finalizer could close fd before the helper is done.
func writeStatus(fd int, b []byte) error {
	_, err := syscall.Write(fd, b)
	return err
}
