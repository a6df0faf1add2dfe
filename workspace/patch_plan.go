package workspace

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace/patch"
)

// PlanPatch computes what workspace_apply_patch would do with input in
// (path, content, patch, expected_sha256, strip, fuzz, and
// trust_line_numbers for diffs made by a tool: see patch.Options), without writing:
// the diff, and per file the operation, placement stage, line counts and
// the SHA-256 of its current and new content. It applies the write rules
// (write_disabled, protected paths), so a plan that PlanPatch returns is
// one ApplyPlan may write. A plan holds the contents it read and will
// write, in memory only: it is not serialisable. Failures carry codes: invalid_input,
// path_outside_root, not_found, too_large, write_disabled, patch_failed,
// stale_preview.
func (w *Workspace) PlanPatch(ctx context.Context, in map[string]any) (PatchPlan, error) {
	return w.plan(ctx, in, true)
}

// patchError turns an error of package patch into an *action.Error.
func patchError(file string, err error) error {
	where := ""
	if file != "" {
		where = file + ": "
	}
	var he *patch.HunkError
	switch {
	case errors.As(err, &he):
		payload := map[string]any{"file": file, "hunk": he.Hunk, "header": he.Header, "ambiguous": he.Ambiguous}
		if he.Closest > 0 {
			payload["closest_line"] = he.Closest
		}
		if len(he.Places) > 0 {
			places := make([]any, len(he.Places))
			for i, p := range he.Places {
				places[i] = p
			}
			payload["places"] = places
		}
		return &action.Error{Code: action.CodePatchFailed, Message: where + he.Error(), Payload: payload, Err: err}
	case errors.Is(err, patch.ErrOutsideRoot):
		return &action.Error{Code: action.CodePathOutsideRoot, Message: where + err.Error(), Err: err}
	case errors.Is(err, patch.ErrMalformed):
		return &action.Error{Code: action.CodeInvalidInput, Message: where + err.Error(), Err: err}
	case errors.Is(err, patch.ErrNotExist):
		return &action.Error{Code: action.CodeNotFound, Message: where + err.Error(), Err: err}
	}
	return &action.Error{Code: action.CodePatchFailed, Message: where + err.Error(), Err: err}
}

func (w *Workspace) plan(ctx context.Context, in map[string]any, write bool) (PatchPlan, error) {
	if err := ctx.Err(); err != nil {
		return PatchPlan{}, &action.Error{Code: action.CodeTimeout, Message: "planning the change: " + err.Error(), Err: err}
	}
	pi, err := readPatchInput(in)
	if err != nil {
		return PatchPlan{}, err
	}
	if write && !w.opts.WriteEnabled {
		return PatchPlan{}, action.Errorf(action.CodeWriteDisabled, "writes are disabled for this workspace")
	}
	var target string
	var at seen
	var cur current // the target, once read
	read := false
	if pi.hasPath {
		if target, at, err = w.checkTargetSeen(pi.path, write); err != nil {
			return PatchPlan{}, err
		}
		if pi.expected != "" {
			if cur, err = w.readSeen(target, at); err != nil {
				return PatchPlan{}, err
			}
			if !cur.exists || sha256Hex(cur.content) != pi.expected {
				return PatchPlan{}, action.Errorf(action.CodeStalePreview, "path %s changed since it was read (expected_sha256 does not match)", quote(target))
			}
			read = true
		}
	}
	if pi.hasContent {
		if !read {
			if cur, err = w.readSeen(target, at); err != nil {
				return PatchPlan{}, err
			}
		}
		return w.planContent(target, []byte(pi.content), cur)
	}
	// One Work bounds the whole request by what it brought: the patch
	// text and, as they are read, the files (planPatch allows for them).
	pi.opts.Work = patch.NewWork(patch.WorkAllowance(len(pi.text)))
	p, err := patch.ParseContext(ctx, pi.text, pi.opts.Work)
	if err != nil {
		return PatchPlan{}, patchError("", err)
	}
	if pi.hasPath {
		if err := patch.CheckNames(p); err != nil {
			return PatchPlan{}, patchError("", err)
		}
		if len(p.Files) != 1 {
			return PatchPlan{}, action.Errorf(action.CodeInvalidInput, "the patch names %d files; omit path to apply a multi-file patch", len(p.Files))
		}
		f := p.Files[0]
		if f.Op == patch.OpRename {
			return PatchPlan{}, action.Errorf(action.CodeInvalidInput, "a rename names its own paths; omit path")
		}
		f.Path = target
	} else if err := patch.Resolve(p, pi.strip, w.statKind); err != nil {
		return PatchPlan{}, patchError("", err)
	}
	plan, err := w.planPatch(ctx, p, pi.opts, write)
	if err != nil && ctx.Err() != nil {
		return PatchPlan{}, ctx.Err()
	}
	return plan, err
}

// planContent plans replacing (or creating) target, as read in cur, with
// content.
func (w *Workspace) planContent(target string, content []byte, cur current) (PatchPlan, error) {
	pf := PatchFile{Path: target, Op: string(patch.OpModify), Stage: string(patch.StageExact), after: content, mode: 0o644}
	if cur.exists {
		pf.before, pf.mode, pf.SHA256Before = cur.content, cur.mode, sha256Hex(cur.content)
		pf.after = keepCRLF(cur.content, content)
	} else {
		pf.Op = string(patch.OpCreate)
	}
	pf.SHA256After = sha256Hex(pf.after)
	pf.Added, pf.Removed = patch.CountChanges(pf.before, pf.after)
	return PatchPlan{Format: string(patch.FormatContent), Files: []PatchFile{pf}, Diff: planDiff([]PatchFile{pf})}, nil
}

