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
	SandboxRequired   = "required"    // run a command only under Landlock
	SandboxBestEffort = "best-effort" // use Landlock where the kernel has it, say so where not
	SandboxOff        = "off"         // never sandbox (tests and trusted development only)
)

// Values of the "sandbox" field of a run_shell payload.
const (
	SandboxLandlock = "landlock"
	SandboxNone     = "none"
)

// sandboxExitCode is the helper's exit status when it could not set up the
// sandbox or start the program; the status pipe tells the caller which.
const sandboxExitCode = 126

// sandboxPolicy is what the helper enforces on itself before it execs the
// program. It is built by the service (so previews can show it) and passed
// to the helper on its command line.
type sandboxPolicy struct {
	ReadDirs   []string // read and execute beneath
	WriteDirs  []string // read, write, create, remove beneath
	ReadFiles  []string // read single files (/dev/urandom)
	WriteFiles []string // read and write single files (/dev/null)
	NoNet      bool     // no TCP bind or connect, where the ABI has it
	BestEffort bool     // informational: the helper always applies the kernel's full ABI

	StatusFD int // where to report a failure; closed on exec
}

// helperArgs renders the policy and the program as the helper's arguments
// (after SandboxCommand).
func (p sandboxPolicy) helperArgs(program string, argv []string) []string {
	args := make([]string, 0, 2*(len(p.ReadDirs)+len(p.WriteDirs)+len(p.WriteFiles))+len(argv)+8)
	for _, d := range p.ReadDirs {
		args = append(args, "--ro", d)
	}
	for _, d := range p.WriteDirs {
		args = append(args, "--rw", d)
	}
	for _, f := range p.ReadFiles {
		args = append(args, "--ro-file", f)
	}
	for _, f := range p.WriteFiles {
		args = append(args, "--rw-file", f)
	}
	if p.NoNet {
		args = append(args, "--no-net")
	}
	if p.BestEffort {
		args = append(args, "--best-effort")
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
		case "--status-fd":
			v, err = next()
			var fd int
			if err == nil {
				fd, err = strconv.Atoi(v)
			}
			if err == nil && fd < 3 {
				err = fmt.Errorf("--status-fd %d: want a descriptor >= 3", fd)
			}
			if err == nil {
				p.StatusFD = fd
			}
		case "--":
			rest := args[i+1:]
			if len(rest) < 2 {
				return p, "", nil, errors.New("want -- PROGRAM ARGV0 [ARGS...]")
			}
			if !strings.HasPrefix(rest[0], "/") {
				return p, "", nil, fmt.Errorf("program %q is not an absolute path", rest[0])
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
//	[--ro DIR]... [--rw DIR]... [--ro-file F]... [--rw-file F]... [--no-net] [--best-effort]
//	[--status-fd N] -- /abs/program argv0 [args...]
//
// It restricts itself with Landlock (read and execute beneath the
// --ro directories and the --ro-file files, also write beneath the --rw
// directories and the --rw-file files, but never create device nodes; no
// TCP bind or connect with --no-net) and then replaces itself with the
// program, passing its own environment unchanged; the caller gives it a
// clean one. The rights handled are all those of the kernel's Landlock ABI;
// a kernel without Landlock is an error even with --best-effort (the
// service never starts the helper there).
//
// It returns only on failure, with exit status 126 after writing the reason
// to the status descriptor (if any) and to stderr: the program never runs
// unconfined because of a failure here. It is not meant for people; the
// caller is Workspace.
func SandboxMain(args []string) int {
	p, program, argv, err := parseHelperArgs(args)
	if err == nil {
		err = restrictSelf(p)
		if err == nil {
			err = execProgram(program, argv, p.StatusFD)
		} else {
			err = fmt.Errorf("landlock: %w", err)
		}
	}
	msg := "harness sandbox: " + err.Error()
	if p.StatusFD > 0 {
		f := os.NewFile(uintptr(p.StatusFD), "status")
		_, _ = f.WriteString(msg)
		_ = f.Close()
	}
	fmt.Fprintln(os.Stderr, msg)
	return sandboxExitCode
}
