//go:build !linux

package workspace

import (
	"errors"
	"os"
	"syscall"
)

type sandboxLaunch struct {
	path    string
	args    []string
	files   []*os.File
	sys     *syscall.SysProcAttr
	release func()
}

// launchSandbox is never reached: planSandbox plans no sandbox off Linux.
func (w *Workspace) launchSandbox(CommandPlan, *os.File) (sandboxLaunch, error) {
	return sandboxLaunch{}, errors.New("the OS sandbox exists only on Linux")
}
