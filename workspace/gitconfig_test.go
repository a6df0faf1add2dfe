package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// hostile is a workspace whose repository is built to run programs when
// git reads it. Every program it names is a script that creates a marker
// file (named after the script) in markers/ and then copies its input, so
// a filter or textconv still "works" and only the marker tells.
type hostile struct {
	t       testing.TB
	e       *shEnv
	root    string
	markers string
	tools   string
	outside string // a directory beside the root, for what points outside
}

// gitCommands are each allowed subcommand, with the options that make git
// look into the work tree, the history and the submodules: all are run
// against a repository that must be refused (a refusal starts nothing).
var gitCommands = []string{
	"git status",
	"git status -v",
	"git status --porcelain",
	"git status --ignore-submodules=none",
	"git diff",
	"git diff HEAD",
	"git diff --stat",
	"git diff --submodule=diff",
	"git diff --ignore-submodules=none HEAD",
	"git show",
	"git show --submodule=diff HEAD",
	"git log -p",
	"git log -p --submodule=diff",
	"git log --format=%h%d%s",
	"git rev-parse HEAD",
	"git branch",
	"git branch -v",
}

// The sets run against the repositories that are not refused, each the
// commands that reach its attack: every sandboxed run starts the helper,
// which costs much under the race detector.
var (
	gitWorkTreeCommands  = []string{"git status", "git status -v", "git diff", "git diff HEAD", "git show", "git log -p"}
	gitAnyCommands       = []string{"git status", "git diff", "git show", "git log --format=%h%d%s", "git rev-parse HEAD", "git branch -v"}
	gitSubmoduleCommands = []string{"git status", "git status --ignore-submodules=none", "git diff",
		"git diff --submodule=diff", "git diff --ignore-submodules=none HEAD", "git show --submodule=diff HEAD",
		"git log -p --submodule=diff"}
)

// newHostile makes a repository in a new workspace: f.txt, g.txt and h.md
// committed and then changed (so diff and status -v read them through the
// drivers of their attributes, one letter case each), r.txt committed and
// rewritten with the same content (so status must read it through the
// clean filter), and .gitattributes committed, naming the drivers.
func newHostile(t testing.TB, mode string) *hostile {
	t.Helper()
	e := newShEnv(t, mode, nil, nil)
	h := &hostile{t: t, e: e, root: e.root, markers: filepath.Join(e.root, "markers"),
		tools: filepath.Join(e.root, "tools"), outside: e.outside}
	for _, d := range []string{h.markers, h.tools} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h.write(".gitignore", "markers/\ntools/\n")
	h.write(".gitattributes", gitAttributes)
	h.write("f.txt", "one\n")
	h.write("g.txt", "g\n")
	h.write("h.md", "h\n")
	h.write("r.txt", "same\n")
	h.git(h.root, "init", "-q", "-b", "main")
	h.git(h.root, "add", ".")
	h.git(h.root, "commit", "-q", "-m", "first")
	h.write("f.txt", "one\ntwo\n")
	h.write("g.txt", "g\ntwo\n")
	h.write("h.md", "h\ntwo\n")
	h.write("r.txt", "same\n")
	return h
}

// gitAttributes names a filter and a diff driver in three letter cases;
// git looks their definitions up case-sensitively.
const gitAttributes = "f.txt filter=evil diff=evil\ng.txt filter=EVIL diff=EVIL\n*.md filter=eViL diff=eViL\n" +
	"r.txt filter=EVIL diff=EVIL\n"

func (h *hostile) git(dir string, args ...string) string {
	h.t.Helper()
	return gitIn(h.t, dir, append([]string{"-c", "protocol.file.allow=always"}, args...)...)
}

