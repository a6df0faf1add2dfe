// Command harness is the Harness CLI: run one action, dry-run or apply a
// patch, serve the HTTP API or the MCP bridge, inspect the schema registry
// and verify an audit log. See SPEC.md section 4 for the contract.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"sort"
	"syscall"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/internal/tune"
)

// Exit codes of SPEC section 4.
const (
	exitOK                = action.ExitOK
	exitActionError       = action.ExitActionError
	exitUsage             = action.ExitUsage
	exitBlocked           = action.ExitBlocked
	exitNeedsConfirmation = action.ExitNeedsConfirmation
)

// command is one sub-command. It returns the process exit code. Messages for
// people go to stderr, machine output to stdout.
type command struct {
	summary string
	hidden  bool
	run     func(ctx context.Context, args []string, io stdio) int
}

type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// commands is filled by the init functions of this package's files, one
// file per sub-command.
var commands = map[string]command{}

func main() {
	tune.AfterInit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startProfile(os.Getenv("HARNESS_CPUPROFILE"))
	code := dispatch(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stopProfile()
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of the whole process to path (from
// HARNESS_CPUPROFILE), for `go tool pprof`, until the returned function is
// called; with no path it does nothing.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "harness: HARNESS_CPUPROFILE: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

func dispatch(ctx context.Context, args []string, s stdio) int {
	args, format, ok := takeLogFormat(args)
	if !ok {
		fmt.Fprintln(s.err, "harness: --log-format takes text or json")
		return exitUsage
	}
	logFormat = format
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		args = []string{"version"}
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(s.err)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(s.err, "harness: unknown command %q\n\n", args[0])
		usage(s.err)
		return exitUsage
	}
	return cmd.run(ctx, args[1:], s)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "Harness stands between an agent's model and the world: it validates, guards,")
	fmt.Fprintln(w, "runs and audits the actions a model proposes.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Usage: harness COMMAND [options]   (harness COMMAND --help for its options)")
	fmt.Fprintln(w)
	names := make([]string, 0, len(commands))
	for n, c := range commands {
		if !c.hidden {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Exit codes: 0 ok, 1 action error, 2 usage or config error, 3 refused by policy,")
	fmt.Fprintln(w, "4 needs confirmation.")
}
