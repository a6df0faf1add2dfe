//go:build linux

package workspace

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sandboxProbeName is the name under which the test binary, linked into a
// workspace root, acts as a small program that tries what a hostile command
// would try (sockets, system calls, files) and prints what happened, one
// "check result" line per argument: "ok", "ok:<data>" or "err=<ERRNO>".
const sandboxProbeName = "harness-sandbox-probe"

func init() {
	if filepath.Base(os.Args[0]) == sandboxProbeName {
		// Not os.Exit: built with the race detector it sleeps a second.
		syscall.Exit(sandboxProbeMain(os.Args[1:]))
	}
}

func sandboxProbeMain(args []string) int {
	for _, a := range args {
		name, arg, _ := strings.Cut(a, "=")
		fmt.Printf("%s %s\n", a, probeOne(name, arg))
	}
	return 0
}

func probeResult(err error) string {
	if err == nil {
		return "ok"
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return "err=" + unix.ErrnoName(en)
	}
	return "err=" + strings.ReplaceAll(err.Error(), " ", "_")
}

func probeOne(name, arg string) string {
	socket := func(domain, typ, proto int) (int, string) {
		fd, err := unix.Socket(domain, typ, proto)
		if err != nil {
			return -1, probeResult(err)
		}
		return fd, ""
	}
	port, _ := strconv.Atoi(arg)
	loop4 := &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}
	switch name {
	case "udp4":
		fd, r := socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if fd < 0 {
			return r
		}
		defer unix.Close(fd)
		return probeResult(unix.Sendto(fd, []byte("probe"), 0, loop4))
	case "tcp4":
		fd, r := socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if fd < 0 {
			return r
		}
		defer unix.Close(fd)
		return probeResult(unix.Connect(fd, loop4))
	case "udp6", "tcp6":
		typ := unix.SOCK_DGRAM
		if name == "tcp6" {
			typ = unix.SOCK_STREAM
		}
		fd, r := socket(unix.AF_INET6, typ, 0)
		if fd < 0 {
			return r
		}
		unix.Close(fd)
		return "ok"
	case "raw":
		fd, r := socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
		if fd >= 0 {
			unix.Close(fd)
			return "ok"
		}
		return r
	case "packet":
		fd, r := socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
		if fd >= 0 {
			unix.Close(fd)
			return "ok"
		}
		return r
	case "netlink":
		fd, r := socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
		if fd >= 0 {
			unix.Close(fd)
			return "ok"
		}
		return r
	case "unix", "abstract":
		fd, r := socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if fd < 0 {
			return r
		}
		defer unix.Close(fd)
		if name == "abstract" {
			arg = "@" + arg
		}
		return probeResult(unix.Connect(fd, &unix.SockaddrUnix{Name: arg}))
	case "socketpair":
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
		}
		return probeResult(err)
	case "io_uring":
		var params [120]byte
		fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
		if e != 0 {
			return probeResult(e)
		}
		unix.Close(int(fd))
		return "ok"
	case "clone3":
		// Size 0 makes an allowed clone3 fail with EINVAL before doing
		// anything; the filter answers ENOSYS.
		_, _, e := unix.Syscall(unix.SYS_CLONE3, 0, 0, 0)
		return probeResult(e)
	case "userns":
		// A child in a new user namespace that then fails to exec a path
		// that does not exist: ENOENT means the namespace was made.
		_, err := syscall.ForkExec("/nonexistent/probe", []string{"x"},
			&syscall.ProcAttr{Sys: &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}})
		if errors.Is(err, syscall.ENOENT) {
			return "ok"
		}
		return probeResult(err)
	case "keyctl":
		const keyctlGetKeyringID, keySpecSessionKeyring = 0, -3
		_, _, e := unix.Syscall(unix.SYS_KEYCTL, keyctlGetKeyringID, uintptr(keySpecSessionKeyring&0xffffffff), 0)
		if e == 0 {
			return "ok"
		}
		return probeResult(e)
	case "status":
		b, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return probeResult(err)
		}
		var out []string
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "Cap") || strings.HasPrefix(line, "NoNewPrivs") || strings.HasPrefix(line, "Seccomp:") {
				out = append(out, strings.Join(strings.Fields(line), ""))
			}
		}
		return "ok:" + strings.Join(out, ",")
	case "read":
		f, err := os.Open(arg)
		if err != nil {
			return probeResult(err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, 1<<16))
		if err != nil {
			return probeResult(err)
		}
		return "ok:" + strings.NewReplacer("\x00", " ", "\n", "\\n").Replace(string(b))
	case "ls":
		names, err := os.ReadDir(arg)
		if err != nil {
			return probeResult(err)
		}
		var out []string
		for _, n := range names {
			out = append(out, n.Name())
		}
		return "ok:" + strings.Join(out, ",")
	}
	return "unknown-check"
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// linkProbe puts the probe program into the workspace root (a hard link to
// the test binary where possible, a copy otherwise), so that a Makefile
// recipe can run it as ./harness-sandbox-probe.
func linkProbe(t testing.TB, root string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, sandboxProbeName)
	if os.Link(self, dst) == nil {
		return
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// probeRecipe is a Makefile whose only recipe runs the probe with checks.
func probeRecipe(checks ...string) string {
	return "all:\n\t@./" + sandboxProbeName + " " + strings.Join(checks, " ") + "\n"
}

// probeResults parses the probe's output into check -> result.
func probeResults(stdout string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(stdout, "\n") {
		if check, res, ok := strings.Cut(line, " "); ok {
			out[check] = res
		}
	}
	return out
}
