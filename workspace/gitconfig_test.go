package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// hostileRepo makes a git repository in the root whose .git/config names,
// for every hook git offers, a script that creates a marker file; it
// returns the marker directory.
func hostileRepo(t *testing.T, e *shEnv, withProcess bool) string {
	t.Helper()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = e.root
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.root, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(e.root, "f.txt"), []byte("one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "-q", "-b", "main")
	git("add", "f.txt")
	git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "first")

	// Markers inside the root: Landlock would allow those writes, so only
	// the neutral configuration can keep them from appearing.
	markers := filepath.Join(e.root, "markers")
	tools := filepath.Join(e.root, "tools")
	for _, d := range []string{markers, tools} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := func(name string) string {
		p := filepath.Join(tools, name)
		body := "#!/bin/sh\ntouch " + filepath.Join(markers, name) + "\ncat\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for key, value := range map[string]string{
		"core.fsmonitor":     script("fsmonitor"),
		"core.pager":         script("pager"),
		"pager.log":          script("pager-log"),
		"diff.external":      script("diff-external"),
		"diff.evil.textconv": script("textconv"),
		"diff.evil.command":  script("diff-command"),
		"filter.evil.clean":  script("filter-clean"),
		"filter.evil.smudge": script("filter-smudge"),
		"gpg.program":        script("gpg"),
		"log.showSignature":  "true",
		"core.hooksPath":     tools,
		"alias.st":           "!" + script("alias"),
	} {
		git("config", key, value)
	}
	if withProcess {
		git("config", "filter.evil.process", script("filter-process"))
	}
	script("post-checkout")
	script("pre-commit")
	if err := os.WriteFile(filepath.Join(e.root, ".gitattributes"), []byte("*.txt filter=evil diff=evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A modified, re-stamped work tree file makes status and diff consult
	// the fsmonitor, the clean filter and the diff drivers.
	if err := os.WriteFile(filepath.Join(e.root, "f.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return markers
}

// TestGitHostileConfigRunsNothing: a .git/config planted in the workspace
// names programs for fsmonitor, pager, external diff, textconv, filters,
// gpg and hooks; no git command Harness runs starts any of them.
func TestGitHostileConfigRunsNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, mode := range []string{SandboxOff, SandboxBestEffort} {
		t.Run(mode, func(t *testing.T) {
			e := newShEnv(t, mode, nil, nil)
			e.w.opts.AllowedGitSubcommands = append(slices.Clone(DefaultOptions().AllowedGitSubcommands), "grep", "blame")
			markers := hostileRepo(t, e, false)
			tests := []struct {
				command string
				want    string // in stdout
			}{
				{"git status", "f.txt"},
				{"git status --porcelain", "f.txt"},
				{"git diff", "+two"},
				{"git diff HEAD", "+two"},
				{"git log -p", "first"},
				{"git log --format=%G?%s", "first"},
				{"git show", "first"},
				{"git branch", "main"},
				{"git rev-parse HEAD", ""},
				{"git grep one", "f.txt"},
				{"git blame f.txt", "one"},
			}
			for _, tt := range tests {
				t.Run(tt.command, func(t *testing.T) {
					out := e.mustRun(t, tt.command)
					if !strings.Contains(out["stdout"].(string), tt.want) {
						t.Errorf("stdout %q lacks %q (stderr %q)", out["stdout"], tt.want, out["stderr"])
					}
					if testing.Verbose() {
						t.Logf("stderr: %q", out["stderr"])
					}
					if ents, _ := os.ReadDir(markers); len(ents) > 0 {
						names := make([]string, len(ents))
						for i, m := range ents {
							names[i] = m.Name()
						}
						t.Fatalf("repository configuration ran programs: %v", names)
					}
				})
			}
			if _, err := e.run(t, "git st"); action.CodeOf(err) != action.CodeArgumentNotAllowed {
				t.Fatalf("alias: %v", err)
			}
		})
	}
}

// TestGitHostileFilterProcessFailsClosed: a long-running filter process
// cannot be switched off by configuration, only replaced; Harness replaces
// it with "false", so git reports an error (and may fail) instead of
// running it.
func TestGitHostileFilterProcessFailsClosed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := newShEnv(t, SandboxBestEffort, nil, nil)
	markers := hostileRepo(t, e, true)
	for _, c := range []string{"git status", "git diff"} {
		out := e.mustRun(t, c)
		if ents, _ := os.ReadDir(markers); len(ents) > 0 {
			t.Fatalf("%s: repository configuration ran %s", c, ents[0].Name())
		}
		if c == "git diff" && out["stderr"] == "" {
			t.Fatalf("%s: want git to report the disarmed filter, got %v", c, out)
		}
	}
}

func TestGitRefusesForeignGitDir(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	e := newShEnv(t, SandboxOff, nil, nil)
	if err := os.WriteFile(filepath.Join(e.root, ".git"), []byte("gitdir: "+e.outside+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := e.run(t, "git status")
	if action.CodeOf(err) != action.CodeCommandNotAllowed {
		t.Fatalf("gitdir file: %v", err)
	}
	e.assertOutsideUntouched(t, nil, err)
}

func TestDriverOverrides(t *testing.T) {
	names := []byte("filter.evil.clean\x00filter.a.b.process\x00diff.x.textconv\x00diff.x.command\x00diff.external\x00core.pager\x00merge.m.driver\x00filter.evil.required\x00")
	got := driverOverrides(names)
	want := [][2]string{
		{"filter.evil.clean", "cat"},
		{"filter.a.b.process", "false"},
		{"diff.x.textconv", "cat"},
		{"diff.x.command", "false"},
		{"merge.m.driver", "false"},
		{"filter.evil.required", "false"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("driverOverrides = %v, want %v", got, want)
	}
}
