// Package workspace is the runtime that touches the user's disk and runs
// programs, confined to one root directory.
//
// Every file operation goes through one *os.Root opened at New; no path from
// input is ever joined onto the root by string. os.Root stops path
// traversal, absolute paths and symlinks that leave the root; it does not
// stop special files (devices, FIFOs, sockets, /proc-like files) or mount
// boundaries inside the root, so the workspace refuses those itself.
//
// What the file actions guarantee, and what they do not:
//   - Nothing outside the root is read, listed, stat'ed or written through
//     any path, symlink or symlinked parent, including when the tree is
//     changed concurrently (a directory swapped for a symlink mid-search):
//     every open is resolved by os.Root, walks hold directory handles and
//     never follow symlinks.
//   - Devices, FIFOs and sockets are never read: their type is checked
//     before opening, files are opened non-blocking, and the opened handle
//     is checked again. A device swapped in between the check and the open
//     is opened (an open can have side effects on some devices) but never
//     read. Files on kernel pseudo file systems (proc, sysfs, ...) are
//     refused wherever they are mounted.
//   - Recursive listings and searches do not cross mount points. A path
//     named explicitly may lead into a mount inside the root, as it would
//     for any program; the operator decides what is mounted there.
//   - If the root directory itself is moved, the workspace follows it, as
//     os.Root does.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
)

// Options configure a Workspace. The zero value of each field means the
// default of SPEC section 3 (see DefaultOptions); a false boolean is false.
type Options struct {
	// WriteEnabled allows writing actions; when false they fail with
	// write_disabled before any path is looked at.
	WriteEnabled          bool
	ShellEnabled          bool
	CommandTimeout        time.Duration
	MaxCommandOutputBytes int
	// MaxFileBytes is the largest file workspace_read_file returns whole,
	// and the cap on the content of any read.
	MaxFileBytes int64
	// MaxSearchFiles is how many files one workspace_search_text scans at
	// most.
	MaxSearchFiles int
	// MaxListEntries is the default max_entries of workspace_list_files.
	MaxListEntries        int
	AllowedCommands       []string
	AllowedGitSubcommands []string
	// Sandbox is "required", "best-effort" or "off" (tests only).
	Sandbox string
	// HelperPath is the executable re-run as the sandbox helper (the harness
	// binary itself); empty means os.Executable().
	HelperPath string
	// NetworkCommands names allowed commands that may reach the network
	// (a go that fetches modules): they run without the network namespace,
	// with IP and netlink sockets, and without GOPROXY=off; the plan and
	// the observation say so. Empty (the default): no command has network.
	NetworkCommands []string
	// NoListCache makes every listing read its directory: no cache of
	// listings kept fresh by inotify (see listCache).
	NoListCache bool
	// Logger receives the workspace's warnings (a command runs with less
	// than the full sandbox); nil discards them.
	Logger *slog.Logger
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
	dev      rootDevice // of the root's file system, which is not a pseudo one
	lists    *listCache // nil: every listing reads the directory
	sums     readSums   // the last whole reads of files, to hash again only what changed
	held     heldFiles  // the files read last, open for the next read of each
}

// New opens dir as the workspace root. The path is made absolute and its
// symlinks are resolved once, here; afterwards the root is a directory
// handle, so renaming or replacing the path does not move the workspace.
// A root on a kernel pseudo file system (/proc, /sys, ...) is refused.
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
	if name := pseudoFSOfRoot(root); name != "" {
		root.Close()
		return nil, fmt.Errorf("workspace root %s is on the %s pseudo file system", abs, name)
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
	if opts.AllowedCommands == nil {
		opts.AllowedCommands = def.AllowedCommands
	}
	if opts.AllowedGitSubcommands == nil {
		opts.AllowedGitSubcommands = def.AllowedGitSubcommands
	}
	openRoots.Lock()
	openRoots.n[abs]++
	openRoots.Unlock()
	w := &Workspace{root: root, rootPath: abs, opts: opts, dev: deviceOfRoot(root)}
	if !opts.NoListCache {
		w.lists = newListCache(root)
	}
	return w, nil
}

