package workspace

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// SandboxCommand is the hidden sub-command under which the helper binary
// (Options.HelperPath, by default the running executable) is re-executed to
// sandbox one command. A program that embeds Workspace and runs commands with
// the sandbox on must dispatch it to SandboxMain before anything else:
//
//	if len(os.Args) > 1 && os.Args[1] == workspace.SandboxCommand {
//		os.Exit(workspace.SandboxMain(os.Args[2:]))
//	}
//
// The harness binary does this (cmd/harness/sandbox.go).
const SandboxCommand = "__sandbox"

// Sandbox modes of Options.Sandbox.
const (
	SandboxRequired   = "required"    // run a command only with every sandbox layer
	SandboxBestEffort = "best-effort" // use the layers the kernel has, say which are missing
	SandboxOff        = "off"         // never sandbox (tests and trusted development only)
)

// Values of the "sandbox" field of a run_shell payload and plan preview.
const (
	// SandboxFull: every layer of the sandbox was applied. For a command
	// listed in Options.NetworkCommands the network layers are left out by
	// configuration, and no_network is false.
	SandboxFull = "full"
	// SandboxPartial: best-effort mode left out the layers named in
	// sandbox_missing, which the kernel (or the host) does not offer.
	SandboxPartial = "partial"
	// SandboxNone: the command ran without the helper (sandbox off, or no
	// helper in best-effort mode).
	SandboxNone = "none"
)

// Sandbox layers, as listed in the "sandbox_layers" and "sandbox_missing"
// fields of a run_shell payload and plan preview.
const (
	// SandboxLayerLandlock confines the file system: read and execute
	// beneath the system directories, an allowlist of /etc, a few devices;
	// also write beneath the root and the command's private directory. With
	// no_network, TCP bind and connect are denied too (Landlock ABI 4+).
	SandboxLayerLandlock = "landlock"
	// SandboxLayerUserNS: the namespaces below are owned by a new user
	// namespace, which an unprivileged service needs to make them. A root
	// service makes them without one (so this layer is not listed for it):
	// the command has no capability either way.
	SandboxLayerUserNS = "user-ns"
	// SandboxLayerPIDNS: the command is in its own PID namespace with a
	// private, read-only /proc, so it sees no other process; the helper is
	// its init, and when the command's main program exits every process it
	// started is killed by the kernel.
	SandboxLayerPIDNS = "pid-ns"
	// SandboxLayerMountNS: the root's .git and .harness (and the caller's
	// read-only binds) are mounted read-only for the command; when absent
	// they are held by an empty read-only placeholder file for the
	// duration of the command, so the command cannot create them.
	SandboxLayerMountNS = "mount-ns"
	// SandboxLayerNetNS: the command is in an empty network namespace.
	SandboxLayerNetNS = "net-ns"
	// SandboxLayerSeccomp: a system call filter refuses every way of making
	// a socket except socketpair(AF_UNIX) (for network commands: sockets
	// other than IP and netlink), io_uring, new user namespaces, the kernel
	// keyring, bpf, perf events, userfaultfd, and system calls of another
	// ABI (i386, x32).
	SandboxLayerSeccomp = "seccomp"
	// SandboxLayerNoCaps: every capability is dropped (effective,
	// permitted, inheritable, ambient and bounding sets), the securebits
	// keep it that way, and no_new_privs is set. The helper always does
	// this.
	SandboxLayerNoCaps = "no-caps"
)

// requiredLayers are the layers that SandboxRequired insists on (the user
// namespace is not one: a root service makes the others without it).
var requiredLayers = []string{
	SandboxLayerLandlock, SandboxLayerPIDNS, SandboxLayerMountNS, SandboxLayerNetNS, SandboxLayerSeccomp,
}

// sandboxExitCode is the helper's exit status when it could not set up the
// sandbox or start the program; the status pipe tells the caller which.
const sandboxExitCode = 126

