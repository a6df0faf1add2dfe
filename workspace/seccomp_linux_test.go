//go:build linux && (amd64 || arm64)

package workspace

import (
	"encoding/binary"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"
)

// seccompData is the input of a seccomp filter (struct seccomp_data).
type seccompData struct {
	nr   int32
	arch uint32
	args [6]uint64
}

// runSeccomp interprets the classic BPF subset the filter uses.
func runSeccomp(t *testing.T, prog []unix.SockFilter, d seccompData) uint32 {
	t.Helper()
	buf := make([]byte, 64)
	binary.LittleEndian.PutUint32(buf[0:], uint32(d.nr))
	binary.LittleEndian.PutUint32(buf[4:], d.arch)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(buf[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = binary.LittleEndian.Uint32(buf[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += int(map[bool]uint8{true: in.Jt, false: in.Jf}[acc == in.K])
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += int(map[bool]uint8{true: in.Jt, false: in.Jf}[acc >= in.K])
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += int(map[bool]uint8{true: in.Jt, false: in.Jf}[acc&in.K != 0])
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("unexpected instruction %#v", in)
		}
	}
	t.Fatal("the filter fell off its end")
	return 0
}

// TestSeccompProgramDecisions checks the filter's answer for each kind of
// system call, also those a test program cannot easily make (another ABI,
// x32), with and without the network.
func TestSeccompProgramDecisions(t *testing.T) {
	if !seccompFilterAvailable {
		t.Skip("no filter for this architecture")
	}
	native := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		native = unix.AUDIT_ARCH_AARCH64
	}
	const (
		allow = unix.SECCOMP_RET_ALLOW
		kill  = unix.SECCOMP_RET_KILL_PROCESS
	)
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	call := func(nr uintptr, args ...uint64) seccompData {
		d := seccompData{nr: int32(nr), arch: native}
		copy(d.args[:], args)
		return d
	}
	type tc struct {
		name        string
		d           seccompData
		noNet, open uint32 // the answer with and without the network
	}
	tests := []tc{
		{"read", call(unix.SYS_READ, 0), allow, allow},
		{"socket inet", call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM), errno(unix.EACCES), allow},
		{"socket inet6", call(unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_STREAM), errno(unix.EACCES), allow},
		{"socket netlink", call(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW), errno(unix.EACCES), allow},
		{"socket unix", call(unix.SYS_SOCKET, unix.AF_UNIX, unix.SOCK_STREAM), errno(unix.EACCES), errno(unix.EACCES)},
		{"socket packet", call(unix.SYS_SOCKET, unix.AF_PACKET, unix.SOCK_RAW), errno(unix.EACCES), errno(unix.EACCES)},
		{"socket packet, high bits set", call(unix.SYS_SOCKET, 1<<32|unix.AF_PACKET), errno(unix.EACCES), errno(unix.EACCES)},
		{"socketpair unix", call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM), allow, allow},
		{"socketpair inet", call(unix.SYS_SOCKETPAIR, unix.AF_INET, unix.SOCK_STREAM), errno(unix.EACCES), errno(unix.EACCES)},
		{"io_uring_setup", call(unix.SYS_IO_URING_SETUP, 1), errno(unix.ENOSYS), errno(unix.ENOSYS)},
		{"io_uring_enter", call(unix.SYS_IO_URING_ENTER), errno(unix.ENOSYS), errno(unix.ENOSYS)},
		{"io_uring_register", call(unix.SYS_IO_URING_REGISTER), errno(unix.ENOSYS), errno(unix.ENOSYS)},
		{"clone3", call(unix.SYS_CLONE3), errno(unix.ENOSYS), errno(unix.ENOSYS)},
		{"clone thread", call(unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_THREAD|unix.CLONE_SIGHAND), allow, allow},
		{"clone newuser", call(unix.SYS_CLONE, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), errno(unix.EPERM), errno(unix.EPERM)},
		{"unshare newns", call(unix.SYS_UNSHARE, unix.CLONE_NEWNS), allow, allow},
		{"unshare newuser", call(unix.SYS_UNSHARE, unix.CLONE_NEWUSER|unix.CLONE_NEWNS), errno(unix.EPERM), errno(unix.EPERM)},
		{"keyctl", call(unix.SYS_KEYCTL), errno(unix.EPERM), errno(unix.EPERM)},
		{"add_key", call(unix.SYS_ADD_KEY), errno(unix.EPERM), errno(unix.EPERM)},
		{"request_key", call(unix.SYS_REQUEST_KEY), errno(unix.EPERM), errno(unix.EPERM)},
		{"bpf", call(unix.SYS_BPF), errno(unix.EPERM), errno(unix.EPERM)},
		{"perf_event_open", call(unix.SYS_PERF_EVENT_OPEN), errno(unix.EPERM), errno(unix.EPERM)},
		{"userfaultfd", call(unix.SYS_USERFAULTFD), errno(unix.EPERM), errno(unix.EPERM)},
		{"i386 socketcall", seccompData{nr: 102, arch: unix.AUDIT_ARCH_I386}, kill, kill},
		{"i386 read", seccompData{nr: 3, arch: unix.AUDIT_ARCH_I386}, kill, kill},
		{"arm 32-bit", seccompData{nr: 281, arch: unix.AUDIT_ARCH_ARM}, kill, kill},
	}
	if runtime.GOARCH == "amd64" {
		tests = append(tests, tc{"x32 socket", call(0x40000000 + 41), kill, kill})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for noNet, want := range map[bool]uint32{true: tt.noNet, false: tt.open} {
				if got := runSeccomp(t, seccompProgram(noNet), tt.d); got != want {
					t.Errorf("noNet %v: %#x, want %#x", noNet, got, want)
				}
			}
		})
	}
}
