package trusted

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace"
)

// Plan is what a Planner says an action will do: the preview shown to the
// person who approves it, and the state of every file the action will
// touch, checked again just before it runs.
type Plan struct {
	Preview map[string]any
	Files   []FileState
}

// Planner computes the plan of one kind of action without changing
// anything. The guard has already allowed the action (as trusted) when
// Plan is called. Errors carry an action code (see action.Errorf).
type Planner interface {
	Plan(ctx context.Context, a action.Action) (Plan, error)
}

// PlannerFunc adapts a function to Planner.
type PlannerFunc func(ctx context.Context, a action.Action) (Plan, error)

// Plan calls f.
func (f PlannerFunc) Plan(ctx context.Context, a action.Action) (Plan, error) { return f(ctx, a) }

// WorkspacePlanners returns the planners of the workspace's trusted
// actions that change things: workspace_apply_patch (PatchPlanner) and
// workspace_run_shell (CommandPlanner).
func WorkspacePlanners(ws *workspace.Workspace) map[string]Planner {
	return map[string]Planner{
		"workspace_apply_patch": PatchPlanner(ws),
		"workspace_run_shell":   CommandPlanner(ws),
	}
}

// PatchPlanner plans workspace_apply_patch with the workspace's PlanPatch:
// the preview is the workspace_propose_patch payload (format, unified diff,
// per-file stats and hashes), and the preconditions are the files the
// patch touches, each with the SHA-256 of its current content (or, for a
// file the patch creates and the target of a rename, that it does not
// exist).
func PatchPlanner(ws *workspace.Workspace) Planner {
	return PlannerFunc(func(ctx context.Context, a action.Action) (Plan, error) {
		plan, err := ws.PlanPatch(ctx, a.Input)
		if err != nil {
			return Plan{}, err
		}
		files, err := patchFiles(plan.Files)
		if err != nil {
			return Plan{}, err
		}
		return Plan{Preview: plan.Payload(false), Files: files}, nil
	})
}

// patchFiles turns the files of a plan into preconditions. A file the
// patch reads but whose hash is missing is an internal error: without the
// hash the preview cannot be checked, so the action is refused rather
// than run unchecked.
func patchFiles(pf []workspace.PatchFile) ([]FileState, error) {
	out := make([]FileState, 0, len(pf))
	for _, f := range pf {
		switch f.Op {
		case "create":
			out = append(out, FileState{Path: f.Path, Exists: false})
		case "rename":
			if f.OldPath == "" || f.SHA256Before == "" {
				return nil, action.Errorf(action.CodeInternal, "patch preview of rename to %s lacks its source or hash", f.Path)
			}
			out = append(out, FileState{Path: f.OldPath, Exists: true, SHA256: f.SHA256Before}, FileState{Path: f.Path, Exists: false})
		default: // modify, delete
			if f.SHA256Before == "" {
				return nil, action.Errorf(action.CodeInternal, "patch preview of %s lacks the hash of its current content", f.Path)
			}
			out = append(out, FileState{Path: f.Path, Exists: true, SHA256: f.SHA256Before})
		}
	}
	return out, nil
}

// CommandPlanner plans workspace_run_shell with the workspace's
// PlanCommand, which tokenizes and checks the command without running it.
// The preview is the argv, the resolved program, the working directory,
// the limits and the sandbox. A command reads and writes what it likes
// inside the root, so it carries no file precondition.
func CommandPlanner(ws *workspace.Workspace) Planner {
	return PlannerFunc(func(_ context.Context, a action.Action) (Plan, error) {
		cmd, _ := a.Input["command"].(string)
		p, err := ws.PlanCommand(cmd)
		if err != nil {
			return Plan{}, err
		}
		preview := p.Preview()
		if t, ok := a.Input["timeout_seconds"]; ok {
			preview["timeout_seconds_requested"] = t
		}
		return Plan{Preview: preview}, nil
	})
}

// FileChecker reports the current state of a workspace file, for the check
// that nothing changed between preview and execute.
type FileChecker interface {
	State(ctx context.Context, path string) (FileState, error)
}

// RootFiles is a FileChecker over one directory opened as an os.Root, so
// that no checked path (nor a symlink on it) reaches outside the
// directory. A symlink or any other non-regular file is reported as
// existing with an empty hash, which never matches a previewed hash.
type RootFiles struct {
	root *os.Root
}

// OpenRootFiles opens dir (normally the workspace root) for checking.
func OpenRootFiles(dir string) (*RootFiles, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("trusted: open workspace root for checks: %w", err)
	}
	return &RootFiles{root: r}, nil
}

// State hashes the file at the root-relative slash path p.
func (f *RootFiles) State(_ context.Context, p string) (FileState, error) {
	p = path.Clean(p)
	st := FileState{Path: p}
	fi, err := f.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("check %s: %w", p, err)
	}
	st.Exists = true
	if !fi.Mode().IsRegular() {
		return st, nil
	}
	file, err := f.root.OpenFile(p, checkOpenFlags, 0)
	if err != nil {
		return st, fmt.Errorf("check %s: %w", p, err)
	}
	defer file.Close()
	if fi, err := file.Stat(); err != nil || !fi.Mode().IsRegular() {
		// Swapped for something else since the lstat.
		return st, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return st, fmt.Errorf("check %s: %w", p, err)
	}
	st.SHA256 = hex.EncodeToString(h.Sum(nil))
	return st, nil
}

// Close releases the root.
func (f *RootFiles) Close() error { return f.root.Close() }