// sandboxPolicy is what the helper enforces before it runs the program. It
// is built by the service (so previews can show it) and passed to the
// helper on its command line.
type sandboxPolicy struct {
	ReadDirs   []string // read and execute beneath
	WriteDirs  []string // read, write, create, remove beneath
	ReadFiles  []string // read (and list) beneath, execute nothing (/dev/urandom, /etc/passwd, /etc/ssl/certs)
	WriteFiles []string // read and write single files (/dev/null)
	NoNet      bool     // no sockets but socketpair(AF_UNIX); no TCP (Landlock)
	BestEffort bool     // informational
	NoLandlock bool     // best-effort on a kernel without Landlock
	Seccomp    bool     // install the system call filter

	// MountNS: the helper runs in a new mount namespace: it makes every
	// mount private, then mounts Protect and ROBinds read-only.
	MountNS bool
	// PIDNS: the helper is PID 1 of a new PID namespace: it mounts a
	// private /proc and stays as the program's init (needs MountNS).
	PIDNS bool
	// NetNSFD, when > 0, is a descriptor (inherited from the service) of
	// an empty network namespace that the helper joins.
	NetNSFD int
	// Protect are descriptors (inherited from the service) of directories
	// and files that are bound read-only onto themselves: the root's .git
	// and .harness. Path is for messages only.
	Protect []protectFD
	// ROBinds are (src, dst) absolute paths: src is bound read-only over
	// dst, after Protect (so a file inside .git can be covered). dst must
	// exist and not be a symlink.
	ROBinds [][2]string

	StatusFD int // where to report a failure; closed once the program runs
}

type protectFD struct {
	FD   int
	Path string
}

// helperArgs renders the policy and the program as the helper's arguments
// (after SandboxCommand).
func (p sandboxPolicy) helperArgs(program string, argv []string) []string {
	args := make([]string, 0, 2*(len(p.ReadDirs)+len(p.WriteDirs)+len(p.ReadFiles)+len(p.WriteFiles))+
		3*(len(p.Protect)+len(p.ROBinds))+len(argv)+12)
	for _, g := range []struct {
		opt   string
		paths []string
	}{{"--ro", p.ReadDirs}, {"--rw", p.WriteDirs}, {"--ro-file", p.ReadFiles}, {"--rw-file", p.WriteFiles}} {
		for _, d := range g.paths {
			args = append(args, g.opt, d)
		}
	}
	for _, f := range []struct {
		on  bool
		opt string
	}{{p.NoNet, "--no-net"}, {p.BestEffort, "--best-effort"}, {p.NoLandlock, "--no-landlock"}, {p.Seccomp, "--seccomp"},
		{p.MountNS, "--mount-ns"}, {p.PIDNS, "--pid-ns"}} {
		if f.on {
			args = append(args, f.opt)
		}
	}
	if p.NetNSFD > 0 {
		args = append(args, "--netns-fd", strconv.Itoa(p.NetNSFD))
	}
	for _, pr := range p.Protect {
		args = append(args, "--protect-fd", strconv.Itoa(pr.FD), pr.Path)
	}
	for _, b := range p.ROBinds {
		args = append(args, "--ro-bind", b[0], b[1])
	}
	if p.StatusFD > 0 {
		args = append(args, "--status-fd", strconv.Itoa(p.StatusFD))
	}
	args = append(args, "--", program)
	return append(args, argv...)
}

// parseHelperArgs is the inverse of helperArgs. It returns the policy, the
// program path and its argv (argv[0] included).
func parseHelperArgs(args []string) (sandboxPolicy, string, []string, error) {
	var p sandboxPolicy
	for i := 0; i < len(args); i++ {
		a := args[i]
		next := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("%s needs a value", a)
			}
			i++
			return args[i], nil
		}
		fd := func() (int, error) {
			v, err := next()
			if err != nil {
				return 0, err
			}
			n, err := strconv.Atoi(v)
			if err == nil && n < 3 {
				err = fmt.Errorf("%s %d: want a descriptor >= 3", a, n)
			}
			return n, err
		}
		abs := func() (string, error) {
			v, err := next()
			if err == nil && !strings.HasPrefix(v, "/") {
				err = fmt.Errorf("%s %q: want an absolute path", a, v)
			}
			return v, err
		}
		var err error
		var v string
		switch a {
		case "--ro":
			v, err = next()
			p.ReadDirs = append(p.ReadDirs, v)
		case "--rw":
			v, err = next()
			p.WriteDirs = append(p.WriteDirs, v)
		case "--ro-file":
			v, err = next()
			p.ReadFiles = append(p.ReadFiles, v)
		case "--rw-file":
			v, err = next()
			p.WriteFiles = append(p.WriteFiles, v)
		case "--no-net":
			p.NoNet = true
		case "--best-effort":
			p.BestEffort = true
		case "--no-landlock":
			p.NoLandlock = true
		case "--seccomp":
			p.Seccomp = true
		case "--mount-ns":
			p.MountNS = true
		case "--pid-ns":
			p.PIDNS = true
		case "--netns-fd":
			p.NetNSFD, err = fd()
		case "--protect-fd":
			var pr protectFD
			if pr.FD, err = fd(); err == nil {
				pr.Path, err = abs()
			}
			p.Protect = append(p.Protect, pr)
		case "--ro-bind":
			var b [2]string
			if b[0], err = abs(); err == nil {
				b[1], err = abs()
			}
			p.ROBinds = append(p.ROBinds, b)
		case "--status-fd":
			var n int
			if n, err = fd(); err == nil {
				p.StatusFD = n // a refused descriptor is never kept: it may be stdout
			}
		case "--":
			rest := args[i+1:]
			if len(rest) < 2 {
				return p, "", nil, errors.New("want -- PROGRAM ARGV0 [ARGS...]")
			}
			if !strings.HasPrefix(rest[0], "/") {
				return p, "", nil, fmt.Errorf("program %q is not an absolute path", rest[0])
			}
			if (p.PIDNS || len(p.Protect) > 0 || len(p.ROBinds) > 0) && !p.MountNS {
				return p, "", nil, errors.New("--pid-ns, --protect-fd and --ro-bind need --mount-ns")
			}
			return p, rest[0], rest[1:], nil
		default:
			return p, "", nil, fmt.Errorf("unknown option %q", a)
		}
		if err != nil {
			return p, "", nil, err
		}
	}
	return p, "", nil, errors.New("missing -- PROGRAM")
}

