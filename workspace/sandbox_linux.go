//go:build linux

package workspace

import (
	"fmt"
	"os"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
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

// restrictSelf applies p to the calling process (all its threads) and to
// everything it will start.
//
// Write directories get every handled right except creating device nodes
// and device ioctls: a command running as root could otherwise make a
// block device inside the root and read the disk through it. For the same
// reason /dev is not a read directory; single device files are listed in
// ReadFiles and WriteFiles.
func restrictSelf(p sandboxPolicy) error {
	abi := landlockABI()
	cfg := landlock.V11.BestEffort()
	if !p.BestEffort {
		// Exactly what this kernel supports, so that nothing is silently
		// dropped; without Landlock, V1 fails in Restrict.
		cfg = landlock.V1
		if abi > 0 {
			cfg = landlockConfigs[min(abi, len(landlockConfigs)-1)]
		}
	}
	if !p.NoNet {
		cfg.HandledAccessNet = 0
	}
	rw := cfg.HandledAccessFS &^ landlock.AccessFSSet(llsys.AccessFSMakeChar|llsys.AccessFSMakeBlock|llsys.AccessFSIoctlDev)
	if abi < 2 {
		// A rule asking for "refer" makes go-landlock give up entirely
		// (in best-effort mode) on a V1 kernel.
		rw &^= landlock.AccessFSSet(llsys.AccessFSRefer)
	}
	rules := []landlock.Rule{
		landlock.RODirs(p.ReadDirs...).IgnoreIfMissing(),
		landlock.PathAccess(rw, p.WriteDirs...),
	}
	if len(p.ReadFiles) > 0 {
		rules = append(rules, landlock.ROFiles(p.ReadFiles...).IgnoreIfMissing())
	}
	if len(p.WriteFiles) > 0 {
		rules = append(rules, landlock.RWFiles(p.WriteFiles...).IgnoreIfMissing())
	}
	return cfg.Restrict(rules...)
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
