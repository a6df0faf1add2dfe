//go:build linux

package workspace

import (
	"errors"
	"fmt"
	"os"
	"runtime"
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

// restrictSelf applies p to the calling OS thread, which it locks; the
// caller execs the program from that thread next, and the program inherits
// the thread's Landlock domain and no_new_privs. Only this thread is
// restricted, on purpose: go-landlock's Restrict synchronises every thread
// of the process through signals on kernels before ABI 8, which costs up
// to tens of milliseconds on a loaded machine, and the other threads of the
// helper run nothing but the Go runtime until execve ends them.
//
// The handled rights are the full set of the kernel's ABI (go-landlock's
// V1..V11 tables), so nothing is silently left out and nothing is asked that
// the kernel cannot do: best-effort and required only differ on a kernel
// without Landlock, where the service does not start the helper at all and
// this fails.
//
// Write directories get every handled right except creating device nodes
// and device ioctls: a command running as root could otherwise make a
// block device inside the root and read the disk through it. For the same
// reason /dev is not a read directory; single device files are listed in
// ReadFiles and WriteFiles.
func restrictSelf(p sandboxPolicy) error {
	abi := landlockABI()
	if abi <= 0 {
		return errors.New("this kernel does not offer Landlock")
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
		return fmt.Errorf("landlock_create_ruleset: %w", err)
	}
	defer syscall.Close(fd)

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
		{p.ReadFiles, read, true},
		{p.WriteFiles, llsys.AccessFSReadFile | llsys.AccessFSWriteFile, true},
	}
	for _, g := range groups {
		for _, path := range g.paths {
			if err := addPathRule(fd, path, g.access&handled, fileOnly, g.ignoreMissing); err != nil {
				return err
			}
		}
	}

	runtime.LockOSThread() // never unlocked: the exec follows on this thread
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if err := llsys.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	if p.NoNet && abi < 9 {
		// Landlock only governs Unix socket connects from ABI 9 on.
		if err := denyUnixSockets(); err != nil {
			return err
		}
	}
	return nil
}

// addPathRule allows access beneath path. A path that is not a directory
// gets only the rights that apply to files (the kernel refuses others).
func addPathRule(rulesetFD int, path string, access, fileOnly uint64, ignoreMissing bool) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if ignoreMissing && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileOnly
	}
	if access == 0 {
		return nil
	}
	rule := llsys.PathBeneathAttr{AllowedAccess: access, ParentFd: fd}
	if err := llsys.LandlockAddPathBeneathRule(rulesetFD, &rule, 0); err != nil {
		return fmt.Errorf("landlock_add_rule %s: %w", path, err)
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
