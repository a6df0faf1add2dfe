package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"

	"github.com/harness-runtime/harness/action"
)

// maxPatchFileBytes bounds the size of a file a patch may read or write.
// It is separate from Options.MaxFileBytes, which bounds what a read
// returns to the model: patching a large file returns only a diff.
const maxPatchFileBytes = 8 << 20

// PatchPlan is a computed change to the workspace: what workspace_apply_patch
// would write, computed without writing. It binds the change to the files as
// they were read (SHA256Before), so that ApplyPlan can refuse with
// stale_preview if any of them changed in between.
type PatchPlan struct {
	// Format is the syntax of the input: unified, git, envelope or content.
	Format string
	// Diff is a unified diff of the whole change (3 lines of context).
	Diff  string
	Files []PatchFile
}

// PatchFile is the change to one file of a PatchPlan.
type PatchFile struct {
	// Path is the root-relative slash path written (or deleted); OldPath is
	// the source of a rename.
	Path, OldPath string
	// Op is modify, create, delete or rename.
	Op string
	// Stage is the most tolerant placement stage any hunk needed: exact,
	// offset, whitespace or fuzzy.
	Stage          string
	Added, Removed int
	// SHA256Before is the hex SHA-256 of the current content of the file
	// read (OldPath for a rename), "" when it does not exist yet;
	// SHA256After that of the content written, "" for a deletion.
	SHA256Before, SHA256After string

	before, after []byte
	mode          fs.FileMode
}

// Payload renders the plan as the observation payload of SPEC's
// workspace_propose_patch / workspace_apply_patch.
func (p PatchPlan) Payload(applied bool) map[string]any {
	files := make([]any, 0, len(p.Files))
	for _, f := range p.Files {
		m := map[string]any{
			"path": f.Path, "op": f.Op, "added": f.Added, "removed": f.Removed, "stage": f.Stage,
			"sha256_before": f.SHA256Before, "sha256_after": f.SHA256After,
		}
		if f.OldPath != "" {
			m["old_path"] = f.OldPath
		}
		files = append(files, m)
	}
	return map[string]any{"format": p.Format, "diff": p.Diff, "files": files, "applied": applied}
}

// SameChange reports whether q changes the same files, the same way, from
// the same contents as p: same format-independent file list, operations,
// paths and SHA-256 before and after. A trusted execute can re-plan the
// previewed input and refuse with stale_preview unless the new plan is the
// same change as the preview.
func (p PatchPlan) SameChange(q PatchPlan) bool {
	if len(p.Files) != len(q.Files) {
		return false
	}
	for i, f := range p.Files {
		g := q.Files[i]
		if f.Path != g.Path || f.OldPath != g.OldPath || f.Op != g.Op ||
			f.SHA256Before != g.SHA256Before || f.SHA256After != g.SHA256After || f.mode != g.mode {
			return false
		}
	}
	return true
}

func (w *Workspace) proposePatch(ctx context.Context, in map[string]any) (map[string]any, error) {
	plan, err := w.plan(ctx, in, false)
	if err != nil {
		return nil, err
	}
	return plan.Payload(false), nil
}

// maxPatchAttempts bounds how often applyPatch locks paths and plans
// before it gives up on path locks and runs alone. A variable for tests.
var maxPatchAttempts = 3

// applyPatch plans and writes holding the locks of the paths the plan
// touches, so the files it read cannot be changed by another patch of this
// process before they are written. When the input names its path, that
// path is locked before planning. Otherwise (a multi-file patch) the plan
// is made first, its paths are locked, and it is made again under the
// locks only if a file it read changed meanwhile: a concurrent patch never
// makes this one stale.
func (w *Workspace) applyPatch(ctx context.Context, in map[string]any) (map[string]any, error) {
	if !w.opts.WriteEnabled {
		return nil, action.Errorf(action.CodeWriteDisabled, "writes are disabled for this workspace")
	}
	keys := w.inputKeys(in)
	var plan PatchPlan
	planned := false
	for range maxPatchAttempts {
		patchAll.RLock()
		unlock := lockPaths(keys)
		var err error
		if !planned || w.checkUnchanged(plan) != nil {
			plan, err = w.plan(ctx, in, true)
			err = w.staleOr(ctx, err)
		}
		if err == nil && !coveredBy(w.planKeys(plan), keys) {
			// The plan touches paths not locked (the first plan of a
			// multi-file patch, or the files changed under it): lock
			// those and check again.
			unlock()
			patchAll.RUnlock()
			keys, planned = w.planKeys(plan), true
			continue
		}
		if err == nil {
			err = w.matchExpected(ctx, plan)
		}
		if err == nil {
			err = w.commitPlan(ctx, plan)
		}
		unlock()
		patchAll.RUnlock()
		if err != nil {
			return nil, err
		}
		return plan.Payload(true), nil
	}
	// The plan kept moving under the path locks: plan and write alone.
	patchAll.Lock()
	defer patchAll.Unlock()
	plan, err := w.plan(ctx, in, true)
	if err != nil {
		return nil, w.staleOr(ctx, err)
	}
	if err := w.matchExpected(ctx, plan); err != nil {
		return nil, err
	}
	if err := w.commitPlan(ctx, plan); err != nil {
		return nil, err
	}
	return plan.Payload(true), nil
}

// staleOr turns a planning failure of a redeemed preview into
// stale_preview when a file it was planned on changed since: the patch
// fails because the files moved, not because it was wrong.
func (w *Workspace) staleOr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if pre, ok := action.PreconditionsFrom(ctx); ok {
		if serr := w.checkPreconditions(ctx, pre); action.CodeOf(serr) == action.CodeStalePreview {
			return serr
		}
	}
	return err
}

// matchExpected checks a patch plan made under its write locks against
// the preconditions of a redeemed preview, when ctx carries them.
func (w *Workspace) matchExpected(ctx context.Context, plan PatchPlan) error {
	if pre, ok := action.PreconditionsFrom(ctx); ok {
		return matchPatchPreconditions(plan, pre)
	}
	return nil
}

// inputKeys returns the lock key of the path input names, if it names one
// that may be valid; nil otherwise. It only parses the name: the plan
// checks it.
func (w *Workspace) inputKeys(in map[string]any) []string {
	p, ok := in["path"].(string)
	if !ok {
		return nil
	}
	rel, _, err := parsePath(p)
	if err != nil {
		return nil
	}
	return []string{w.lockKey(rel)}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