func (h *hostile) write(rel, content string) {
	h.t.Helper()
	p := filepath.Join(h.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// script makes tools/name, which leaves markers/name and copies stdin.
func (h *hostile) script(name string) string {
	h.t.Helper()
	p := filepath.Join(h.tools, name)
	body := "#!/bin/sh\ntouch " + filepath.Join(h.markers, name) + "\nexec cat\n"
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// set writes key = value into the configuration file at file.
func (h *hostile) set(file, key, value string) {
	h.t.Helper()
	h.git(h.root, "config", "--file", file, key, value)
}

// drivers defines, in file, a clean and smudge filter and a textconv diff
// driver under each name, each its own marker script.
func (h *hostile) drivers(file, prefix string, names ...string) {
	h.t.Helper()
	for _, n := range names {
		h.set(file, "filter."+n+".clean", h.script(prefix+"clean-"+n))
		h.set(file, "filter."+n+".smudge", h.script(prefix+"smudge-"+n))
		h.set(file, "diff."+n+".textconv", h.script(prefix+"textconv-"+n))
	}
}

func (h *hostile) found() []string {
	ents, _ := os.ReadDir(h.markers)
	var names []string
	for _, m := range ents {
		names = append(names, m.Name())
	}
	return names
}

func (h *hostile) clearMarkers() {
	for _, n := range h.found() {
		os.Remove(filepath.Join(h.markers, n))
	}
}

// submodule adds a submodule "sub" whose own repository has f.txt (changed
// after the commit) and g.txt (rewritten the same), both named by its
// .gitattributes, and returns the path of the submodule's gitdir.
func (h *hostile) submodule() string {
	h.t.Helper()
	src := filepath.Join(h.outside, "..", "subsrc")
	if err := os.MkdirAll(src, 0o755); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { os.RemoveAll(src) })
	for name, content := range map[string]string{"f.txt": "s\n", "g.txt": "same\n", ".gitattributes": gitAttributes} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(content), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	h.git(src, "init", "-q", "-b", "main")
	h.git(src, "add", ".")
	h.git(src, "commit", "-q", "-m", "sub")
	h.git(h.root, "submodule", "add", "-q", src, "sub")
	// Status looks into the submodule even without --ignore-submodules.
	h.set(filepath.Join(h.root, ".gitmodules"), "submodule.sub.ignore", "none")
	h.git(h.root, "add", ".gitmodules")
	h.git(h.root, "commit", "-q", "-m", "add sub")
	h.write("sub/f.txt", "s\nchanged\n")
	h.write("sub/g.txt", "same\n")
	return filepath.Join(h.root, ".git", "modules", "sub")
}

// gitAttack plants one way for a repository to run a program.
type gitAttack struct {
	name  string
	plant func(h *hostile)
	// control is a git command that, run on the planted repository without
	// Harness, leaves a marker: proof that the attack is real.
	control []string
	// refused: Harness refuses every git command on this repository.
	refused bool
	// commands are the git commands run on it (gitCommands when nil).
	commands []string
}

var gitAttacks = []gitAttack{
	{
		name:     "filter and textconv drivers in every letter case",
		plant:    func(h *hostile) { h.drivers(h.root+"/.git/config", "", "evil", "EVIL", "eViL") },
		control:  []string{"status", "-v"},
		commands: append(slices.Clone(gitWorkTreeCommands), "git log --format=%h%d%s", "git rev-parse HEAD", "git branch -v"),
	},
	{
		name: "upper-case driver beside an inert lower-case one",
		plant: func(h *hostile) {
			h.set(h.root+"/.git/config", "filter.evil.clean", "cat")
			h.set(h.root+"/.git/config", "diff.evil.textconv", "cat")
			h.drivers(h.root+"/.git/config", "", "EVIL")
		},
		control:  []string{"status", "-v"},
		commands: gitWorkTreeCommands,
	},
	{
		name: "long-running filter process",
		plant: func(h *hostile) {
			for _, n := range []string{"evil", "EVIL"} {
				h.set(h.root+"/.git/config", "filter."+n+".process", h.script("process-"+n))
			}
		},
		control:  []string{"status"},
		commands: []string{"git status", "git diff", "git show"},
	},
	{
		name: "diff command driver and diff.external",
		plant: func(h *hostile) {
			h.set(h.root+"/.git/config", "diff.EVIL.command", h.script("diff-command"))
			h.set(h.root+"/.git/config", "Diff.External", h.script("diff-external"))
		},
		control:  []string{"diff"},
		commands: []string{"git diff", "git diff HEAD", "git status -v", "git show", "git log -p"},
	},
	{
		name: "fsmonitor, pager, gpg, alias",
		plant: func(h *hostile) {
			h.set(h.root+"/.git/config", "core.fsmonitor", h.script("fsmonitor"))
			h.set(h.root+"/.git/config", "core.pager", h.script("pager"))
			h.set(h.root+"/.git/config", "pager.log", h.script("pager-log"))
			h.set(h.root+"/.git/config", "gpg.program", h.script("gpg"))
			h.set(h.root+"/.git/config", "log.showSignature", "true")
			h.set(h.root+"/.git/config", "alias.st", "!"+h.script("alias"))
		},
		control:  []string{"status"},
		commands: gitAnyCommands,
	},
	{
		name: "hooks in hooksPath and in .git/hooks",
		plant: func(h *hostile) {
			h.set(h.root+"/.git/config", "core.hooksPath", h.tools)
			for _, hook := range []string{"post-index-change", "post-checkout", "pre-commit", "reference-transaction"} {
				h.script(hook)
				if err := os.WriteFile(filepath.Join(h.root, ".git", "hooks", hook),
					[]byte("#!/bin/sh\ntouch "+filepath.Join(h.markers, "dotgit-"+hook)+"\n"), 0o755); err != nil {
					h.t.Fatal(err)
				}
			}
		},
		control:  []string{"update-index", "-q", "--refresh"}, // writes the index: post-index-change
		commands: gitAnyCommands,
	},
	{
		name: "include.path to a file with drivers",
		plant: func(h *hostile) {
			h.write("evil.cfg", "")
			h.drivers(h.root+"/evil.cfg", "include-", "evil", "EVIL")
			h.set(h.root+"/evil.cfg", "core.fsmonitor", h.script("include-fsmonitor"))
			h.set(h.root+"/.git/config", "include.path", "../evil.cfg")
		},
		control:  []string{"status", "-v"},
		commands: gitWorkTreeCommands,
	},
	{
		name: "includeIf gitdir and onbranch to files with drivers",
		plant: func(h *hostile) {
			h.write("a.cfg", "")
			h.write("b.cfg", "")
			h.drivers(h.root+"/a.cfg", "ifgitdir-", "EVIL")
			h.drivers(h.root+"/b.cfg", "ifbranch-", "evil")
			h.set(h.root+"/.git/config", `includeIf.gitdir:/**.path`, h.root+"/a.cfg")
			h.set(h.root+"/.git/config", "includeIf.onbranch:main.path", "~/b.cfg")
		},
		control:  []string{"status", "-v"},
		commands: gitWorkTreeCommands,
	},
	{
		name: "worktree config",
		plant: func(h *hostile) {
			h.set(h.root+"/.git/config", "core.repositoryformatversion", "1")
			h.set(h.root+"/.git/config", "extensions.worktreeConfig", "true")
			h.drivers(h.root+"/.git/config.worktree", "worktree-", "EVIL")
			h.set(h.root+"/.git/config.worktree", "core.fsmonitor", h.script("worktree-fsmonitor"))
		},
		control:  []string{"status", "-v"},
		commands: gitWorkTreeCommands,
	},
	{
		name: "submodule's own config",
		plant: func(h *hostile) {
			gitdir := h.submodule()
			h.drivers(gitdir+"/config", "sub-", "evil", "EVIL", "eViL")
			h.set(gitdir+"/config", "core.fsmonitor", h.script("sub-fsmonitor"))
			h.set(gitdir+"/config", "diff.EVIL.command", h.script("sub-diff-command"))
		},
		control:  []string{"status"},
		commands: gitSubmoduleCommands,
	},
	{
		name: "submodule's config includes a file with drivers",
		plant: func(h *hostile) {
			gitdir := h.submodule()
			h.write("sub.cfg", "")
			h.drivers(h.root+"/sub.cfg", "subinc-", "EVIL")
			h.set(gitdir+"/config", "include.path", h.root+"/sub.cfg")
		},
		control:  []string{"status"},
		commands: gitSubmoduleCommands,
	},
	{
		name: "submodule with an embedded .git directory",
		plant: func(h *hostile) {
			gitdir := h.submodule()
			// Undo the absorption: the submodule's repository lives in its
			// work tree, as with git before 1.7.8.
			dot := filepath.Join(h.root, "sub", ".git")
			if err := os.Remove(dot); err != nil {
				h.t.Fatal(err)
			}
			if err := os.Rename(gitdir, dot); err != nil {
				h.t.Fatal(err)
			}
			h.git(h.root, "config", "--file", dot+"/config", "--unset", "core.worktree")
			h.drivers(dot+"/config", "embedded-", "EVIL", "evil")
		},
		control:  []string{"status"},
		commands: gitSubmoduleCommands,
	},
	{
		name: "submodule gitdir file pointing outside any .git directory",
		plant: func(h *hostile) {
			gitdir := h.submodule()
			moved := filepath.Join(h.root, "notgit")
			if err := os.Rename(gitdir, moved); err != nil {
				h.t.Fatal(err)
			}
			h.write("sub/.git", "gitdir: ../notgit\n")
			h.git(h.root, "config", "--file", moved+"/config", "--unset", "core.worktree")
			h.drivers(moved+"/config", "notgit-", "EVIL")
		},
		control: []string{"status"},
		refused: true,
	},
	{
		name: "submodule only in history, its gitdir with drivers",
		plant: func(h *hostile) {
			gitdir := h.submodule()
			h.drivers(gitdir+"/config", "hist-", "EVIL", "evil")
			h.git(h.root, "rm", "-q", "--cached", "sub")
			h.git(h.root, "commit", "-q", "-m", "drop sub from the index")
		},
		control:  []string{"log", "-p", "--submodule=diff"},
		commands: []string{"git log -p --submodule=diff", "git show --submodule=diff HEAD~1", "git diff --submodule=diff HEAD~2", "git status"},
	},
	{
		name: ".git/config a symlink to a file with drivers",
		plant: func(h *hostile) {
			h.write("linked.cfg", "")
			h.drivers(h.root+"/linked.cfg", "linked-", "EVIL")
			cfg := filepath.Join(h.root, ".git", "config")
			b, err := os.ReadFile(cfg)
			if err != nil {
				h.t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(h.root, "linked.cfg"), append(b, readFile(h.t, filepath.Join(h.root, "linked.cfg"))...), 0o644); err != nil {
				h.t.Fatal(err)
			}
			if err := os.Remove(cfg); err != nil {
				h.t.Fatal(err)
			}
			if err := os.Symlink("../linked.cfg", cfg); err != nil {
				h.t.Fatal(err)
			}
		},
		control: []string{"status"},
		refused: true,
	},
	{
		name: "object alternates outside the root",
		plant: func(h *hostile) {
			h.write(".git/objects/info/alternates", h.outside+"\n")
		},
		refused: true,
	},
	{
		name: "commondir outside the root",
		plant: func(h *hostile) {
			other := filepath.Join(h.outside, "..", "other")
			h.git(filepath.Dir(other), "init", "-q", "other")
			h.t.Cleanup(func() { os.RemoveAll(other) })
			h.drivers(other+"/.git/config", "common-", "EVIL")
			h.write(".git/commondir", other+"/.git\n")
		},
		refused: true,
	},
	{
		name: "commondir inside the root",
		plant: func(h *hostile) {
			h.git(h.root, "init", "-q", "inner")
			h.drivers(h.root+"/inner/.git/config", "common-", "EVIL")
			h.write(".git/commondir", "../inner/.git\n")
		},
		refused: true,
	},
}

// TestGitHostileRepositoryRunsNothing is SPEC 7's "a hostile repository
// runs nothing when git is invoked": for each way a repository can name a
// program (drivers in any letter case, the submodules' own configuration,
// includes, worktree configuration, hooks, fsmonitor, pagers), each
// allowed git subcommand runs in the workspace and no program of the
// repository starts; a repository whose configuration Harness cannot
// account for (alternates or commondir elsewhere, a submodule gitdir
// outside a .git directory) is refused. Each attack is first shown to work
// on plain git.
//
// "sanitized copies" runs with the mount namespace, where git reads only
// sanitized copies; "overrides" runs with the sandbox off, where only the
// command-scope overrides stand.
func TestGitHostileRepositoryRunsNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, mode := range []struct{ name, sandbox string }{
		{"sanitized copies", SandboxBestEffort},
		{"overrides", SandboxOff},
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, a := range gitAttacks {
				t.Run(a.name, func(t *testing.T) {
					h := newHostile(t, mode.sandbox)
					a.plant(h)
					if a.control != nil {
						// Plain git, as a person would run it; it may fail
						// once the program has run.
						cmd := exec.Command("git", a.control...)
						cmd.Dir = h.root
						// No optional locks: the index stays as planted, r.txt
						// still to be read through the clean filter.
						cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + h.root, "GIT_CONFIG_NOSYSTEM=1", "PAGER=cat",
							"GIT_OPTIONAL_LOCKS=0"}
						ctl, _ := cmd.CombinedOutput()
						if len(h.found()) == 0 {
							t.Fatalf("control: plain git %v ran nothing; the attack is not real\n%s", a.control, ctl)
						}
						h.clearMarkers()
					}
					if mode.sandbox != SandboxOff {
						requireLaidConfig(t, h.e.w, a.refused)
					}
					commands := a.commands
					if commands == nil {
						commands = gitCommands
					}
					for _, c := range commands {
						out, err := h.e.run(t, c)
						if a.refused {
							if action.CodeOf(err) != action.CodeCommandNotAllowed {
								t.Fatalf("%s: want command_not_allowed, got %v %v", c, out, err)
							}
						} else if err != nil {
							t.Fatalf("%s: %v", c, err)
						}
						if m := h.found(); len(m) > 0 {
							t.Fatalf("%s ran programs of the repository: %v (stderr %q)", c, m, out["stderr"])
						}
					}
					h.e.assertOutsideUntouched(t, nil, nil)
				})
			}
		})
	}
}

