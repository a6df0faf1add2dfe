package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

const shSentinel = "SHELL-SENTINEL-5c1e0b-outside-the-root"

// shEnv is a workspace root next to an outside directory holding a
// sentinel file, with symlinks in the root that point outside.
type shEnv struct {
	w       *Workspace
	root    string
	outside string
	secret  string
	watch   *fileWatch
}

// newShEnv builds the environment. The test binary is the sandbox helper
// (see TestMain); extra commands are allowed on top of the defaults.
func newShEnv(t testing.TB, mode string, extra []string, files map[string]string) *shEnv {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &shEnv{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	e.secret = filepath.Join(e.outside, "secret.txt")
	for _, d := range []string{e.root, e.outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(e.secret, []byte(shSentinel+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, content := range files {
		full := filepath.Join(e.root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"escape": e.outside, "escape-file": e.secret} {
		if err := os.Symlink(target, filepath.Join(e.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	opts := DefaultOptions()
	opts.Sandbox = mode
	opts.HelperPath = os.Args[0]
	opts.AllowedCommands = append(opts.AllowedCommands, extra...)
	opts.CommandTimeout = 20 * time.Second
	e.w, err = New(e.root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.w.Close() })
	e.watch = newFileWatch(t, e.outside, e.secret)
	return e
}

func (e *shEnv) run(t testing.TB, command string) (map[string]any, error) {
	t.Helper()
	return e.w.Run(context.Background(), action.Action{
		Name:  "workspace_run_shell",
		Input: map[string]any{"command": command},
	})
}

// assertOutsideUntouched fails when anything outside the root was read,
// changed or printed: no file-system event on the outside directory or the
// sentinel, the sentinel intact, its text in no output.
func (e *shEnv) assertOutsideUntouched(t testing.TB, out map[string]any, err error) {
	t.Helper()
	if ev := e.watch.events(); len(ev) > 0 {
		t.Errorf("outside the root was touched: %v", ev)
	}
	b, rerr := os.ReadFile(e.secret)
	if rerr != nil || string(b) != shSentinel+"\n" {
		t.Errorf("sentinel changed: %q, %v", b, rerr)
	}
	entries, _ := os.ReadDir(e.outside)
	if len(entries) != 1 {
		t.Errorf("outside directory now has %d entries, want only the sentinel", len(entries))
	}
	e.watch.drain() // our own checks above are not the command's doing
	var text strings.Builder
	for _, v := range out {
		if s, ok := v.(string); ok {
			text.WriteString(s)
		}
	}
	if err != nil {
		text.WriteString(err.Error())
		var ae *action.Error
		if errors.As(err, &ae) {
			for _, v := range ae.Payload {
				if s, ok := v.(string); ok {
					text.WriteString(s)
				}
			}
		}
	}
	if strings.Contains(text.String(), shSentinel) {
		t.Errorf("sentinel text leaked into the observation")
	}
}

func (e *shEnv) mustRun(t testing.TB, command string) map[string]any {
	t.Helper()
	out, err := e.run(t, command)
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return out
}

func TestRunShellAttackSuite(t *testing.T) {
	e := newShEnv(t, SandboxBestEffort, []string{"cat", "touch"}, map[string]string{"main.go": "package main\n"})
	tests := []struct {
		name    string
		command string
		code    action.Code
		word    string
	}{
		// metacharacters: never a shell
		{"sequence", "ls; cat ../outside/secret.txt", action.CodeArgumentNotAllowed, ";"},
		{"pipe", "cat escape-file | ls", action.CodeArgumentNotAllowed, "|"},
		{"variable", "ls $HOME", action.CodeArgumentNotAllowed, "$"},
		{"command substitution", "cat `echo x`", action.CodeArgumentNotAllowed, "`"},
		{"redirect over sentinel", "ls > ../outside/secret.txt", action.CodeArgumentNotAllowed, ">"},
		{"newline", "ls\ncat ../outside/secret.txt", action.CodeArgumentNotAllowed, `\n`},
		// commands
		{"absolute program", "/bin/cat ../outside/secret.txt", action.CodeCommandNotAllowed, "/bin/cat"},
		{"relative program", "./evil.sh", action.CodeCommandNotAllowed, "./evil.sh"},
		{"shell", "sh -c id", action.CodeCommandNotAllowed, "sh"},
		{"env dump", "env", action.CodeCommandNotAllowed, "env"},
		{"interpreter", "python3 -c 1", action.CodeCommandNotAllowed, "python3"},
		// path arguments, every command
		{"dotdot", "cat ../outside/secret.txt", action.CodeArgumentNotAllowed, "../outside/secret.txt"},
		{"absolute", "ls /etc", action.CodeArgumentNotAllowed, "/etc"},
		{"hidden dotdot", "ls sub/../../outside", action.CodeArgumentNotAllowed, "sub/../../outside"},
		{"symlink dir", "ls escape", action.CodeArgumentNotAllowed, "escape"},
		{"symlink file", "cat escape-file", action.CodeArgumentNotAllowed, "escape-file"},
		{"through symlink", "cat escape/secret.txt", action.CodeArgumentNotAllowed, "escape/secret.txt"},
		{"tilde", "ls ~/.ssh", action.CodeArgumentNotAllowed, "~/.ssh"},
		{"value after equals", "ls --hide=../../x", action.CodeArgumentNotAllowed, "--hide=../../x"},
		{"touch outside", "touch ../outside/pwned", action.CodeArgumentNotAllowed, "../outside/pwned"},
		{"touch beneath .git", "touch .git/hooks/pre-commit", action.CodeArgumentNotAllowed, ".git/hooks/pre-commit"},
		{"ls follows links", "ls -RL .", action.CodeArgumentNotAllowed, "-RL"},
		{"rg follows links", "rg --follow x", action.CodeArgumentNotAllowed, "--follow"},
		// git
		{"git -c", "git -c core.pager=sh log", action.CodeArgumentNotAllowed, "-c"},
		{"git -C", "git -C .. status", action.CodeArgumentNotAllowed, "-C"},
		{"git exec-path", "git --exec-path=. status", action.CodeArgumentNotAllowed, "--exec-path=."},
		{"git git-dir", "git --git-dir=../outside status", action.CodeArgumentNotAllowed, "--git-dir=../outside"},
		{"git work-tree", "git --work-tree=.. status", action.CodeArgumentNotAllowed, "--work-tree=.."},
		{"git output", "git diff --output=x.patch", action.CodeArgumentNotAllowed, "--output=x.patch"},
		{"git output abbreviated", "git diff --outp=x.patch", action.CodeArgumentNotAllowed, "--outp=x.patch"},
		{"git ext-diff", "git diff --ext-diff", action.CodeArgumentNotAllowed, "--ext-diff"},
		{"git textconv", "git log -p --textconv", action.CodeArgumentNotAllowed, "--textconv"},
		{"git show-signature", "git log --show-signature", action.CodeArgumentNotAllowed, "--show-signature"},
		{"git help runs man", "git log --help", action.CodeArgumentNotAllowed, "--help"},
		{"git branch delete", "git branch -D main", action.CodeArgumentNotAllowed, "-D"},
		{"git branch combined flags", "git branch -vD main", action.CodeArgumentNotAllowed, "-vD"},
		{"git branch move", "git branch --move a b", action.CodeArgumentNotAllowed, "--move"},
		{"git branch upstream", "git branch --set-upstream-to=origin/main", action.CodeArgumentNotAllowed, "--set-upstream-to=origin/main"},
		{"git branch create", "git branch newbranch", action.CodeArgumentNotAllowed, "newbranch"},
		{"git push", "git push", action.CodeArgumentNotAllowed, "push"},
		{"git config", "git config core.pager sh", action.CodeArgumentNotAllowed, "config"},
		{"git pathspec outside", "git diff -- ../outside/secret.txt", action.CodeArgumentNotAllowed, "../outside/secret.txt"},
		{"git no-index outside", "git diff --no-index escape-file main.go", action.CodeArgumentNotAllowed, "escape-file"},
		// rg
		{"rg pre", "rg --pre=cat x", action.CodeArgumentNotAllowed, "--pre=cat"},
		{"rg pre next word", "rg --pre cat x", action.CodeArgumentNotAllowed, "--pre"},
		{"rg pre-glob", "rg --pre-glob '*' x", action.CodeArgumentNotAllowed, "--pre-glob"},
		{"rg search-zip", "rg --search-zip x", action.CodeArgumentNotAllowed, "--search-zip"},
		{"rg -z grouped", "rg -iz x", action.CodeArgumentNotAllowed, "-iz"},
		{"rg hostname-bin", "rg --hostname-bin=id x", action.CodeArgumentNotAllowed, "--hostname-bin=id"},
		{"rg pattern file outside", "rg -f ../outside/secret.txt .", action.CodeArgumentNotAllowed, "../outside/secret.txt"},
		// go
		{"go toolexec", "go build -toolexec=sh .", action.CodeArgumentNotAllowed, "-toolexec=sh"},
		{"go exec", "go test -exec sh .", action.CodeArgumentNotAllowed, "-exec"},
		{"go -C", "go -C .. build", action.CodeArgumentNotAllowed, "-C"},
		{"go vettool", "go vet -vettool=x .", action.CodeArgumentNotAllowed, "-vettool=x"},
		{"go run", "go run main.go", action.CodeArgumentNotAllowed, "run"},
		{"go env -w", "go env -w GOFLAGS=-x", action.CodeArgumentNotAllowed, "-w"},
		{"go output outside", "go build -o ../outside/bin .", action.CodeArgumentNotAllowed, "../outside/bin"},
		{"go output into .git", "go build -o .git/hooks/pre-commit .", action.CodeArgumentNotAllowed, ".git/hooks/pre-commit"},
		{"go profile absolute", "go test -coverprofile=/tmp/c.out .", action.CodeArgumentNotAllowed, "-coverprofile=/tmp/c.out"},
		{"go ldflags extld", "go build -ldflags=-extld=/bin/sh .", action.CodeArgumentNotAllowed, "-ldflags=-extld=/bin/sh"},
		// make
		{"make -C", "make -C ..", action.CodeArgumentNotAllowed, "-C"},
		{"make eval", "make --eval=x", action.CodeArgumentNotAllowed, "--eval=x"},
		{"make eval abbreviated", "make --ev=x", action.CodeArgumentNotAllowed, "--ev=x"},
		{"make file outside", "make -f ../outside/Makefile", action.CodeArgumentNotAllowed, "../outside/Makefile"},
		{"make attached file", "make -f/etc/passwd", action.CodeArgumentNotAllowed, "-f/etc/passwd"},
		{"make grouped attached file", "make -sf../outside/Makefile", action.CodeArgumentNotAllowed, "-sf../outside/Makefile"},
		{"make SHELL variable", "make SHELL=/bin/bash", action.CodeArgumentNotAllowed, "SHELL=/bin/bash"},
		{"make relative SHELL", "make SHELL=sh", action.CodeArgumentNotAllowed, "SHELL=sh"},
		{"make MAKEFLAGS smuggles -C", "make MAKEFLAGS=-Cx", action.CodeArgumentNotAllowed, "MAKEFLAGS=-Cx"},
		{"make MAKEFLAGS append", "make MAKEFLAGS+=--eval=x", action.CodeArgumentNotAllowed, "MAKEFLAGS+=--eval=x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := e.run(t, tt.command)
			if err == nil {
				t.Fatalf("%q ran: %v", tt.command, out)
			}
			if c := action.CodeOf(err); c != tt.code {
				t.Fatalf("%q: code %s, want %s (%v)", tt.command, c, tt.code, err)
			}
			assertNamesWord(t, err, tt.word)
			e.assertOutsideUntouched(t, out, err)
		})
	}
}

func TestPlanCommandAllows(t *testing.T) {
	e := newShEnv(t, SandboxOff, []string{"cat"}, map[string]string{"src/a.go": "package a\n"})
	tests := []struct {
		name     string
		command  string
		execArgv []string
	}{
		{"pwd", "pwd", []string{"pwd"}},
		{"ls grouped", "ls -la src", []string{"ls", "-la", "src"}},
		{"cat new file name", "cat missing.txt", []string{"cat", "missing.txt"}},
		{"git status", "git status --short", []string{"git", "--no-pager", "status", "--short"}},
		{"git diff gets no-ext-diff", "git diff HEAD~1..HEAD -- src", []string{"git", "--no-pager", "diff", "--no-ext-diff", "--no-textconv", "HEAD~1..HEAD", "--", "src"}},
		{"git log -C is copy detection", "git log -C --oneline -5", []string{"git", "--no-pager", "log", "--no-ext-diff", "--no-textconv", "-C", "--oneline", "-5"}},
		{"git global option", "git --no-pager log", []string{"git", "--no-pager", "--no-pager", "log", "--no-ext-diff", "--no-textconv"}},
		{"git branch list", "git branch --list 'feat*'", []string{"git", "--no-pager", "branch", "--list", "feat*"}},
		{"git branch contains", "git branch --contains HEAD", []string{"git", "--no-pager", "branch", "--contains", "HEAD"}},
		{"git show blob", "git show HEAD:src/a.go", []string{"git", "--no-pager", "show", "--no-ext-diff", "--no-textconv", "HEAD:src/a.go"}},
		{"go test", "go test -run TestX -count=1 ./...", []string{"go", "test", "-run", "TestX", "-count=1", "./..."}},
		{"go build output in root", "go build -o bin/app ./src", []string{"go", "build", "-o", "bin/app", "./src"}},
		{"go env read", "go env GOROOT", []string{"go", "env", "GOROOT"}},
		{"make target", "make -j2 test", []string{"make", "-j2", "test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := e.w.PlanCommand(tt.command)
			if errors.Is(err, &action.Error{Code: action.CodeNotFound}) {
				t.Skipf("%s is not installed", strings.Fields(tt.command)[0])
			}
			if err != nil {
				t.Fatalf("PlanCommand(%q): %v", tt.command, err)
			}
			if strings.Join(plan.ExecArgv, "\x00") != strings.Join(tt.execArgv, "\x00") {
				t.Fatalf("exec argv = %q, want %q", plan.ExecArgv, tt.execArgv)
			}
			if plan.Dir != e.root || !filepath.IsAbs(plan.Program) {
				t.Fatalf("dir %q program %q", plan.Dir, plan.Program)
			}
		})
	}
}

func TestRunShellShellDisabled(t *testing.T) {
	e := newShEnv(t, SandboxOff, nil, nil)
	e.w.opts.ShellEnabled = false
	// Refused before tokenizing or resolving: even garbage gets shell_disabled.
	for _, c := range []string{"pwd", "no-such-cmd ; rm -rf /", "'unterminated"} {
		_, err := e.run(t, c)
		if action.CodeOf(err) != action.CodeShellDisabled {
			t.Fatalf("%q: %v, want shell_disabled", c, err)
		}
		if _, err := e.w.PlanCommand(c); action.CodeOf(err) != action.CodeShellDisabled {
			t.Fatalf("PlanCommand(%q): %v, want shell_disabled", c, err)
		}
	}
}

func TestRunShellInput(t *testing.T) {
	e := newShEnv(t, SandboxOff, nil, nil)
	tests := []struct {
		name string
		in   map[string]any
		code action.Code
	}{
		{"missing command", map[string]any{}, action.CodeInvalidInput},
		{"command not a string", map[string]any{"command": 3}, action.CodeInvalidInput},
		{"timeout zero", map[string]any{"command": "pwd", "timeout_seconds": 0}, action.CodeInvalidInput},
		{"timeout fraction", map[string]any{"command": "pwd", "timeout_seconds": 1.5}, action.CodeInvalidInput},
		{"ok with timeout", map[string]any{"command": "pwd", "timeout_seconds": 3}, action.CodeNone},
		{"huge timeout is capped", map[string]any{"command": "pwd", "timeout_seconds": 1e15}, action.CodeNone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.w.Run(context.Background(), action.Action{Name: "workspace_run_shell", Input: tt.in})
			if c := action.CodeOf(err); c != tt.code {
				t.Fatalf("code %s, want %s (%v)", c, tt.code, err)
			}
		})
	}
}

func TestRunShellPayload(t *testing.T) {
	for _, mode := range []string{SandboxOff, SandboxBestEffort} {
		t.Run(mode, func(t *testing.T) {
			e := newShEnv(t, mode, []string{"cat"}, map[string]string{"a.txt": "hello\n"})
			out := e.mustRun(t, "pwd")
			if out["stdout"] != e.root+"\n" || out["exit_code"] != 0 || out["stderr"] != "" {
				t.Fatalf("pwd payload %v", out)
			}
			wantSandbox := SandboxNone
			if mode != SandboxOff {
				wantSandbox = SandboxFull
				for _, l := range requiredLayers {
					if _, gone := SandboxSupport().Missing[l]; gone {
						wantSandbox = SandboxPartial
					}
				}
			}
			if out["sandbox"] != wantSandbox {
				t.Fatalf("sandbox %v, want %s", out["sandbox"], wantSandbox)
			}
			if _, ok := out["duration_ms"].(float64); !ok {
				t.Fatalf("duration_ms %T", out["duration_ms"])
			}
			// A failing command ran: ok, with its exit code and stderr apart.
			out = e.mustRun(t, "cat a.txt missing.txt")
			if out["exit_code"] != 1 || out["stdout"] != "hello\n" || !strings.Contains(out["stderr"].(string), "missing.txt") {
				t.Fatalf("cat payload %v", out)
			}
			if a, ok := out["argv"].([]string); !ok || len(a) != 3 {
				t.Fatalf("argv %v", out["argv"])
			}
		})
	}
}

func TestRunShellStdinIsEmpty(t *testing.T) {
	e := newShEnv(t, SandboxBestEffort, []string{"cat"}, nil)
	start := time.Now()
	out := e.mustRun(t, "cat")
	if out["stdout"] != "" || out["exit_code"] != 0 {
		t.Fatalf("cat with no file: %v", out)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("cat waited for stdin")
	}
}

func TestRunShellOutputCap(t *testing.T) {
	e := newShEnv(t, SandboxBestEffort, []string{"cat"}, map[string]string{
		"big.txt": strings.Repeat("é", 200), // 400 bytes, 2-byte runes
	})
	e.w.opts.MaxCommandOutputBytes = 101
	out := e.mustRun(t, "cat big.txt big.txt")
	s := out["stdout"].(string)
	if out["stdout_truncated"] != true || out["stderr_truncated"] != false {
		t.Fatalf("truncation flags %v", out)
	}
	if s != strings.Repeat("é", 50) { // 101 bytes cut inside a rune: the half rune is dropped
		t.Fatalf("stdout %d bytes %q", len(s), s)
	}
}

func TestRunShellEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("HARNESS_TEST_SECRET_TOKEN", "hunter2-env-secret")
	e := newShEnv(t, SandboxBestEffort, []string{"env"}, nil)
	out := e.mustRun(t, "env")
	text := out["stdout"].(string)
	if strings.Contains(text, "hunter2-env-secret") {
		t.Fatalf("parent secret leaked: %s", text)
	}
	allowed := []string{"PATH=", "HOME=", "LANG=", "TMPDIR=", "XDG_", "GO", "GIT_", "PAGER="}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		ok := false
		for _, p := range allowed {
			ok = ok || strings.HasPrefix(line, p)
		}
		if !ok {
			t.Errorf("unexpected variable %q", line)
		}
	}
	if !strings.Contains(text, "HOME="+e.root+"\n") {
		t.Errorf("HOME is not the root: %s", text)
	}
}

func TestRunShellTimeoutKillsProcessGroup(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	// The recipe starts a background sleeper, prints a line and then
	// waits; the timeout must kill the sleeper too. Its pid inside the
	// sandbox's PID namespace means nothing here, so it is found by its
	// unusual argument.
	e := newShEnv(t, SandboxBestEffort, nil, map[string]string{
		"Makefile": "all:\n\t@sleep 299.4242 & echo started; sleep 300\n",
	})
	start := time.Now()
	out, err := e.w.Run(context.Background(), action.Action{Name: "workspace_run_shell",
		Input: map[string]any{"command": "make", "timeout_seconds": 2}})
	if action.CodeOf(err) != action.CodeTimeout {
		t.Fatalf("want timeout, got %v %v", out, err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("timeout took %s", time.Since(start))
	}
	var ae *action.Error
	errors.As(err, &ae)
	if ae.Payload["stdout"] != "started\n" {
		t.Fatalf("partial output %v", ae.Payload)
	}
	deadline := time.Now().Add(5 * time.Second)
	for pid := processWithArg("299.4242"); pid != ""; pid = processWithArg("299.4242") {
		if time.Now().After(deadline) {
			t.Fatalf("background process %s survived the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processWithArg returns the pid of a live (not zombie) process that has arg
// among its arguments, "" if there is none.
func processWithArg(arg string) string {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !slices.Contains(strings.Split(string(cmdline), "\x00"), arg) {
			continue
		}
		if processAlive(e.Name()) {
			return e.Name()
		}
	}
	return ""
}

// processAlive reports whether /proc lists pid as a live (not zombie) process.
func processAlive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestCloseExecRemovesPrivateDir(t *testing.T) {
	e := newShEnv(t, SandboxOff, nil, nil)
	e.mustRun(t, "pwd")
	dir, err := privateDir(e.root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tmp")); err != nil {
		t.Fatalf("private tmp missing after a run: %v", err)
	}
	if err := e.w.closeExec(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("private dir still there: %v", err)
	}
}
