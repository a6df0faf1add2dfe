//go:build linux

package workspace

import (
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
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
		if fd, ok := sharedEmptyNetNS(plan.ns.user); ok {
			files = append(files, fd)
			p.NetNSFD = 2 + len(files)
		} else {
			sys.Cloneflags |= syscall.CLONE_NEWNET
		}
	}
	if plan.ns.user {
		sys.Cloneflags |= syscall.CLONE_NEWUSER
		sys.UidMappings, sys.GidMappings = selfIDMaps()
		if !serviceIsRoot() {
			sys.AmbientCaps = []uintptr{capSysAdmin, capSetpcap}
		}
	}
	pid := plan.ns.pid
	// The helper's command line is made last: it names the descriptors.
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

var emptyNetNS = sync.OnceValues(makeEmptyNetNS)

// sharedEmptyNetNS returns a descriptor of one empty network namespace that
// every command of this process joins, instead of making its own: making a
// network namespace costs about a millisecond of CPU (loopback, IPv4 and
// IPv6 tables), and freeing it as much again in a kernel worker. Sharing is
// safe because the namespace stays empty (its loopback is down and no
// command can configure it) and commands cannot make sockets to meet there
// anyway (seccomp). Only a service that makes the namespaces without a user
// namespace (root) can do this: a namespace owned by the service's user
// namespace cannot be joined from the command's own one.
func sharedEmptyNetNS(userNS bool) (*os.File, bool) {
	if userNS {
		return nil, false
	}
	f, err := emptyNetNS()
	return f, err == nil
}

// makeEmptyNetNS makes the namespace on a thread of its own, which goes back
// to the service's namespace, or ends with its goroutine if it cannot.
func makeEmptyNetNS() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, err}
			return
		}
		defer orig.Close()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{nil, err}
			return
		}
		ns, err := os.Open("/proc/thread-self/ns/net")
		if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr != nil {
			// Still locked: the thread ends with this goroutine.
			if ns != nil {
				ns.Close()
			}
			done <- result{nil, serr}
			return
		}
		runtime.UnlockOSThread()
		done <- result{ns, err}
	}()
	r := <-done
	return r.f, r.err
}