// requireLaidConfig skips unless the sandbox lays sanitized copies, and
// checks that the plan of a git command binds one over .git/config.
func requireLaidConfig(t *testing.T, w *Workspace, refused bool) {
	t.Helper()
	plan, err := w.PlanCommand("git status")
	if refused {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !plan.policy.MountNS {
		t.Skip("the sandbox has no mount namespace here: " + plan.SandboxNote)
	}
	if !slices.ContainsFunc(plan.policy.ROBinds, func(b [2]string) bool {
		return b[1] == filepath.Join(w.Root(), ".git", "config")
	}) {
		t.Fatalf("no sanitized copy laid over .git/config: %v", plan.policy.ROBinds)
	}
}

// TestGitGlobalConfigPlantedByCommand: an earlier command (a Makefile
// recipe) writes a global configuration where git would look for one
// ($HOME/.gitconfig, the root; $XDG_CONFIG_HOME/git/config, the command's
// private directory) and global attributes naming its drivers; git run
// afterwards reads neither.
func TestGitGlobalConfigPlantedByCommand(t *testing.T) {
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " is not installed")
		}
	}
	for _, mode := range []string{SandboxBestEffort, SandboxOff} {
		t.Run(mode, func(t *testing.T) {
			h := newHostile(t, mode)
			cfg := "[core]\n\tfsmonitor = " + h.script("global-fsmonitor") + "\n\tpager = " + h.script("global-pager") + "\n" +
				"[filter \"GLOBAL\"]\n\tclean = " + h.script("global-clean") + "\n" +
				"[diff \"GLOBAL\"]\n\ttextconv = " + h.script("global-textconv") + "\n" +
				"[diff]\n\texternal = " + h.script("global-external") + "\n"
			h.write("global.cfg", cfg)
			h.write("Makefile", "plant:\n"+
				"\tcp global.cfg $$HOME/.gitconfig\n"+
				"\tmkdir -p $$XDG_CONFIG_HOME/git\n"+
				"\tcp global.cfg $$XDG_CONFIG_HOME/git/config\n"+
				"\tprintf '*.txt filter=GLOBAL diff=GLOBAL\\n' > $$XDG_CONFIG_HOME/git/attributes\n")
			out := h.e.mustRun(t, "make plant")
			if out["exit_code"] != 0 {
				t.Fatalf("make plant: %v", out)
			}
			if _, err := os.Stat(filepath.Join(h.root, ".gitconfig")); err != nil {
				t.Fatal(err)
			}
			for _, c := range gitWorkTreeCommands {
				out, err := h.e.run(t, c)
				if err != nil {
					t.Fatalf("%s: %v", c, err)
				}
				if m := h.found(); len(m) > 0 {
					t.Fatalf("%s ran programs of a planted global configuration: %v (stderr %q)", c, m, out["stderr"])
				}
			}
		})
	}
}

