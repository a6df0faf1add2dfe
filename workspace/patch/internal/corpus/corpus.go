// Package corpus builds a deterministic corpus of real-world edits for the
// patch tests and benchmarks: files of the Go source tree (or files a test
// generates), random edits, and the unified diffs GNU diff writes for them.
//
// It reads $(go env GOROOT)/src and runs diff(1); it is test support, not
// part of Harness.
package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
)

// Case is one edited file.
type Case struct {
	// Name is the path relative to GOROOT/src, slash-separated.
	Name     string
	Old, New []byte
	// Diff is `diff -u` output with headers "--- a/Name" and "+++ b/Name".
	Diff string
}

// ErrUnavailable reports that the Go source tree or diff(1) is missing.
var ErrUnavailable = errors.New("corpus unavailable")

// Build returns n cases, the same for the same n and seed on the same Go
// version.
func Build(ctx context.Context, n int, seed uint64) ([]Case, error) {
	src := filepath.Join(runtime.GOROOT(), "src")
	if _, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if _, err := exec.LookPath("diff"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	var names []string
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == "testdata" || d.Name() == "vendor" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		if info, err := d.Info(); err == nil && info.Size() >= 1500 && info.Size() <= 40000 {
			rel, _ := filepath.Rel(src, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	if len(names) < n {
		return nil, fmt.Errorf("%w: only %d files in %s", ErrUnavailable, len(names), src)
	}
	step := len(names) / n
	srcs := make([]Source, n)
	for i := range srcs {
		name := names[i*step]
		old, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		srcs[i] = Source{Name: name, Content: old}
	}
	return FromSources(ctx, srcs, seed)
}

// Source is a file to edit: a slash path and its content.
type Source struct {
	Name    string
	Content []byte
}

// FromSources edits each source with Edit (seeded by seed and its index)
// and returns the cases with the diffs diff(1) writes for them.
func FromSources(ctx context.Context, srcs []Source, seed uint64) ([]Case, error) {
	diffPath, err := exec.LookPath("diff")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	tmp, err := os.MkdirTemp("", "patch-corpus-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	out := make([]Case, 0, len(srcs))
	for i, sc := range srcs {
		name, old := sc.Name, sc.Content
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		neu := Edit(old, rng)
		a, b := filepath.Join(tmp, "old"), filepath.Join(tmp, "new")
		if err := os.WriteFile(a, old, 0o644); err != nil {
			return nil, err
		}
		if err := os.WriteFile(b, neu, 0o644); err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, diffPath, "-u", "--label", "a/"+name, "--label", "b/"+name, a, b)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		err = cmd.Run()
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			return nil, fmt.Errorf("diff %s: %w", name, err)
		}
		out = append(out, Case{Name: name, Old: old, New: neu, Diff: stdout.String()})
	}
	return out, nil
}

// Edit makes 1 to 4 random line edits (replace, delete, insert) to src.
func Edit(src []byte, rng *rand.Rand) []byte {
	lines := strings.SplitAfter(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	edits := 1 + rng.IntN(4)
	for e := 0; e < edits && len(lines) > 4; e++ {
		at := rng.IntN(len(lines))
		switch rng.IntN(3) {
		case 0:
			lines[at] = strings.TrimSuffix(lines[at], "\n") + fmt.Sprintf(" // edited %d\n", e)
		case 1:
			k := min(1+rng.IntN(3), len(lines)-at)
			lines = append(lines[:at], lines[at+k:]...)
		case 2:
			k := 1 + rng.IntN(3)
			add := make([]string, 0, k)
			for j := 0; j < k; j++ {
				add = append(add, fmt.Sprintf("\t// inserted %d.%d\n", e, j))
			}
			lines = append(lines[:at], append(add, lines[at:]...)...)
		}
	}
	return []byte(strings.Join(lines, ""))
}