// openRoots counts the open Workspaces per root in this process: the
// private directory of a root's commands (TMPDIR, build caches) is shared
// by them and removed when the last one closes.
var openRoots = struct {
	sync.Mutex
	n map[string]int
}{n: map[string]int{}}

// Root returns the absolute path of the workspace root.
func (w *Workspace) Root() string { return w.rootPath }

// Close releases the root directory handle and, when it is the last open
// Workspace on its root in this process, removes the private directory its
// commands used. Close a Workspace once.
func (w *Workspace) Close() error {
	openRoots.Lock()
	openRoots.n[w.rootPath]--
	last := openRoots.n[w.rootPath] <= 0
	if last {
		delete(openRoots.n, w.rootPath)
	}
	openRoots.Unlock()
	w.lists.close()
	w.held.close()
	err := w.root.Close()
	if last {
		err = errors.Join(err, w.closeExec())
	}
	return err
}

// Run executes one workspace action. Its input has already been validated
// against the action's schema by the guard; Run still checks types, so a
// direct caller gets invalid_input, never a panic. Failures are
// *action.Error values carrying a stable code.
//
// Every path in input is relative to the root, slash separated, and
// checked as given before any cleaning: NUL bytes and over-long names are
// invalid_input; absolute paths, ".." that leaves the root and symlinks
// (or symlinked parents) that lead outside are path_outside_root; devices,
// FIFOs and sockets, and files on /proc-like pseudo file systems, are
// invalid_input and are never read. Paths in payloads are
// root-relative and slash separated.
//
// The file actions and their payloads:
//
//   - workspace_list_files {path=".", recursive, max_entries, include_git,
//     details=false} -> {"path", "entries" (action.Entries; in JSON
//     [{"path", "name", "type": "file"|"dir"|"symlink"|"other", and with
//     details "size" and "mod_time" (RFC 3339, UTC), at one lstat per
//     entry}]), "truncated"}. Sorted depth first by name; symlinks are listed, never
//     followed; .git contents only with include_git; mount points are not
//     descended into.
//   - workspace_read_file {path, offset, limit} (offset and limit count
//     LINES; offset is 0-based) -> {"path", "content", "sha256" (of the
//     whole file), "size", "lines" (in the whole file), "offset",
//     "limit", "truncated", "binary"}. Without a range, a file over
//     Options.MaxFileBytes is too_large; content is capped at MaxFileBytes
//     in any case. Binary files (NUL in the first 8 KiB) return no content.
//   - workspace_search_text {query, path, regex, glob, max_results=100,
//     case_insensitive} -> {"query", "matches": [{"path", "line",
//     "column" (1-based byte), "text"}], "files_searched", "truncated"}.
//     RE2 regexps matched per line; .gitignore honoured; binaries,
//     symlinks and .git skipped; stops at Options.MaxSearchFiles files or
//     max_results matches.
func (w *Workspace) Run(ctx context.Context, a action.Action) (map[string]any, error) {
	// A redeemed plan runs only while what it was planned on holds. A
	// patch checks under its write locks (applyPatch); the rest here.
	if pre, ok := action.PreconditionsFrom(ctx); ok && a.Name != "workspace_apply_patch" {
		if err := w.checkPreconditions(ctx, pre); err != nil {
			return nil, err
		}
	}
	d, ok := actionIndex[a.Name]
	if !ok {
		return nil, action.Errorf(action.CodeUnknownAction, "workspace has no action %q", a.Name)
	}
	return d.run(w, ctx, a.Input)
}

// HonoursContext reports that the workspace's reads (listing, reading,
// searching, proposing a patch) check their context between steps
// (directories, lines, files) and stop soon after it is done, so that a
// dispatcher may run them on the caller's goroutine
// (runtime.ContextHonouring). A single system call is not interrupted: a
// read from a network file system mounted inside the root that stopped
// answering returns when the kernel returns.
func (w *Workspace) HonoursContext() bool { return true }

// logger is Options.Logger, or one that discards.
func (w *Workspace) logger() *slog.Logger {
	if w.opts.Logger != nil {
		return w.opts.Logger
	}
	return discardLogger
}

var discardLogger = slog.New(slog.DiscardHandler)