// TestGitBenignRepositoryWorks: with its configuration sanitized, an
// ordinary repository with a submodule and an upstream still reads as it
// should: status with upstream tracking, diff, log, show, branch.
func TestGitBenignRepositoryWorks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, mode := range []string{SandboxBestEffort, SandboxOff} {
		t.Run(mode, func(t *testing.T) {
			h := newHostile(t, mode)
			h.write(".gitattributes", "") // no drivers named
			h.git(h.root, "commit", "-q", "-am", "no attributes")
			h.write("f.txt", "one\ntwo\nthree\n")
			h.submodule()
			h.git(h.root, "update-ref", "refs/remotes/origin/main", "HEAD~1")
			h.set(h.root+"/.git/config", "remote.origin.url", "https://example.com/r.git")
			h.set(h.root+"/.git/config", "remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*")
			h.set(h.root+"/.git/config", "branch.main.remote", "origin")
			h.set(h.root+"/.git/config", "branch.main.merge", "refs/heads/main")
			h.set(h.root+"/.git/config", "core.quotePath", "false")
			h.write("ünï.txt", "x\n")
			tests := []struct {
				command string
				want    []string
			}{
				{"git status", []string{"ahead of 'origin/main' by 1 commit", "modified:   f.txt", "modified:   sub (modified content)", "ünï.txt"}},
				{"git status --porcelain", []string{" M f.txt", " M sub"}},
				{"git diff", []string{"+three", "-Subproject commit", "+Subproject commit", "-dirty"}},
				{"git diff --submodule=diff", []string{"+three", "+changed"}},
				{"git log", []string{"add sub", "no attributes", "first"}},
				{"git show --stat", []string{"add sub", ".gitmodules", "sub"}},
				{"git branch -vv", []string{"main", "[origin/main: ahead 1]"}},
				{"git rev-parse --abbrev-ref @{u}", []string{"origin/main"}},
			}
			for _, tt := range tests {
				out, err := h.e.run(t, tt.command)
				if err != nil {
					t.Fatalf("%s: %v", tt.command, err)
				}
				for _, w := range tt.want {
					if !strings.Contains(out["stdout"].(string), w) {
						t.Errorf("%s: stdout lacks %q\nstdout %s\nstderr %s", tt.command, w, out["stdout"], out["stderr"])
					}
				}
				if out["exit_code"] != 0 {
					t.Errorf("%s: exit %v, stderr %s", tt.command, out["exit_code"], out["stderr"])
				}
			}
		})
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

// TestGitOverridesNoted: without sanitized copies, a plan whose repository
// defines anything beyond the inert variables says so in its sandbox note;
// a repository with only inert variables needs no note.
func TestGitOverridesNoted(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	h := newHostile(t, SandboxOff)
	plan, err := h.e.w.PlanCommand("git status")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.SandboxNote, "git reads") {
		t.Fatalf("inert repository noted: %q", plan.SandboxNote)
	}
	h.drivers(h.root+"/.git/config", "", "EVIL")
	plan, err = h.e.w.PlanCommand("git status")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.SandboxNote, "git reads the repository's configuration as it is") {
		t.Fatalf("sandbox note %q", plan.SandboxNote)
	}
	if _, err := h.e.w.Run(context.Background(), action.Action{Name: "workspace_run_shell",
		Input: map[string]any{"command": "git status"}}); err != nil {
		t.Fatal(err)
	}
}

