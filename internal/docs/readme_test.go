package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeGoProgramsCompile builds every ```go block of the README that
// is a whole program (it starts with "package"), as a user who copies it
// would, against this checkout of the module.
func TestReadmeGoProgramsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	repo := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The module's own go.sum answers for the dependencies.
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	n := 0
	for i, b := range blocks {
		src := b[1]
		if !strings.HasPrefix(src, "package ") {
			continue
		}
		n++
		dir := t.TempDir()
		gomod := "module readme.example/p\n\ngo 1.26\n\nrequire github.com/harness-runtime/harness v0.0.0\n\nreplace github.com/harness-runtime/harness => " + repo + "\n"
		writeFiles(t, dir, map[string]string{"go.mod": gomod, "main.go": src, "go.sum": string(sum)})
		cmd := exec.Command("go", "build", "-mod=mod", "-o", os.DevNull, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("README Go block %d does not compile:\n%s\n%s", i+1, out, src)
		}
	}
	if n == 0 {
		t.Fatal("the README has no Go program to check")
	}
}
