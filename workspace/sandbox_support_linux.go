//go:build linux

package workspace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func serviceIsRoot() bool { return os.Geteuid() == 0 }

func probeSandbox() SandboxFeatures {
	f := SandboxFeatures{LandlockABI: landlockABI(), Missing: map[string]string{}}
	if f.LandlockABI == 0 {
		f.Missing[SandboxLayerLandlock] = "this kernel does not offer Landlock"
	}
	if why := probeSeccomp(); why != "" {
		f.Missing[SandboxLayerSeccomp] = why
	} else {
		f.Seccomp = true
	}

	userErr := probeNamespaces(syscall.CLONE_NEWUSER)
	if userErr == nil && !serviceIsRoot() && readSysctl("kernel/apparmor_restrict_unprivileged_userns") == "1" {
		userErr = errors.New("AppArmor withholds capabilities in unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1)")
	}
	f.UserNS = userErr == nil
	// The namespaces are probed as the sandbox makes them: owned by a new
	// user namespace, except for a root service (see planSandbox).
	var base uintptr
	if !f.UserNS {
		f.Missing[SandboxLayerUserNS] = "cannot make a user namespace: " + userErr.Error()
	} else if !serviceIsRoot() {
		base = syscall.CLONE_NEWUSER
	}
	for _, ns := range []struct {
		layer string
		flag  uintptr
		ok    *bool
	}{
		{SandboxLayerMountNS, syscall.CLONE_NEWNS, &f.MountNS},
		{SandboxLayerPIDNS, syscall.CLONE_NEWPID | syscall.CLONE_NEWIPC, &f.PIDNS},
		{SandboxLayerNetNS, syscall.CLONE_NEWNET, &f.NetNS},
	} {
		if !f.UserNS && !serviceIsRoot() {
			f.Missing[ns.layer] = "needs a user namespace, which is missing"
			continue
		}
		if err := probeNamespaces(base | ns.flag); err != nil {
			f.Missing[ns.layer] = "cannot make the namespace: " + err.Error()
			continue
		}
		*ns.ok = true
	}
	if f.MountNS {
		var attr unix.MountAttr
		if err := unix.MountSetattr(-1, "", unix.AT_EMPTY_PATH, &attr); errors.Is(err, unix.ENOSYS) {
			f.MountNS = false
			f.Missing[SandboxLayerMountNS] = "the kernel lacks mount_setattr (Linux 5.12+)"
		}
	}
	if f.PIDNS {
		if why := procMountBlocked(); why != "" {
			f.PIDNS = false
			f.Missing[SandboxLayerPIDNS] = why
		} else if !f.MountNS {
			f.PIDNS = false
			f.Missing[SandboxLayerPIDNS] = "a private /proc needs the mount namespace, which is missing"
		}
	}
	return f
}

// probeNamespaces makes a child in new namespaces (flags) and lets it fail
// to exec a path that does not exist: ENOENT means the namespaces were made
// (and, with a user namespace, its uid and gid maps written).
func probeNamespaces(flags uintptr) error {
	attr := &syscall.SysProcAttr{Cloneflags: flags}
	if flags&syscall.CLONE_NEWUSER != 0 {
		attr.UidMappings, attr.GidMappings = selfIDMaps()
	}
	pid, err := syscall.ForkExec("/nonexistent/harness-sandbox-namespace-probe", []string{"probe"},
		&syscall.ProcAttr{Sys: attr})
	if err == nil {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
		return errors.New("the probe unexpectedly ran")
	}
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	return err
}

// selfIDMaps maps the service's effective uid and gid onto themselves, the
// only mapping an unprivileged process may write.
func selfIDMaps() (uids, gids []syscall.SysProcIDMap) {
	return []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}},
		[]syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
}

func probeSeccomp() string {
	if !seccompFilterAvailable {
		return "the helper has no seccomp filter for this architecture"
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return fmt.Sprintf("the kernel does not filter system calls (prctl(PR_GET_SECCOMP): %v)", err)
	}
	if actions := readSysctl("kernel/seccomp/actions_avail"); actions != "" {
		for _, want := range []string{"errno", "kill_process"} {
			if !slices.Contains(strings.Fields(actions), want) {
				return "the kernel's seccomp lacks the " + want + " action"
			}
		}
	}
	return ""
}

// procMountBlocked tells why the kernel would refuse a new proc mount in a
// user namespace, "" when it would not. The kernel allows it only where a
// proc mount is already fully visible: every mount beneath /proc must sit
// on one of proc's own empty mount-point directories, of which binfmt_misc
// is the only one in practice. Containers that mask /proc/kcore or
// /proc/acpi with mounts break that.
func procMountBlocked() string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "cannot read /proc/self/mountinfo: " + err.Error()
	}
	sawProc := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mnt := fields[4]
		if mnt == "/proc" {
			sep := slices.Index(fields, "-")
			if sep > 0 && sep+1 < len(fields) && fields[sep+1] == "proc" {
				sawProc = true
			}
			continue
		}
		if strings.HasPrefix(mnt, "/proc/") && mnt != "/proc/sys/fs/binfmt_misc" {
			return "something is mounted over " + mnt + " (a container's masked path), so the kernel refuses a private /proc"
		}
	}
	if !sawProc {
		return "no proc file system is mounted on /proc"
	}
	return ""
}

// readSysctl returns the trimmed content of /proc/sys/name, "" if absent.
func readSysctl(name string) string {
	b, err := os.ReadFile("/proc/sys/" + name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
