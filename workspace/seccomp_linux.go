//go:build linux && (amd64 || arm64)

package workspace

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompFilterAvailable reports that installSeccomp has a filter for this
// architecture.
const seccompFilterAvailable = true

// installSeccomp installs the system call filter of SandboxLayerSeccomp on
// the calling thread, and so on the program it starts. The caller has set
// no_new_privs.
//
// With noNet every socket(2) fails with EACCES, of any family (IP, raw,
// packet, netlink, and Unix, whose pathname sockets outside the root
// Landlock only governs from ABI 9 on and abstract ones only from ABI 6
// on); only socketpair(AF_UNIX), which reaches nothing outside the
// process tree, is allowed. Without noNet (a network command) socket(2) is
// allowed for AF_INET, AF_INET6 and AF_NETLINK (name resolution needs it)
// only. Always refused: io_uring (its operations make sockets and open
// files without passing through this filter; ENOSYS, so programs fall back
// to plain system calls), clone3 (its flags are in memory the filter cannot
// read; ENOSYS, so libc falls back to clone), clone and unshare with
// CLONE_NEWUSER (a new user namespace would give back capabilities in it),
// the kernel keyring (shared with the service's session), bpf,
// perf_event_open and userfaultfd. A system call of another ABI (i386's int
// 0x80 and its socketcall multiplexer, x32) kills the process: the filter
// could not tell one from another.
func installSeccomp(noNet bool) error {
	prog := seccompProgram(noNet)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECCOMP): %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}

// seccompProgram assembles the classic BPF filter of installSeccomp.
func seccompProgram(noNet bool) []unix.SockFilter {
	var arch uint32
	switch runtime.GOARCH {
	case "amd64":
		arch = unix.AUDIT_ARCH_X86_64
	case "arm64":
		arch = unix.AUDIT_ARCH_AARCH64
	}
	const (
		offNr   = 0  // seccomp_data.nr
		offArch = 4  // seccomp_data.arch
		offArg0 = 16 // seccomp_data.args[0], low half on little-endian
		x32Bit  = 0x40000000
		allow   = unix.SECCOMP_RET_ALLOW
		kill    = unix.SECCOMP_RET_KILL_PROCESS
	)
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	jset := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }

	// Each rule is "if nr == Nr { Body }"; every body ends in a return.
	type rule struct {
		nr   uintptr
		body []unix.SockFilter
	}
	refuse := func(e unix.Errno) []unix.SockFilter { return []unix.SockFilter{ret(errno(e))} }
	noNewUser := []unix.SockFilter{
		ld(offArg0), jset(unix.CLONE_NEWUSER, 0, 1), ret(errno(unix.EPERM)), ret(allow),
	}
	socket := refuse(unix.EACCES)
	if !noNet {
		socket = []unix.SockFilter{
			ld(offArg0),
			jeq(unix.AF_INET, 3, 0),
			jeq(unix.AF_INET6, 2, 0),
			jeq(unix.AF_NETLINK, 1, 0),
			ret(errno(unix.EACCES)),
			ret(allow),
		}
	}
	rules := []rule{
		{unix.SYS_SOCKET, socket},
		{unix.SYS_SOCKETPAIR, []unix.SockFilter{ld(offArg0), jeq(unix.AF_UNIX, 0, 1), ret(allow), ret(errno(unix.EACCES))}},
		{unix.SYS_IO_URING_SETUP, refuse(unix.ENOSYS)},
		{unix.SYS_IO_URING_ENTER, refuse(unix.ENOSYS)},
		{unix.SYS_IO_URING_REGISTER, refuse(unix.ENOSYS)},
		{unix.SYS_CLONE3, refuse(unix.ENOSYS)},
		{unix.SYS_CLONE, noNewUser},
		{unix.SYS_UNSHARE, noNewUser},
		{unix.SYS_KEYCTL, refuse(unix.EPERM)},
		{unix.SYS_ADD_KEY, refuse(unix.EPERM)},
		{unix.SYS_REQUEST_KEY, refuse(unix.EPERM)},
		{unix.SYS_BPF, refuse(unix.EPERM)},
		{unix.SYS_PERF_EVENT_OPEN, refuse(unix.EPERM)},
		{unix.SYS_USERFAULTFD, refuse(unix.EPERM)},
	}

	prog := []unix.SockFilter{
		ld(offArch),
		jeq(arch, 1, 0),
		ret(kill), // another ABI
	}
	if runtime.GOARCH == "amd64" {
		prog = append(prog,
			ld(offNr),
			unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32Bit, Jt: 0, Jf: 1},
			ret(kill), // x32
		)
	}
	for _, r := range rules {
		prog = append(prog, ld(offNr), jeq(uint32(r.nr), 0, uint8(len(r.body))))
		prog = append(prog, r.body...)
	}
	return append(prog, ret(allow))
}
