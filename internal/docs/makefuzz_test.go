package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeFuzz runs `make fuzz` on a module of three fuzz targets, as the
// README describes it: a target whose run fails as Go 1.26's fuzz
// coordinator can at its deadline ("context deadline exceeded", no failing
// input written) is run once more and passes; a target that finds a
// failing input writes it to its testdata/fuzz and fails the run; a target
// that fails otherwise fails the run at once; FUZZ picks targets by name.
func TestMakeFuzz(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fuzz targets")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	repo := repoRoot(t)
	mod := t.TempDir()
	marker := filepath.Join(t.TempDir(), "failed-once")
	files := map[string]string{
		"go.mod": "module fuzzcheck.example\n\ngo 1.26\n",
		// Fails its first run on its seed, which writes no failing input,
		// with the coordinator's message.
		"once/once_test.go": `package once

import (
	"os"
	"testing"
)

func FuzzOnce(f *testing.F) {
	f.Add("a")
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := os.Stat(` + "`" + marker + "`" + `); err != nil {
			os.WriteFile(` + "`" + marker + "`" + `, nil, 0o644)
			t.Fatal("context deadline exceeded")
		}
	})
}
`,
		// Fails on any input but its seed: the fuzzer's first new input.
		"finds/finds_test.go": `package finds

import "testing"

func FuzzFinds(f *testing.F) {
	f.Add("a")
	f.Fuzz(func(t *testing.T, s string) {
		if s != "a" {
			t.Fatalf("found %q", s)
		}
	})
}
`,
		// Fails on its seed every time, with another message.
		"broken/broken_test.go": `package broken

import "testing"

func FuzzBroken(f *testing.F) {
	f.Add("a")
	f.Fuzz(func(t *testing.T, s string) {
		t.Fatal("broken")
	})
}
`,
	}
	writeFiles(t, mod, files)
	run := func(fuzz string) (string, error) {
		cmd := exec.Command("make", "-s", "-C", repo, "fuzz", "FUZZROOT="+mod, "FUZZTIME=50x", "FUZZ="+fuzz)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("FuzzOnce")
	if err != nil {
		t.Fatalf("make fuzz FUZZ=FuzzOnce: %v\n%s", err, out)
	}
	once := filepath.Join(mod, "once")
	for _, want := range []string{"again FuzzOnce " + once, "ok    FuzzOnce " + once} {
		if !strings.Contains(out, want) {
			t.Errorf("make fuzz FUZZ=FuzzOnce: no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "FuzzFinds") || strings.Contains(out, "FuzzBroken") {
		t.Errorf("make fuzz FUZZ=FuzzOnce ran other targets too:\n%s", out)
	}

	out, err = run(".")
	if err == nil {
		t.Fatalf("make fuzz passed with a target that finds a failing input:\n%s", out)
	}
	finds, broken := filepath.Join(mod, "finds"), filepath.Join(mod, "broken")
	for _, want := range []string{"FAIL  FuzzFinds " + finds, "FAIL  FuzzBroken " + broken, "ok    FuzzOnce " + once} {
		if !strings.Contains(out, want) {
			t.Errorf("make fuzz: no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "again FuzzFinds") {
		t.Errorf("make fuzz ran a target again after it wrote a failing input:\n%s", out)
	}
	if strings.Contains(out, "again FuzzBroken") {
		t.Errorf("make fuzz ran a target again after a failure that is not the coordinator's:\n%s", out)
	}
	written, _ := os.ReadDir(filepath.Join(finds, "testdata", "fuzz", "FuzzFinds"))
	if len(written) != 1 {
		t.Errorf("FuzzFinds wrote %d failing inputs, want 1", len(written))
	}
}