// SandboxMain is the body of the hidden helper sub-command. args are the
// words after SandboxCommand:
//
//	[--ro DIR]... [--rw DIR]... [--ro-file F]... [--rw-file F]...
//	[--no-net] [--best-effort] [--no-landlock] [--seccomp]
//	[--mount-ns] [--pid-ns] [--netns-fd N] [--protect-fd N PATH]... [--ro-bind SRC DST]...
//	[--status-fd N] -- /abs/program argv0 [args...]
//
// The service starts it in new namespaces (see SandboxSupport); the helper
// then, in this order:
//
//   - with --netns-fd, joins that network namespace (an empty one the
//     service keeps for its commands);
//   - with --mount-ns, makes every mount private to its namespace, binds
//     each --protect-fd descriptor read-only onto itself, then each
//     --ro-bind SRC read-only over DST (DST must exist and not be a
//     symlink); with --pid-ns (it must be PID 1 of a new PID namespace) it
//     mounts a private read-only /proc;
//   - unless --no-landlock, restricts itself with Landlock: read and
//     execute beneath --ro, read (and list) beneath --ro-file, also
//     write beneath --rw and to --rw-file, never create device nodes; with
//     --no-net no TCP bind or connect. The rights handled are all those of
//     the kernel's Landlock ABI;
//   - sets no_new_privs, drops every capability (bounding, ambient,
//     inheritable, permitted, effective) and locks the securebits;
//   - with --seccomp, installs the system call filter (see
//     SandboxLayerSeccomp; --no-net adds the socket rules);
//   - with --pid-ns, starts the program as its child and stays as its
//     init: it reaps orphans and, when the program exits, exits with the
//     program's status (128+N when killed by signal N), at which point the
//     kernel kills whatever else is left in the namespace. Without
//     --pid-ns it replaces itself with the program.
//
// The program gets the helper's environment unchanged (the caller gives it
// a clean one) and none of its other descriptors.
//
// It returns only on failure, with exit status 126 after writing the reason
// to the status descriptor (if any) and to stderr: the program never runs
// less confined than asked because of a failure here. It is not meant for
// people; the caller is Workspace.
func SandboxMain(args []string) int {
	p, program, argv, err := parseHelperArgs(args)
	if err == nil && p.StatusFD >= 3 {
		// The first byte on the status descriptor says the helper is
		// running: a program re-run as the helper that does not hand the
		// sub-command to SandboxMain writes nothing, and the caller says so
		// instead of taking that program's exit for the command's.
		if werr := writeStatus(p.StatusFD, []byte{helperStarted}); werr != nil {
			err = fmt.Errorf("status descriptor: %w", werr)
		}
	}
	if err == nil {
		err = runSandboxed(p, program, argv)
	}
	return reportHelperFailure(p.StatusFD, err)
}

// helperStarted is the byte SandboxMain writes first on the status
// descriptor.
const helperStarted = '+'

// reportHelperFailure writes err to the status descriptor (if any) and to
// stderr and returns the helper's failure status.
func reportHelperFailure(statusFD int, err error) int {
	msg := "harness sandbox: " + err.Error()
	if statusFD >= 3 { // never stdin, stdout or stderr, whatever was asked
		f := os.NewFile(uintptr(statusFD), "status")
		_, _ = f.WriteString(msg)
		_ = f.Close()
	}
	fmt.Fprintln(os.Stderr, msg)
	return sandboxExitCode
}
