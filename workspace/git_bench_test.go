package workspace

import (
	"os/exec"
	"testing"
)

// BenchmarkPlanGit is what finding and sanitizing git's configuration adds
// to planning a command: "git status" against "pwd", on a repository with
// one submodule (so two configuration files and two indexes are read).
func BenchmarkPlanGit(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	h := newHostile(b, SandboxBestEffort)
	h.submodule()
	for _, c := range []string{"pwd", "git status", "git log -p --submodule=diff"} {
		b.Run(c, func(b *testing.B) {
			for b.Loop() {
				if _, err := h.e.w.PlanCommand(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
