package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace/patch"
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

type patchInput struct {
	path, content, text, expected string
	hasPath, hasContent, hasPatch bool
	strip                         int
	opts                          patch.Options
}

func readPatchInput(in map[string]any) (patchInput, error) {
	var pi patchInput
	var err error
	if pi.path, pi.hasPath, err = strArg(in, "path"); err != nil {
		return pi, err
	}
	if pi.content, pi.hasContent, err = strArg(in, "content"); err != nil {
		return pi, err
	}
	if pi.text, pi.hasPatch, err = strArg(in, "patch"); err != nil {
		return pi, err
	}
	if pi.expected, _, err = strArg(in, "expected_sha256"); err != nil {
		return pi, err
	}
	strip, err := intArg(in, "strip", -1)
	if err != nil {
		return pi, err
	}
	if _, given := in["strip"]; given && (strip < 0 || strip > 64) {
		return pi, action.Errorf(action.CodeInvalidInput, "strip: want an integer from 0 to 64")
	}
	pi.strip = int(strip)
	if pi.opts.TrustLineNumbers, err = boolArg(in, "trust_line_numbers", false); err != nil {
		return pi, err
	}
	if v, ok := in["fuzz"]; ok && v != nil {
		f, ok := number(v)
		if !ok || math.IsNaN(f) || f < 0 || f > 1 {
			return pi, action.Errorf(action.CodeInvalidInput, "fuzz: want a number from 0 to 1")
		}
		pi.opts.Fuzz = f
		if f == 0 {
			pi.opts.Fuzz = patch.MinFuzz
		}
	}
	switch {
	case pi.hasContent && pi.hasPatch:
		return pi, action.Errorf(action.CodeInvalidInput, "give either content or patch, not both")
	case !pi.hasContent && !pi.hasPatch:
		return pi, action.Errorf(action.CodeInvalidInput, "give content (the whole new file) or patch")
	case pi.hasContent && !pi.hasPath:
		return pi, action.Errorf(action.CodeInvalidInput, "content needs a path")
	case pi.expected != "" && !pi.hasPath:
		return pi, action.Errorf(action.CodeInvalidInput, "expected_sha256 needs a path")
	}
	if pi.expected != "" {
		pi.expected = strings.ToLower(pi.expected)
		if b, err := hex.DecodeString(pi.expected); err != nil || len(b) != sha256.Size {
			return pi, action.Errorf(action.CodeInvalidInput, "expected_sha256: want 64 hex digits")
		}
	}
	if len(pi.content) > maxPatchFileBytes {
		return pi, action.Errorf(action.CodeTooLarge, "content is larger than %d bytes", maxPatchFileBytes)
	}
	return pi, nil
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// current is what a file looks like now.
type current struct {
	exists  bool
	content []byte
	mode    fs.FileMode
}

// checkTarget validates a root-relative path that a patch reads or writes:
// the path rules (checkWritePath for writes, and for proposals whenever
// writes are enabled, so that a proposal is refused like its apply would
// be; checkPath otherwise), and no symlink at it or at any of its parents:
// a patch never writes through a link.
//
// The common case (a path whose existing names are all plain files and
// directories, none protected) is settled by one lstat per name; anything
// else is decided by checkTargetSlow, which gives every refusal its code
// and message.
func (w *Workspace) checkTarget(p string, write bool) (string, error) {
	rel, _, err := w.checkTargetSeen(p, write)
	return rel, err
}

// seen is what checkTarget's walk saw at the target: when known, info is
// its lstat (never a symlink's), or nil if it does not exist.
type seen struct {
	known bool
	info  fs.FileInfo
}

// checkTargetSeen is checkTarget that also says what it saw at the target,
// when its walk went there, so that reading it needs no second lstat.
func (w *Workspace) checkTargetSeen(p string, write bool) (string, seen, error) {
	if rel, last, ok := w.plainTarget(p, write); ok {
		return rel, seen{known: true, info: last}, nil
	}
	rel, err := w.checkTargetSlow(p, write)
	return rel, seen{}, err
}

// plainTarget reports whether checkTargetSlow(p, write) would accept p,
// and with which path, when it can tell from one walk: p parses, each of
// its names that exists was lstat'ed and none is a symlink (so following
// links and not following them lead to the same file, and the real path is
// the path as spelled), what exists at p is no special file and a
// directory if spelled as one, and the write rules hold for the spelled
// path. It returns false, never an error, whenever checkTargetSlow might
// refuse or must look further.
//
// With true it also returns the lstat of what is at p, or nil when some
// name on the way does not exist.
func (w *Workspace) plainTarget(p string, write bool) (string, fs.FileInfo, bool) {
	if write && !w.opts.WriteEnabled {
		return "", nil, false
	}
	writeRules := w.opts.WriteEnabled
	rel, wantDir, err := parsePath(p)
	if err != nil || (writeRules && (wantDir || rel == "." || refuseProtected(rel) != nil)) {
		return "", nil, false
	}
	var last fs.FileInfo // what is at rel, if it all exists
	for i := 0; ; {
		j := strings.IndexByte(rel[i:], '/')
		prefix := rel
		if j >= 0 {
			prefix = rel[:i+j]
		}
		fi, err := w.root.Lstat(prefix)
		if err != nil {
			if !isNotExist(err) {
				return "", nil, false
			}
			break
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", nil, false
		}
		if j < 0 {
			last = fi
			break
		}
		i += j + 1
	}
	if last != nil && (refuseSpecial(rel, last) != nil || (wantDir && !last.IsDir())) {
		return "", nil, false
	}
	return rel, last, true
}

// checkTargetSlow is checkTarget step by step: the path rules, then an
// lstat of every name for symlinks.
func (w *Workspace) checkTargetSlow(rel string, write bool) (string, error) {
	var err error
	if write || w.opts.WriteEnabled {
		rel, err = w.checkWritePath(rel)
	} else {
		rel, err = w.checkPath(rel)
	}
	if err != nil {
		return "", err
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		fi, err := w.root.Lstat(p)
		if err != nil {
			if isNotExist(err) {
				break
			}
			return "", fsError(p, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", action.Errorf(action.CodePathOutsideRoot, "path %s: %s is a symlink; patches never write through symlinks", quote(rel), quote(p))
		}
	}
	return rel, nil
}

// readCurrent reads rel (already checked) if it exists.
func (w *Workspace) readCurrent(rel string) (current, error) {
	return w.readSeen(rel, seen{})
}

// readSeen is readCurrent for a target checkTargetSeen has just walked to:
// what it saw there replaces a second lstat.
func (w *Workspace) readSeen(rel string, at seen) (current, error) {
	fi := at.info
	if !at.known {
		var err error
		fi, err = w.root.Lstat(rel)
		if isNotExist(err) {
			return current{}, nil
		}
		if err != nil {
			return current{}, fsError(rel, err)
		}
	}
	if fi == nil {
		return current{}, nil
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return current{}, action.Errorf(action.CodePathOutsideRoot, "path %s is a symlink; patches never write through symlinks", quote(rel))
	}
	// Not a symlink: what lstat saw is what a stat would see.
	f, fi, err := openStatted(w.root, rel, fi)
	if err != nil {
		return current{}, err
	}
	defer f.Close()
	if fi.Size() > maxPatchFileBytes {
		return current{}, action.Errorf(action.CodeTooLarge, "path %s is larger than %d bytes", quote(rel), maxPatchFileBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxPatchFileBytes+1))
	if err != nil {
		return current{}, fsError(rel, err)
	}
	if len(b) > maxPatchFileBytes {
		return current{}, action.Errorf(action.CodeTooLarge, "path %s is larger than %d bytes", quote(rel), maxPatchFileBytes)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return current{}, action.Errorf(action.CodeInvalidInput, "path %s is a binary file (it contains NUL bytes); patches apply to text files", quote(rel))
	}
	return current{exists: true, content: b, mode: fi.Mode().Perm()}, nil
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

// statKind answers patch.Resolve about a clean root-relative name.
func (w *Workspace) statKind(name string) patch.Kind {
	fi, err := w.root.Lstat(name)
	switch {
	case err != nil && isNotExist(err):
		return patch.Missing
	case err != nil:
		return patch.Other
	case fi.Mode()&fs.ModeSymlink != 0:
		return patch.Symlink
	case fi.IsDir():
		return patch.Dir
	case fi.Mode().IsRegular():
		return patch.Regular
	}
	return patch.Other
}

func (w *Workspace) plan(ctx context.Context, in map[string]any, write bool) (PatchPlan, error) {
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

// maxParallelWrites bounds the temporary files written at once.
const maxParallelWrites = 16

// ApplyPlan writes a plan made by PlanPatch, all files or none.
//
// It first re-reads every file the plan read and refuses with
// stale_preview if any changed (or if a file to create appeared). It then
// writes each new content to a temporary file beside its target (through
// the root, fsynced, with the target's mode) and renames it into place;
// the directories are not fsynced, so after a power loss a file holds its
// old or its new content, never a mix, but the rename may be lost;
// deletions and rename sources are removed last. If any step fails, the
// steps already done are undone from the contents held in the plan, so on
// an error the files are as they were. A crash in the middle can leave the
// change half done and a temporary file (.harness-patch-*.tmp) behind.
//
// Within the process, the check and the writes hold a lock on every path
// the plan touches (both names of a rename): applies that share a path are
// serialised, applies to different paths run concurrently. Other
// processes writing the same files are not excluded.
func (w *Workspace) ApplyPlan(ctx context.Context, plan PatchPlan) error {
	if !w.opts.WriteEnabled {
		return action.Errorf(action.CodeWriteDisabled, "writes are disabled for this workspace")
	}
	patchAll.RLock()
	defer patchAll.RUnlock()
	unlock := lockPaths(w.planKeys(plan))
	defer unlock()
	if err := w.checkUnchanged(plan); err != nil {
		return err
	}
	return w.commitPlan(ctx, plan)
}

// checkUnchanged checks the write rules of every path of plan again and
// that every file it read is as it read it: stale_preview if one changed
// or a file to create appeared. The caller holds the locks of plan's
// paths.
func (w *Workspace) checkUnchanged(plan PatchPlan) error {
	for _, f := range plan.Files {
		if _, err := w.checkTarget(f.Path, true); err != nil {
			return err
		}
		src := f.Path
		if f.OldPath != "" {
			if _, err := w.checkTarget(f.OldPath, true); err != nil {
				return err
			}
			src = f.OldPath
			dst, err := w.readCurrent(f.Path)
			if err != nil {
				return err
			}
			if dst.exists {
				return action.Errorf(action.CodeStalePreview, "%s appeared since the patch was planned", quote(f.Path))
			}
		}
		cur, err := w.readCurrent(src)
		if err != nil {
			return err
		}
		now := ""
		if cur.exists {
			now = sha256Hex(cur.content)
		}
		if now != f.SHA256Before {
			return action.Errorf(action.CodeStalePreview, "%s changed since the patch was planned", quote(src))
		}
	}
	return nil
}

// commitPlan writes plan; the caller holds the locks of plan's paths and
// has checked that the files are as the plan read them.
func (w *Workspace) commitPlan(ctx context.Context, plan PatchPlan) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	tx := &patchTx{w: w}
	if err := tx.run(plan); err != nil {
		tx.rollback()
		var ae *action.Error
		if errors.As(err, &ae) {
			return err
		}
		return &action.Error{Code: action.CodeInternal, Message: "applying the patch failed; nothing was changed: " + err.Error(), Err: err}
	}
	return nil
}

// testHookCommitStep, when set by a test, runs before each rename or
// removal of ApplyPlan's commit phase; an error it returns fails that step.
var testHookCommitStep func(rel string) error

func commitStep(rel string) error {
	if testHookCommitStep != nil {
		return testHookCommitStep(rel)
	}
	return nil
}

// patchTx is one ApplyPlan: the steps done so far, to undo on failure.
type patchTx struct {
	w     *Workspace
	temps []string // temporary files not yet renamed
	dirs  []string // directories created, outermost first
	undo  []func() error
	mu    sync.Mutex // guards temps while phase 1 writes concurrently
}

func (tx *patchTx) run(plan PatchPlan) error {
	w := tx.w
	// Phase 1: every new content in a temporary file; nothing visible yet.
	// The files are written and fsynced concurrently: the file system can
	// then commit several fsyncs at once.
	temps := make([]string, len(plan.Files))
	for _, f := range plan.Files {
		if patch.Op(f.Op) != patch.OpDelete {
			if err := tx.mkdirs(path.Dir(f.Path)); err != nil {
				return err
			}
		}
	}
	errs := make([]error, len(plan.Files))
	sem := make(chan struct{}, maxParallelWrites)
	var wg sync.WaitGroup
	for i, f := range plan.Files {
		if patch.Op(f.Op) == patch.OpDelete {
			continue
		}
		if len(plan.Files) == 1 {
			// Nothing to overlap with: write it here.
			temps[i], errs[i] = tx.writeTemp(path.Dir(f.Path), f.after, f.mode)
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			temps[i], errs[i] = tx.writeTemp(path.Dir(f.Path), f.after, f.mode)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// Phase 2: renames into place, then removals.
	for i, f := range plan.Files {
		if temps[i] == "" {
			continue
		}
		if err := commitStep(f.Path); err != nil {
			return err
		}
		unlock := w.lockDir(path.Dir(f.Path))
		err := w.root.Rename(temps[i], f.Path)
		unlock()
		if err != nil {
			return fmt.Errorf("rename into %s: %w", f.Path, err)
		}
		tx.dropTemp(temps[i])
		if f.SHA256Before != "" && f.OldPath == "" {
			tx.undo = append(tx.undo, func() error { return tx.restore(f.Path, f.before, f.mode) })
		} else {
			tx.undo = append(tx.undo, func() error { return w.root.Remove(f.Path) })
		}
	}
	for _, f := range plan.Files {
		gone := ""
		switch {
		case patch.Op(f.Op) == patch.OpDelete:
			gone = f.Path
		case f.OldPath != "":
			gone = f.OldPath
		default:
			continue
		}
		if err := commitStep(gone); err != nil {
			return err
		}
		unlock := w.lockDir(path.Dir(gone))
		err := w.root.Remove(gone)
		unlock()
		if err != nil {
			return fmt.Errorf("remove %s: %w", gone, err)
		}
		tx.undo = append(tx.undo, func() error { return tx.restore(gone, f.before, f.mode) })
	}
	return nil
}

func (tx *patchTx) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	var missing []string
	for d := dir; d != "."; d = path.Dir(d) {
		if _, err := tx.w.root.Lstat(d); err == nil {
			break
		} else if !isNotExist(err) {
			return fmt.Errorf("stat %s: %w", d, err)
		}
		missing = append(missing, d)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		if err := tx.w.root.Mkdir(missing[i], 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) {
				// A concurrent apply to another file may have made it:
				// then it is not this apply's to remove on rollback.
				// Anything but a real directory is refused.
				if fi, serr := tx.w.root.Lstat(missing[i]); serr == nil && fi.IsDir() {
					continue
				}
			}
			return fmt.Errorf("mkdir %s: %w", missing[i], err)
		}
		tx.dirs = append(tx.dirs, missing[i])
	}
	return nil
}

func (tx *patchTx) writeTemp(dir string, content []byte, mode fs.FileMode) (string, error) {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return "", err
	}
	name := path.Join(dir, ".harness-patch-"+hex.EncodeToString(rnd[:])+".tmp")
	unlock := tx.w.lockDir(dir)
	f, err := tx.w.root.OpenFile(name, tempFlags, 0o600)
	unlock()
	if err != nil {
		return "", fmt.Errorf("create temporary file in %s: %w", dir, err)
	}
	tx.mu.Lock()
	tx.temps = append(tx.temps, name)
	tx.mu.Unlock()
	_, err = f.Write(content)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write temporary file in %s: %w", dir, err)
	}
	return name, nil
}

func (tx *patchTx) dropTemp(name string) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	for i, t := range tx.temps {
		if t == name {
			tx.temps = append(tx.temps[:i], tx.temps[i+1:]...)
			return
		}
	}
}

// restore puts content back at rel, atomically.
func (tx *patchTx) restore(rel string, content []byte, mode fs.FileMode) error {
	tmp, err := tx.writeTemp(path.Dir(rel), content, mode)
	if err != nil {
		return err
	}
	unlock := tx.w.lockDir(path.Dir(rel))
	err = tx.w.root.Rename(tmp, rel)
	unlock()
	if err != nil {
		return err
	}
	tx.dropTemp(tmp)
	return nil
}

// rollback undoes the steps done, newest first, and removes temporary
// files and created directories. It is best effort: an error while undoing
// cannot be reported better than the error that caused the rollback.
func (tx *patchTx) rollback() {
	for i := len(tx.undo) - 1; i >= 0; i-- {
		_ = tx.undo[i]()
	}
	for _, t := range tx.temps {
		_ = tx.w.root.Remove(t)
	}
	for i := len(tx.dirs) - 1; i >= 0; i-- {
		_ = tx.w.root.Remove(tx.dirs[i])
	}
}
