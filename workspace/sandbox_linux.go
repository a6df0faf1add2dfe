//go:build linux

package workspace

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockConfigs maps a kernel ABI version to the full go-landlock
// configuration of that version.
var landlockConfigs = []landlock.Config{
	{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

var landlockABIOnce = sync.OnceValue(func() int {
	v, err := llsys.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	return v
})

// landlockABI returns the kernel's Landlock ABI version, 0 when Landlock is
// missing or disabled. It asks the kernel once per process.
func landlockABI() int { return landlockABIOnce() }

// runSandboxed is SandboxMain after parsing. Everything that confines the
// program is applied to the calling OS thread, which it locks for good: the
// program is started (or exec'd) from that thread and inherits its
// credentials, Landlock domain, no_new_privs and seccomp filter. Only this
// thread is restricted, on purpose: go-landlock's Restrict synchronises
// every thread of the process through signals on kernels before ABI 8,
// which costs up to tens of milliseconds on a loaded machine, and the other
// threads of the helper run nothing but the Go runtime.
func runSandboxed(p sandboxPolicy, program string, argv []string) error {
	// Nothing the service handed over may reach the program.
	if p.StatusFD > 0 {
		syscall.CloseOnExec(p.StatusFD)
	}
	for _, pr := range p.Protect {
		syscall.CloseOnExec(pr.FD)
	}
	runtime.LockOSThread()
	if p.NetNSFD > 0 {
		// Only this thread moves, and the program is started from it.
		err := unix.Setns(p.NetNSFD, unix.CLONE_NEWNET)
		syscall.Close(p.NetNSFD)
		if err != nil {
			return fmt.Errorf("join the empty network namespace: %w", err)
		}
	}
	if p.PIDNS && os.Getpid() != 1 {
		return errors.New("--pid-ns: the helper is not PID 1 of a new PID namespace")
	}
	if p.MountNS {
		if err := setupMounts(p); err != nil {
			return fmt.Errorf("mount namespace: %w", err)
		}
	}
	ruleset := -1
	if !p.NoLandlock {
		fd, err := landlockRuleset(p)
		if err != nil {
			return fmt.Errorf("landlock: %w", err)
		}
		defer syscall.Close(fd)
		ruleset = fd
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if ruleset >= 0 {
		if err := llsys.LandlockRestrictSelf(ruleset, 0); err != nil {
			return fmt.Errorf("landlock: landlock_restrict_self: %w", err)
		}
	}
	if err := dropCapabilities(); err != nil {
		return fmt.Errorf("capabilities: %w", err)
	}
	if err := closeOnExecAbove2(); err != nil {
		return err
	}
	if p.Seccomp {
		if err := installSeccomp(p.NoNet); err != nil {
			return fmt.Errorf("seccomp: %w", err)
		}
	}
	if p.PIDNS {
		return runAsInit(program, argv, p.StatusFD)
	}
	return execProgram(program, argv, p.StatusFD)
}

// landlockRuleset builds the ruleset of p. The handled rights are the full
// set of the kernel's ABI (go-landlock's V1..V11 tables), so nothing is
// silently left out and nothing is asked that the kernel cannot do.
//
// Write directories get every handled right except creating device nodes
// and device ioctls: a command running as root could otherwise make a
// block device inside the root and read the disk through it. For the same
// reason /dev is not a read directory; single device files are listed in
// ReadFiles and WriteFiles.
func landlockRuleset(p sandboxPolicy) (int, error) {
	abi := landlockABI()
	if abi <= 0 {
		return -1, errors.New("this kernel does not offer Landlock")
	}
	cfg := landlockConfigs[min(abi, len(landlockConfigs)-1)]
	handled := uint64(cfg.HandledAccessFS)
	attr := llsys.RulesetAttr{HandledAccessFS: handled, Scoped: uint64(cfg.Scoped)}
	if p.NoNet {
		// No rule grants a port, so every TCP bind and connect is denied.
		attr.HandledAccessNet = uint64(cfg.HandledAccessNet)
	}
	fd, err := llsys.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	const (
		read      = llsys.AccessFSExecute | llsys.AccessFSReadFile | llsys.AccessFSReadDir
		fileOnly  = llsys.AccessFSExecute | llsys.AccessFSWriteFile | llsys.AccessFSReadFile | llsys.AccessFSTruncate
		noDevices = llsys.AccessFSMakeChar | llsys.AccessFSMakeBlock | llsys.AccessFSIoctlDev
	)
	write := handled &^ noDevices
	groups := []struct {
		paths         []string
		access        uint64
		ignoreMissing bool
	}{
		{p.ReadDirs, read, true},
		{p.WriteDirs, write, false},
		{p.ReadFiles, llsys.AccessFSReadFile | llsys.AccessFSReadDir, true},
		{p.WriteFiles, llsys.AccessFSReadFile | llsys.AccessFSWriteFile, true},
	}
	for _, g := range groups {
		for _, path := range g.paths {
			if err := addPathRule(fd, path, g.access&handled, fileOnly, g.ignoreMissing); err != nil {
				syscall.Close(fd)
				return -1, err
			}
		}
	}
	return fd, nil
}

// addPathRule allows access beneath path. A path that is not a directory
// gets only the rights that apply to files: the kernel refuses the others
// with EINVAL, which saves a stat per rule.
func addPathRule(rulesetFD int, path string, access, fileOnly uint64, ignoreMissing bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if ignoreMissing && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	rule := llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}
	err = llsys.LandlockAddPathBeneathRule(rulesetFD, &rule, 0)
	if errors.Is(err, unix.EINVAL) && access&^fileOnly != 0 {
		if rule.AllowedAccess = access & fileOnly; rule.AllowedAccess == 0 {
			return nil
		}
		err = llsys.LandlockAddPathBeneathRule(rulesetFD, &rule, 0)
	}
	if err != nil {
		return fmt.Errorf("landlock_add_rule %s: %w", path, err)
	}
	return nil
}

// Securebits (linux/securebits.h): uid 0 gets no capabilities from execve
// or setuid, no ambient capability can be raised, and none of this can be
// undone.
const lockedSecurebits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
	1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
	1<<5 | // SECBIT_KEEP_CAPS_LOCKED (KEEP_CAPS itself off)
	1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED

// dropCapabilities empties every capability set of the calling thread:
// bounding (so that no execve can give any back, not even of a file with
// capabilities or of uid 0), ambient, inheritable, permitted and
// effective; the securebits are locked so that uid 0 means nothing. The
// caller has set no_new_privs.
//
// Without CAP_SETPCAP (a helper started by an unprivileged service without
// a user namespace) the bounding set and securebits cannot be changed;
// then the thread holds no capability to begin with and no_new_privs keeps
// execve from granting any, which is what the bounding set is for.
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Permitted&(1<<unix.CAP_SETPCAP) != 0 {
		if err := unix.Prctl(unix.PR_SET_SECUREBITS, lockedSecurebits, 0, 0, 0); err != nil {
			return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
		}
		for c := 0; c < 64; c++ {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
			if errors.Is(err, unix.EINVAL) {
				break // past the kernel's last capability
			}
			if err != nil {
				return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// closeOnExecAbove2 marks every descriptor but stdin, stdout and stderr
// close-on-exec, so that the program gets none the helper was started
// with by mistake (one a library of the service opened without
// O_CLOEXEC, say), only those three.
func closeOnExecAbove2() error {
	err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("close_range: %w", err)
	}
	entries, err := os.ReadDir("/proc/self/fd") // Linux before 5.11
	if err != nil {
		return fmt.Errorf("list descriptors: %w", err)
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}

// execProgram replaces the process with program; statusFD (if > 0) is
// closed by the exec, which tells the waiting service that it succeeded.
func execProgram(program string, argv []string, statusFD int) error {
	if statusFD > 0 {
		syscall.CloseOnExec(statusFD)
	}
	err := syscall.Exec(program, argv, os.Environ())
	return fmt.Errorf("exec %s: %w", program, err)
}

// runAsInit starts program as the only child of the helper, which is PID 1
// of the command's PID namespace, and waits for it, reaping every orphan
// the namespace hands over meanwhile. When the program exits the helper
// exits with its status (128+N for signal N: PID 1 cannot kill itself with
// the same signal); the kernel then kills every process left in the
// namespace before the service sees the helper exit, so nothing the
// command started outlives it. Only a failure to start the program is
// returned.
func runAsInit(program string, argv []string, statusFD int) error {
	// ForkExec clones from this (locked, confined) thread, and reports a
	// failed execve synchronously.
	pid, err := syscall.ForkExec(program, argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2},
	})
	if err != nil {
		return fmt.Errorf("exec %s: %w", program, err)
	}
	if statusFD > 0 {
		syscall.Close(statusFD)
	}
	// syscall.Exit rather than os.Exit: there is nothing to flush, and a
	// helper built with the race detector would sleep a second in os.Exit.
	for {
		var ws syscall.WaitStatus
		wpid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			// Cannot happen while the program lives; end the namespace.
			syscall.Exit(sandboxExitCode)
		case wpid != pid:
			continue
		case ws.Exited():
			syscall.Exit(ws.ExitStatus())
		case ws.Signaled():
			syscall.Exit(128 + int(ws.Signal()))
		}
	}
}
