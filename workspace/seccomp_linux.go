//go:build linux && (amd64 || arm64)

package workspace

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// denyUnixSockets installs a seccomp filter on the calling thread (and so
// on the program it execs) that makes socket(AF_UNIX, ...) fail with
// EACCES. Before Landlock ABI 9 nothing else stops a sandboxed command from
// connecting to a Unix socket anywhere (a container runtime's, a database's,
// the service's own), which Landlock's file rules do not cover.
// socketpair stays allowed: it reaches nothing outside the process tree.
//
// System calls of another architecture (i386 int 0x80, x32) are refused
// outright, since their socketcall multiplexer hides the arguments.
// The caller has set no_new_privs.
func denyUnixSockets() error {
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
		deny    = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		allow   = unix.SECCOMP_RET_ALLOW
	)
	ld := func(off uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: off}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	prog := []unix.SockFilter{
		/* 0 */ ld(offArch),
		/* 1 */ jeq(arch, 0, 6), // other arch -> deny (8)
		/* 2 */ ld(offNr),
		/* 3 */ {Code: unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K, K: x32Bit, Jt: 4, Jf: 0}, // x32 -> deny (8)
		/* 4 */ jeq(uint32(unix.SYS_SOCKET), 0, 2), // not socket -> allow (7)
		/* 5 */ ld(offArg0),
		/* 6 */ jeq(unix.AF_UNIX, 1, 0), // AF_UNIX -> deny (8)
		/* 7 */ ret(allow),
		/* 8 */ ret(deny),
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&fprog)), 0, 0); err != nil {
		return fmt.Errorf("seccomp: %w", err)
	}
	runtime.KeepAlive(prog)
	return nil
}
