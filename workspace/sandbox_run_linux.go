//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"syscall"
)

// sandboxLaunch is how execute starts the helper for one plan.
type sandboxLaunch struct {
	path    string
	args    []string
	files   []*os.File // ExtraFiles: the status pipe first, then the protected entries
	sys     *syscall.SysProcAttr
	release func() // after the command ended
}

// launchSandbox prepares the helper's command line, descriptors and
// namespaces for plan; status becomes the helper's descriptor 3. The
// caller runs release once the helper has exited.
//
// The helper leads a new process group (what a timeout kills) and gets
// SIGKILL if the service's thread that started it dies, so a crashed
// service leaves no command behind. With a user namespace, the service's
// uid and gid are mapped onto themselves; a helper of an unprivileged
// service keeps the two capabilities it needs to set up (mounts and the
// bounding set) as ambient ones, and drops them with the rest.
func (w *Workspace) launchSandbox(plan CommandPlan, status *os.File) (sandboxLaunch, error) {
	p := plan.policy
	p.StatusFD = 3
	files := []*os.File{status}
	var held []protectedEntry
	if p.MountNS {
		var err error
		if held, err = w.holdProtected(); err != nil {
			return sandboxLaunch{}, err
		}
		for _, h := range held {
			files = append(files, h.file)
			p.Protect = append(p.Protect, protectFD{FD: 2 + len(files), Path: filepath.Join(w.rootPath, h.name)})
		}
	}
	sys := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if plan.ns.mount {
		sys.Cloneflags |= syscall.CLONE_NEWNS
	}
	if plan.ns.pid {
		sys.Cloneflags |= syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC
	}
	if plan.ns.net {
		sys.Cloneflags |= syscall.CLONE_NEWNET
	}
	if plan.ns.user {
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		sys.UidMappings, sys.GidMappings = selfIDMaps()
		if !serviceIsRoot() {
			sys.AmbientCaps = []uintptr{capSysAdmin, capSetpcap}
		}
	}
	pid := plan.ns.pid
	return sandboxLaunch{
		path:    plan.helper,
		args:    append([]string{plan.helper, SandboxCommand}, p.helperArgs(plan.Program, plan.ExecArgv)...),
		files:   files,
		sys:     sys,
		release: func() { w.releaseProtected(held, pid) },
	}, nil
}

// Capability numbers (linux/capability.h).
const (
	capSetpcap  = 8
	capSysAdmin = 21
)