// keepCRLF converts content to CRLF when the file it replaces uses CRLF
// throughout and content has no CR at all (models write LF).
func keepCRLF(old, content []byte) []byte {
	lf := bytes.Count(old, []byte("\n"))
	if lf == 0 || bytes.Count(old, []byte("\r\n")) != lf || bytes.IndexByte(content, '\r') >= 0 {
		return content
	}
	return bytes.ReplaceAll(content, []byte("\n"), []byte("\r\n"))
}

func planDiff(files []PatchFile) string {
	var b strings.Builder
	for _, f := range files {
		switch patch.Op(f.Op) {
		case patch.OpCreate:
			b.WriteString(patch.Diff("", f.Path, nil, f.after))
		case patch.OpDelete:
			b.WriteString(patch.Diff(f.Path, "", f.before, nil))
		case patch.OpRename:
			b.WriteString(patch.Diff(f.OldPath, f.Path, f.before, f.after))
		default:
			b.WriteString(patch.Diff(f.Path, f.Path, f.before, f.after))
		}
	}
	return b.String()
}

// gitMode turns git's "100755" into a permission, or 0 if absent or odd.
func gitMode(s string) fs.FileMode {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 8, 32)
	if err != nil || n&0o170000 != 0o100000 {
		return 0
	}
	return fs.FileMode(n & 0o777)
}

func (w *Workspace) planPatch(ctx context.Context, p *patch.Patch, opts patch.Options, write bool) (PatchPlan, error) {
	plan := PatchPlan{Format: string(p.Format)}
	touched := map[string]int{} // path -> index in plan.Files
	for _, f := range p.Files {
		if err := ctx.Err(); err != nil {
			return PatchPlan{}, err
		}
		target, err := w.checkTarget(f.Path, write)
		if err != nil {
			return PatchPlan{}, err
		}
		src := target
		if f.Op == patch.OpRename {
			if src, err = w.checkTarget(f.OldPath, write); err != nil {
				return PatchPlan{}, err
			}
		}
		// A second section for a file already touched continues from its
		// planned content (models split edits of one file).
		if k, ok := touched[src]; ok && f.Op == patch.OpModify && plan.Files[k].Op != string(patch.OpDelete) {
			pf := &plan.Files[k]
			r, err := patch.ApplyContext(ctx, pf.after, f.Hunks, opts)
			if err != nil {
				return PatchPlan{}, patchError(target, err)
			}
			pf.after = r.Content
			pf.Stage = string(patch.Weaker(patch.Stage(pf.Stage), r.Stage))
			pf.Added, pf.Removed = pf.Added+r.Added, pf.Removed+r.Removed
			pf.SHA256After = sha256Hex(pf.after)
			continue
		}
		for _, p := range []string{src, target} {
			if _, dup := touched[p]; dup {
				return PatchPlan{}, action.Errorf(action.CodeInvalidInput, "the patch changes %s more than once in ways that conflict", quote(p))
			}
		}
		cur, err := w.readCurrent(src)
		if err != nil {
			return PatchPlan{}, err
		}
		opts.Work.Allow(len(cur.content))
		pf := PatchFile{Path: target, Op: string(f.Op), Stage: string(patch.StageExact), mode: 0o644}
		switch f.Op {
		case patch.OpCreate:
			if cur.exists {
				return PatchPlan{}, action.Errorf(action.CodePatchFailed, "%s: cannot create: the file already exists", target)
			}
		case patch.OpRename:
			pf.OldPath = src
			if !cur.exists {
				return PatchPlan{}, action.Errorf(action.CodeNotFound, "%s: rename source does not exist", src)
			}
			dst, err := w.readCurrent(target)
			if err != nil {
				return PatchPlan{}, err
			}
			if dst.exists {
				return PatchPlan{}, action.Errorf(action.CodePatchFailed, "%s: cannot rename %s onto an existing file", target, src)
			}
		default:
			if !cur.exists {
				return PatchPlan{}, action.Errorf(action.CodeNotFound, "%s: file does not exist", target)
			}
		}
		if cur.exists {
			pf.before, pf.mode, pf.SHA256Before = cur.content, cur.mode, sha256Hex(cur.content)
		}
		pf.after = pf.before
		if len(f.Hunks) > 0 {
			r, err := patch.ApplyContext(ctx, pf.before, f.Hunks, opts)
			if err != nil {
				return PatchPlan{}, patchError(target, err)
			}
			pf.after, pf.Stage, pf.Added, pf.Removed = r.Content, string(r.Stage), r.Added, r.Removed
		}
		if f.Op == patch.OpDelete {
			if len(pf.after) != 0 {
				return PatchPlan{}, action.Errorf(action.CodePatchFailed, "%s: the file is not empty after the patch's hunks; refusing to delete lines the patch does not show", target)
			}
			if len(f.Hunks) == 0 {
				pf.Removed = bytes.Count(pf.before, []byte("\n"))
				if len(pf.before) > 0 && pf.before[len(pf.before)-1] != '\n' {
					pf.Removed++
				}
			}
			pf.after = nil
		} else {
			pf.SHA256After = sha256Hex(pf.after)
		}
		if m := gitMode(f.NewMode); m != 0 {
			pf.mode = m
		}
		if len(pf.after) > maxPatchFileBytes {
			return PatchPlan{}, action.Errorf(action.CodeTooLarge, "%s: result is larger than %d bytes", target, maxPatchFileBytes)
		}
		touched[src], touched[target] = len(plan.Files), len(plan.Files)
		plan.Files = append(plan.Files, pf)
	}
	for i := range plan.Files {
		if plan.Files[i].SHA256After != "" {
			plan.Files[i].SHA256After = sha256Hex(plan.Files[i].after)
		}
	}
	plan.Diff = planDiff(plan.Files)
	return plan, nil
}
