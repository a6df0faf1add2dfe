package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/harness-runtime/harness/action"
)

// Plan says what an action would do without doing it, and what it depends
// on: for patches the unified diff and the SHA-256 of every file they
// touch; for commands the argv, working directory, limits and sandbox, and
// a fingerprint of the tree the command reads as code (its Makefile, its
// Go packages, the git configuration: a command reads what it likes, so
// the whole root is bound, .git's configuration included); read-only
// actions preview as their input and depend on nothing. The same path
// checks run as at execute, so no plan is made for an action that will be
// refused. Nothing is written or run.
//
// Run honours the plan's preconditions when the context carries them
// (action.WithPreconditions): the action runs only while they hold, else
// stale_preview. For patches the check is made under the same locks as
// the write.
func (w *Workspace) Plan(ctx context.Context, a action.Action) (action.Plan, error) {
	d, ok := actionIndex[a.Name]
	if !ok {
		return action.Plan{}, action.Errorf(action.CodeUnknownAction, "workspace has no action %q", a.Name)
	}
	return d.plan(w, ctx, a)
}

// planPatchAction plans workspace_apply_patch and workspace_propose_patch:
// the diff and the hashes of the files the patch touches.
func (w *Workspace) planPatchAction(ctx context.Context, a action.Action) (action.Plan, error) {
	plan, err := w.PlanPatch(ctx, a.Input)
	if err != nil {
		return action.Plan{}, err
	}
	pre, err := patchPreconditions(plan.Files)
	if err != nil {
		return action.Plan{}, err
	}
	return action.Plan{Preview: plan.Payload(false), Preconditions: pre}, nil
}

// planCommandAction plans workspace_run_shell: the plan of PlanCommand,
// bound to the tree the command reads.
func (w *Workspace) planCommandAction(ctx context.Context, a action.Action) (action.Plan, error) {
	cmd, _, err := strArg(a.Input, "command")
	if err != nil {
		return action.Plan{}, err
	}
	plan, err := w.PlanCommand(cmd)
	if err != nil {
		return action.Plan{}, err
	}
	tree, n, err := w.treeFingerprint(ctx)
	if err != nil {
		return action.Plan{}, err
	}
	preview := plan.Preview()
	if t, ok := a.Input["timeout_seconds"]; ok {
		preview["timeout_seconds_requested"] = t
	}
	preview["bound"] = map[string]any{
		"what":    "every file and directory under the root, and .git's configuration",
		"entries": n,
		"note":    "the command runs only if none of them changed since this preview",
	}
	return action.Plan{Preview: preview, Preconditions: []action.FileState{{Path: ".", Exists: true, Tree: true, SHA256: tree}}}, nil
}

// planRead plans a read-only action: its input, after the same path check
// as the read makes; it depends on nothing.
func (w *Workspace) planRead(_ context.Context, a action.Action) (action.Plan, error) {
	if p, ok := a.Input["path"].(string); ok && p != "" {
		if _, err := w.checkTarget(p, false); err != nil && action.CodeOf(err) != action.CodeNotFound {
			return action.Plan{}, err
		}
	}
	return action.Plan{Preview: map[string]any{"action": a.Name, "input": a.Input, "writes": false}}, nil
}

// patchPreconditions turns the files of a patch plan into preconditions.
// A file the patch reads but whose hash is missing is an internal error:
// without the hash the plan cannot be checked, so it is refused rather
// than run unchecked.
func patchPreconditions(pf []PatchFile) ([]action.FileState, error) {
	out := make([]action.FileState, 0, len(pf))
	for _, f := range pf {
		switch f.Op {
		case "create":
			out = append(out, action.FileState{Path: f.Path})
		case "rename":
			if f.OldPath == "" || f.SHA256Before == "" {
				return nil, action.Errorf(action.CodeInternal, "patch plan of rename to %s lacks its source or hash", f.Path)
			}
			out = append(out, action.FileState{Path: f.OldPath, Exists: true, SHA256: f.SHA256Before}, action.FileState{Path: f.Path})
		default: // modify, delete
			if f.SHA256Before == "" {
				return nil, action.Errorf(action.CodeInternal, "patch plan of %s lacks the hash of its current content", f.Path)
			}
			out = append(out, action.FileState{Path: f.Path, Exists: true, SHA256: f.SHA256Before})
		}
	}
	return out, nil
}

// matchPatchPreconditions reports stale_preview unless plan, made now
// under the write locks, depends on exactly the states want. The caller
// holds the locks of plan's paths.
func matchPatchPreconditions(plan PatchPlan, want []action.FileState) error {
	got, err := patchPreconditions(plan.Files)
	if err != nil {
		return err
	}
	key := func(s action.FileState) string {
		return s.Path + "\x00" + s.SHA256 + map[bool]string{true: "\x00e"}[s.Exists]
	}
	a := make([]string, len(got))
	for i, s := range got {
		a[i] = key(s)
	}
	b := make([]string, len(want))
	for i, s := range want {
		b[i] = key(s)
	}
	slices.Sort(a)
	slices.Sort(b)
	if slices.Equal(a, b) {
		return nil
	}
	for _, s := range want {
		if !slices.Contains(a, key(s)) {
			return stale(s)
		}
	}
	return action.Errorf(action.CodeStalePreview, "the patch would now change other files than previewed; preview again")
}