// TestGitRecipeRunsNothing: git started by a Makefile recipe (code the
// person approved, which runs git) reads the same sanitized copies as git
// started by Harness, for the repository and its submodule.
func TestGitRecipeRunsNothing(t *testing.T) {
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip(tool + " is not installed")
		}
	}
	h := newHostile(t, SandboxBestEffort)
	gitdir := h.submodule()
	h.drivers(h.root+"/.git/config", "", "evil", "EVIL")
	h.drivers(gitdir+"/config", "sub-", "evil", "EVIL")
	h.set(h.root+"/.git/config", "core.fsmonitor", h.script("fsmonitor"))
	h.write("Makefile", "check:\n\tgit status\n\tgit status -v\n\tgit diff\n\tgit diff --submodule=diff\n\tgit -C sub status\n")
	requireLaidConfig(t, h.e.w, false)
	plan, err := h.e.w.PlanCommand("make check")
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.policy.ROBinds) < 2 {
		t.Fatalf("make's plan lays %d sanitized copies, want the repository's and the submodule's", len(plan.policy.ROBinds))
	}
	out := h.e.mustRun(t, "make check")
	if m := h.found(); len(m) > 0 {
		t.Fatalf("the recipe's git ran programs of the repository: %v\n%v", m, out)
	}
	if !strings.Contains(out["stdout"].(string), "+two") || out["exit_code"] != 0 {
		t.Fatalf("the recipe's git did not work: %v", out)
	}
}

