package workspace

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sync"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace/patch"
)

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