func stale(s action.FileState) error {
	what := "changed"
	switch {
	case s.Tree:
		return action.Errorf(action.CodeStalePreview, "files under the root changed since the preview, and the command reads them; preview again")
	case s.Exists:
		what = "changed or was removed"
	default:
		what = "was created"
	}
	return action.Errorf(action.CodeStalePreview, "%s %s since the preview; preview again", s.Path, what)
}

// checkPreconditions reports stale_preview unless every state in pre holds
// now. Paths go through the workspace's root, so none reaches outside it.
func (w *Workspace) checkPreconditions(ctx context.Context, pre []action.FileState) error {
	for _, s := range pre {
		if s.Tree {
			now, _, err := w.treeFingerprint(ctx)
			if err != nil {
				return err
			}
			if now != s.SHA256 {
				return stale(s)
			}
			continue
		}
		exists, sum, err := w.fileState(s.Path)
		if err != nil {
			return err
		}
		if exists != s.Exists || sum != s.SHA256 {
			return stale(s)
		}
	}
	return nil
}

// fileState hashes the file at the root-relative path p. A symlink or any
// other non-regular file exists with an empty hash, which never matches a
// planned one.
func (w *Workspace) fileState(p string) (exists bool, sum string, err error) {
	p = path.Clean(p)
	fi, err := w.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	if err != nil {
		return false, "", &action.Error{Code: action.CodeInternal, Message: "cannot check " + p, Err: err}
	}
	if !fi.Mode().IsRegular() {
		return true, "", nil
	}
	f, err := w.root.OpenFile(p, openFlags, 0)
	if err != nil {
		return true, "", &action.Error{Code: action.CodeInternal, Message: "cannot check " + p, Err: err}
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return true, "", nil // swapped for something else since the lstat
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return true, "", &action.Error{Code: action.CodeInternal, Message: "cannot check " + p, Err: err}
	}
	return true, hex.EncodeToString(h.Sum(nil)), nil
}

// maxTreeEntries bounds the walk of a tree fingerprint; a larger tree is
// refused for commands that need a preview (bind fewer files by working
// in a smaller root).
const maxTreeEntries = 200_000

// gitCodeFiles are the files under .git that decide what git runs or
// reads as configuration; the rest of .git (objects, refs, logs, index)
// is data and left out of the fingerprint.
var gitCodeFiles = []string{"config", "HEAD", "commondir", "info/attributes", "info/exclude"}

// treeFingerprint hashes every entry under the root (its slash path, kind,
// size, inode and change time; the change time moves on every write and no
// program can set it back) plus .git's configuration files, and returns
// the hex digest and the number of entries. It honours ctx.
func (w *Workspace) treeFingerprint(ctx context.Context) (string, int, error) {
	h := sha256.New()
	n := 0
	var buf []byte
	add := func(rel string, fi fs.FileInfo) {
		buf = buf[:0]
		buf = append(buf, rel...)
		buf = append(buf, 0)
		buf = binary.LittleEndian.AppendUint32(buf, uint32(fi.Mode()))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(fi.Size()))
		buf = appendChangeID(buf, fi)
		h.Write(buf)
		n++
	}
	err := filepath.WalkDir(w.rootPath, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while walking
			}
			return err
		}
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if n >= maxTreeEntries {
			return errTreeTooLarge
		}
		rel, _ := filepath.Rel(w.rootPath, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() && rel == ".git" {
			for _, name := range gitCodeFiles {
				if fi, err := os.Lstat(filepath.Join(p, filepath.FromSlash(name))); err == nil {
					add(".git/"+name, fi)
				}
			}
			return fs.SkipDir
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		add(rel, fi)
		return nil
	})
	switch {
	case errors.Is(err, errTreeTooLarge):
		return "", n, action.Errorf(action.CodeTooLarge, "the workspace has more than %d entries, too many to bind a command's preview to; use a smaller root", maxTreeEntries)
	case err != nil && ctx.Err() != nil:
		return "", n, &action.Error{Code: action.CodeTimeout, Message: "fingerprinting the tree: " + ctx.Err().Error(), Err: err}
	case err != nil:
		return "", n, &action.Error{Code: action.CodeInternal, Message: "fingerprinting the tree", Err: err}
	}
	return "tree:" + hex.EncodeToString(h.Sum(nil)), n, nil
}

var errTreeTooLarge = errors.New("tree too large")