// TestGitRequiredWithoutMountNS: with sandbox required and no mount
// namespace to lay copies with, git is refused on a repository that
// defines anything beyond the inert variables, and runs on one that does
// not.
func TestGitRequiredWithoutMountNS(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	h := newHostile(t, SandboxRequired)
	plan, err := h.e.w.PlanCommand("git status")
	if err != nil {
		t.Skip("sandbox required is not available here: ", err)
	}
	degraded := func() error {
		p := plan
		p.policy.MountNS = false
		p.policy.ROBinds = nil
		return h.e.w.planGit(&p)
	}
	if err := degraded(); err != nil {
		t.Fatalf("inert repository: %v", err)
	}
	h.drivers(h.root+"/.git/config", "", "EVIL")
	err = degraded()
	if action.CodeOf(err) != action.CodeCommandNotAllowed || !strings.Contains(err.Error(), "sandbox required") {
		t.Fatalf("hostile repository: %v", err)
	}
}

func TestGitLooksIntoSubmodules(t *testing.T) {
	for argv, want := range map[string]bool{
		"git status":                          false,
		"git diff --submodule=diff":           true,
		"git log -p --submodule":              true,
		"git show --submod=log":               true,
		"git diff --sub":                      true,
		"git grep --recurse-submodules x":     true,
		"git ls-files --recurse-sub":          true,
		"git diff --stat":                     false,
		"git diff -- --submodule=diff":        true,
		"git log --grep -- --submodule=diff":  true,
		"git status --ignore-submodules=none": false,
		"git log --no-recurse-submodules":     false,
		"git diff --s":                        false,
	} {
		if got := gitLooksIntoSubmodules(strings.Fields(argv)); got != want {
			t.Errorf("%s: %v, want %v", argv, got, want)
		}
	}
}

