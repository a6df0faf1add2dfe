package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/internal/tune"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
)

func init() {
	commands["patch"] = command{
		summary: "apply a patch (unified diff, git diff or *** Begin Patch) inside a root; --dry-run writes nothing",
		run:     runPatch,
	}
}

const patchUsage = `Usage: harness patch [--config FILE] [--root DIR] [--dry-run] [--diff] [--strip N] [--fuzz F] [--trust-line-numbers] [FILE | -]

Reads a patch from FILE, or from stdin when FILE is "-" or absent, and
applies it to the files under DIR (default: harness.workspace.root of the
configuration, else the current directory), all files or none; writes must
be enabled (harness.workspace.write-enabled, on in the dev profile).
Prints one line per file: the operation, the path, the lines added and
removed, and how the hunks were placed (exact, offset, whitespace or
fuzzy). With --dry-run nothing is written.

A hunk whose lines match at several places is refused as ambiguous: its
line number alone does not choose, since a model's numbers can be off by
exactly the period of repetitive code. --trust-line-numbers lifts that for
diffs made by a tool.

It runs as workspace_propose_patch (--dry-run) or workspace_apply_patch,
through the same guard and audit log as every other entry point, with the
trust of the person who runs it.

Exit status: 0 every hunk applies, 1 the patch does not apply (the failing
hunk is explained on stderr), 2 usage or configuration error, 3 refused
(a path outside the root, writes disabled, a rule).

Options:
`

// runPatch is "harness patch".
func runPatch(ctx context.Context, args []string, s stdio) int {
	// A run lives a few milliseconds: collecting garbage as often as a
	// long-lived process does was a sixth of its CPU.
	tune.GC()
	fs := flag.NewFlagSet("patch", flag.ContinueOnError)
	fs.SetOutput(s.err)
	fs.Usage = func() {
		fmt.Fprint(s.err, patchUsage)
		fs.PrintDefaults()
	}
	config := fs.String("config", "", "configuration `FILE` (YAML): harness.workspace.root and write-enabled apply")
	root := fs.String("root", "", "workspace root `DIR` (default: the configured root, else the current directory); no file outside it is read or written")
	dryRun := fs.Bool("dry-run", false, "print what would change and write nothing")
	showDiff := fs.Bool("diff", false, "also print the unified diff of the change")
	strip := fs.Int("strip", -1, "strip `N` leading path components from header names; -1 guesses 0 or 1 (a/ b/ prefixes or none) per file")
	trust := fs.Bool("trust-line-numbers", false, "let a hunk's line number choose among places where its lines match verbatim (for diffs made by diff or git against these very files; never for a model's patch)")
	fuzz := fs.Float64("fuzz", 0, "similarity threshold `F` (0..1) of the fuzzy stage (default 0.8)")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage // the flag package has printed the error and the usage
	}
	if len(pos) > 1 {
		fmt.Fprintf(s.err, "harness patch: want at most one FILE, got %d\n", len(pos))
		return exitUsage
	}
	if *fuzz < 0 || *fuzz > 1 {
		fmt.Fprintln(s.err, "harness patch: --fuzz must be between 0 and 1")
		return exitUsage
	}
	text, err := readPatchText(pos, s.in)
	if err != nil {
		fmt.Fprintf(s.err, "harness patch: %v\n", err)
		return exitUsage
	}
	cfg, err := loadConfig(*config, *root)
	if err != nil {
		fmt.Fprintf(s.err, "harness patch: %v\n", err)
		return exitUsage
	}
	in := map[string]any{"patch": text}
	if *strip >= 0 {
		in["strip"] = *strip
	}
	if *fuzz > 0 {
		in["fuzz"] = *fuzz
	}
	if *trust {
		in["trust_line_numbers"] = true
	}
	e, err := setup(ctx, cfg, s)
	if err != nil {
		fmt.Fprintf(s.err, "harness patch: %v\n", err)
		return exitUsage
	}
	defer e.Close()
	// The person at the terminal vouches for the patch, as --trusted does
	// for harness run; the guard, the audit log and the exit codes are
	// those of the actions themselves. A dry run is workspace_propose_patch,
	// which writes nothing (so it previews even where writes are off).
	name := "workspace_apply_patch"
	if *dryRun {
		name = "workspace_propose_patch"
	}
	obs := e.H.Execute(runtime.WithPrincipal(ctx, "cli"), action.Action{Name: name, Input: in, Trusted: true})
	if obs.Status != action.StatusOK {
		fmt.Fprintf(s.err, "harness patch: %s: %s\n", obs.Code, sanitize.Inert(obs.Message))
		fmt.Fprintln(s.err, "harness patch: nothing was written")
		return obs.Code.ExitCode()
	}
	files, _ := obs.Payload["files"].([]any)
	for _, f := range files {
		m, _ := f.(map[string]any)
		name := fmt.Sprint(m["path"])
		if old, ok := m["old_path"].(string); ok && old != "" {
			name = old + " -> " + name
		}
		fmt.Fprintf(s.out, "%-6s %s (+%v -%v, %v)\n", m["op"], sanitize.Inert(name), m["added"], m["removed"], m["stage"])
	}
	if *showDiff {
		diff, _ := obs.Payload["diff"].(string)
		fmt.Fprint(s.out, sanitize.Inert(diff)) // shown to a person: no disguises

	}
	if *dryRun {
		fmt.Fprintf(s.err, "harness patch: dry run: %d file(s) would change; nothing was written\n", len(files))
	}
	return exitOK
}

func readPatchText(pos []string, stdin io.Reader) (string, error) {
	var r io.Reader = stdin
	name := "stdin"
	if len(pos) == 1 && pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return "", err
		}
		defer f.Close()
		r, name = f, pos[0]
	}
	if r == nil {
		return "", errors.New("no patch on stdin")
	}
	b, err := io.ReadAll(io.LimitReader(r, 16<<20+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > 16<<20 {
		return "", fmt.Errorf("%s: patch is larger than 16 MiB", name)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", fmt.Errorf("%s: empty patch", name)
	}
	return string(b), nil
}
