// Package workspace is the runtime that touches the user's disk and runs
// programs, confined to one root directory.
//
// Every file operation goes through one *os.Root opened at New; no path from
// input is ever joined onto the root by string. os.Root stops path
// traversal, absolute paths and symlinks that leave the root; it does not
// stop special files (devices, FIFOs, sockets, /proc-like files) or mount
// boundaries inside the root, so the workspace refuses those itself.
package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/harness-runtime/harness/action"
)

// Options configure a Workspace. The zero value of each field means the
// default of SPEC section 3 (see DefaultOptions); a false boolean is false.
type Options struct {
	WriteEnabled          bool
	ShellEnabled          bool
	CommandTimeout        time.Duration
	MaxCommandOutputBytes int
	MaxFileBytes          int64
	MaxSearchFiles        int
	MaxListEntries        int
	AllowedCommands       []string
	AllowedGitSubcommands []string
	// Sandbox is "required", "best-effort" or "off" (tests only).
	Sandbox string
	// HelperPath is the executable re-run as the sandbox helper (the harness
	// binary itself); empty means os.Executable().
	HelperPath string
}

// DefaultOptions returns the dev-profile defaults of SPEC section 3.
func DefaultOptions() Options {
	return Options{
		WriteEnabled:          true,
		ShellEnabled:          true,
		CommandTimeout:        10 * time.Second,
		MaxCommandOutputBytes: 12000,
		MaxFileBytes:          20000,
		MaxSearchFiles:        1000,
		MaxListEntries:        1000,
		AllowedCommands:       []string{"pwd", "ls", "rg", "git", "go", "make"},
		AllowedGitSubcommands: []string{"status", "diff", "show", "log", "rev-parse", "branch"},
		Sandbox:               "best-effort",
	}
}

// Workspace is a runtime confined to one root directory. It is safe for
// concurrent use.
type Workspace struct {
	root     *os.Root
	rootPath string // absolute, symlinks resolved
	opts     Options
}

// New opens dir as the workspace root.
func New(dir string, opts Options) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace root %s: %w", dir, err)
	}
	if resolved, err := filepath.EvalSymlinks(abs); err == nil {
		abs = resolved
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	def := DefaultOptions()
	if opts.CommandTimeout <= 0 {
		opts.CommandTimeout = def.CommandTimeout
	}
	if opts.MaxCommandOutputBytes <= 0 {
		opts.MaxCommandOutputBytes = def.MaxCommandOutputBytes
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = def.MaxFileBytes
	}
	if opts.MaxSearchFiles <= 0 {
		opts.MaxSearchFiles = def.MaxSearchFiles
	}
	if opts.MaxListEntries <= 0 {
		opts.MaxListEntries = def.MaxListEntries
	}
	if opts.Sandbox == "" {
		opts.Sandbox = def.Sandbox
	}
	return &Workspace{root: root, rootPath: abs, opts: opts}, nil
}

// Root returns the absolute path of the workspace root.
func (w *Workspace) Root() string { return w.rootPath }

// Close releases the root directory handle.
func (w *Workspace) Close() error { return w.root.Close() }

// Run executes one workspace action. Its input has already been validated
// against the action's schema by the guard. Failures are *action.Error
// values carrying a stable code.
func (w *Workspace) Run(ctx context.Context, a action.Action) (map[string]any, error) {
	switch a.Name {
	case "workspace_list_files":
		return w.listFiles(ctx, a.Input)
	case "workspace_read_file":
		return w.readFile(ctx, a.Input)
	case "workspace_search_text":
		return w.searchText(ctx, a.Input)
	case "workspace_propose_patch":
		return w.proposePatch(ctx, a.Input)
	case "workspace_apply_patch":
		return w.applyPatch(ctx, a.Input)
	case "workspace_run_shell":
		return w.runShell(ctx, a.Input)
	}
	return nil, action.Errorf(action.CodeUnknownAction, "workspace has no action %q", a.Name)
}