func readFile(t testing.TB, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGitScanResolve: the scan's resolver gives what EvalSymlinks gives,
// also where its quick path must not be taken (a symlink before "..",
// a symlink out of the root).
func TestGitScanResolve(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(base, "root")
	for _, d := range []string{"root/a/b", "root/.git/modules/s", "outside/x"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"root/ln": "a/b", "root/out": "../outside/x", "root/a/up": ".."} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	s := &gitScan{root: root}
	for _, tt := range []struct{ dir, p string }{
		{root, "a/b"},
		{root + "/a", "../.git/modules/s"},
		{root, "ln"},
		{root, "ln/../b"},
		{root, "ln/.."},
		{root, "out"},
		{root, "a/up/a/b"},
		{root, "missing"},
		{root, root + "/.git/modules/s"},
		{root, base + "/outside/x"},
		{root, "./a/./b"},
	} {
		got, gerr := s.resolve(tt.dir, tt.p)
		full := tt.p
		if !filepath.IsAbs(full) {
			full = tt.dir + "/" + tt.p
		}
		want, werr := filepath.EvalSymlinks(full)
		if got != want || (gerr == nil) != (werr == nil) {
			t.Errorf("resolve(%s, %s) = %q, %v; EvalSymlinks %q, %v", tt.dir, tt.p, got, gerr, want, werr)
		}
	}
}
