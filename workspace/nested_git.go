package workspace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Repositories nested below the root (a sub/.git directory, or a .git file
// pointing git elsewhere) are git's to run as much as the root's own: a
// hook planted in sub/.git/hooks runs when the person next commits in sub.
// Commands must not write beneath them nor create them. Existing ones are
// bound read-only in the command's mount namespace, like the root's .git;
// one the command created (or replaced) is removed when it has ended,
// which is race-free because nothing the command started outlives it, and
// the observation says so.

// nestedGit maps the root-relative path of every entry named .git (in any
// letter case) below the root, the root's own excepted, to what identifies
// it (inode and change time).
type nestedGit map[string]string

// maxNestedGitWalk bounds the walk that finds nested repositories.
const maxNestedGitWalk = 200_000

// findNestedGit walks the root (not the root's .git) for entries named
// .git. ok is false when the tree is larger than the walk's bound.
func (w *Workspace) findNestedGit(ctx context.Context) (found nestedGit, ok bool, err error) {
	found = nestedGit{}
	n := 0
	err = filepath.WalkDir(w.rootPath, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		n++
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if n > maxNestedGitWalk {
			return errTreeTooLarge
		}
		rel, _ := filepath.Rel(w.rootPath, p)
		if rel == "." {
			return nil
		}
		if !strings.EqualFold(d.Name(), ".git") {
			return nil
		}
		if !strings.ContainsRune(rel, filepath.Separator) {
			return fs.SkipDir // the root's own .git: protected on its own
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		found[filepath.ToSlash(rel)] = string(appendChangeID(nil, fi))
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if errors.Is(err, errTreeTooLarge) {
		return found, false, nil
	}
	return found, err == nil, err
}

// bindNestedGit adds a read-only bind of every nested repository to the
// plan's policy, when the plan has a mount namespace. They go before the
// binds already planned: a sanitized git configuration laid over a file
// inside a nested .git must be mounted after (on top of) the bind of that
// .git, or the directory's bind would show the original again.
func (plan *CommandPlan) bindNestedGit(root string, existing nestedGit) {
	if !plan.policy.MountNS {
		return
	}
	paths := make([]string, 0, len(existing))
	for rel := range existing {
		paths = append(paths, rel)
	}
	sort.Strings(paths)
	var binds [][2]string
	for _, rel := range paths {
		abs := filepath.Join(root, filepath.FromSlash(rel))
		// A symlink cannot be bound (the helper refuses to): a .git that
		// is a symlink is left as the repository brought it; one a command
		// makes is removed after it.
		if fi, err := os.Lstat(abs); err != nil || !(fi.IsDir() || fi.Mode().IsRegular()) {
			continue
		}
		binds = append(binds, [2]string{abs, abs})
	}
	plan.policy.ROBinds = append(binds, plan.policy.ROBinds...)
}

// removePlanted removes every nested .git the command created or replaced
// (present now, absent or another file before) and returns their paths.
func (w *Workspace) removePlanted(before, after nestedGit) ([]string, error) {
	var removed []string
	var errs []error
	for rel, id := range after {
		if was, ok := before[rel]; ok && was == id {
			continue
		}
		if err := w.root.RemoveAll(rel); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, rel)
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}
