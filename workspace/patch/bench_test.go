package patch_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace"
	"github.com/harness-runtime/harness/workspace/patch"
	"github.com/harness-runtime/harness/workspace/patch/internal/corpus"
)

// BenchmarkApplyCorpus applies the 220 corpus diffs to files on disk with
// Harness (workspace_apply_patch: parse, resolve, read, apply, temp file,
// fsync, rename), with git apply and with GNU patch (one process
// per diff, as a caller applying model patches one by one would run them;
// and git apply and Harness once for all diffs as one multi-file patch), and reports the wall time of each per
// corpus (Harness through the workspace_apply_patch action) and the ratios tool/harness (above 1: Harness is faster). Harness
// fsyncs every file before renaming it into place; git apply and GNU patch
// do not, so harness-plan-only-ms (everything but the writes) is reported
// too.
//
//	go test -run XXX -bench ApplyCorpus -benchtime 3x ./workspace/patch/
//
// Diffs that Harness refuses are left out for every tool (none of the 220
// exact diffs is refused: their line numbers hold, so they decide).
func BenchmarkApplyCorpus(b *testing.B) {
	var cases []corpus.Case
	for _, c := range loadCorpus(b) {
		if p, err := patch.Parse(c.Diff); err == nil {
			if _, err := patch.Apply(c.Old, p.Files[0].Hunks, patch.Options{}); err == nil {
				cases = append(cases, c)
			}
		}
	}
	b.Logf("%d diffs", len(cases))
	gitPath, gitErr := exec.LookPath("git")
	patchPath, patchErr := exec.LookPath("patch")
	if gitErr != nil || patchErr != nil {
		b.Skip("git or GNU patch not installed")
	}
	dir := b.TempDir()
	reset := func() {
		for _, c := range cases {
			p := filepath.Join(dir, filepath.FromSlash(c.Name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(p, c.Old, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	diffFiles := make([]string, len(cases))
	var all strings.Builder
	for i, c := range cases {
		diffFiles[i] = filepath.Join(b.TempDir(), "d.patch")
		if err := os.WriteFile(diffFiles[i], []byte(c.Diff), 0o644); err != nil {
			b.Fatal(err)
		}
		all.WriteString(c.Diff)
	}
	allFile := filepath.Join(b.TempDir(), "all.patch")
	if err := os.WriteFile(allFile, []byte(all.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	opts := workspace.DefaultOptions()
	opts.Sandbox = "off"
	ws, err := workspace.New(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	ctx := context.Background()
	check := func(tool string) {
		b.StopTimer()
		for _, c := range cases {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(c.Name)))
			if err != nil || string(got) != string(c.New) {
				b.Fatalf("%s: %s not as intended", tool, c.Name)
			}
		}
		reset()
		b.StartTimer()
	}
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	var tHarness, tHarnessBatch, tPlan, tGit, tGitBatch, tPatch time.Duration
	reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		for _, c := range cases {
			_, err := ws.Run(ctx, action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": c.Diff}})
			if err != nil {
				b.Fatalf("harness %s: %v", c.Name, err)
			}
		}
		tHarness += time.Since(start)
		check("harness")

		start = time.Now()
		if _, err := ws.Run(ctx, action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": all.String()}}); err != nil {
			b.Fatalf("harness, one multi-file patch: %v", err)
		}
		tHarnessBatch += time.Since(start)
		check("harness (one run)")

		// Planning alone: parse, resolve, read, apply in memory, diff.
		start = time.Now()
		for _, c := range cases {
			if _, err := ws.PlanPatch(ctx, map[string]any{"patch": c.Diff}); err != nil {
				b.Fatal(err)
			}
		}
		tPlan += time.Since(start)

		start = time.Now()
		for _, f := range diffFiles {
			run(gitPath, "apply", f)
		}
		tGit += time.Since(start)
		check("git apply")

		start = time.Now()
		run(gitPath, "apply", allFile)
		tGitBatch += time.Since(start)
		check("git apply (one run)")

		start = time.Now()
		for _, f := range diffFiles {
			run(patchPath, "-p1", "-s", "-i", f)
		}
		tPatch += time.Since(start)
		check("GNU patch")
	}
	n := float64(b.N)
	ms := func(d time.Duration) float64 { return float64(d.Milliseconds()) / n }
	b.ReportMetric(ms(tHarness), "harness-ms")
	b.ReportMetric(ms(tPlan), "harness-plan-only-ms")
	b.ReportMetric(ms(tHarnessBatch), "harness-1run-ms")
	b.ReportMetric(float64(tGitBatch)/float64(tHarnessBatch), "git-1run/harness-1run")
	b.ReportMetric(ms(tGit), "git-apply-ms")
	b.ReportMetric(ms(tGitBatch), "git-apply-1run-ms")
	b.ReportMetric(ms(tPatch), "gnu-patch-ms")
	b.ReportMetric(float64(tGit)/float64(tHarness), "git/harness")
	b.ReportMetric(float64(tGitBatch)/float64(tHarness), "git-1run/harness")
	b.ReportMetric(float64(tPatch)/float64(tHarness), "patch/harness")
}

// BenchmarkApplyInMemory is the applier alone: parse and apply the corpus
// diffs to in-memory contents.
func BenchmarkApplyInMemory(b *testing.B) {
	cases := loadCorpus(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, c := range cases {
			p, err := patch.Parse(c.Diff)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := patch.Apply(c.Old, p.Files[0].Hunks, patch.Options{}); err != nil && !strings.Contains(err.Error(), "ambiguous") {
				b.Fatal(err)
			}
		}
	}
}
