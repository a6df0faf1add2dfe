package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/harness-runtime/harness/action"
)

// CommandPlan is what workspace_run_shell runs for one command string,
// computed without running anything. The trusted-preview flow shows it
// before a command is confirmed. Run never takes a plan from outside: it
// plans the command string again, so a plan cannot be edited into running
// something else, and files changed since the preview are checked anew.
type CommandPlan struct {
	// Command is the command string as given.
	Command string
	// Argv is the command split into words by Tokenize.
	Argv []string
	// Program is the absolute path of Argv[0], resolved once per process
	// on the service's PATH.
	Program string
	// ExecArgv is the argument vector the program receives: Argv plus the
	// options Harness adds to keep the program from running others (for
	// git: --no-pager, --no-ext-diff, --no-textconv).
	ExecArgv []string
	// Dir is the working directory: the workspace root.
	Dir string
	// Env is the complete environment of the program. Nothing of the
	// service's environment is in it except PATH's directories and LANG.
	Env []string
	// Timeout is the configured limit; a run may ask for less.
	Timeout time.Duration
	// MaxOutputBytes caps stdout and stderr, each.
	MaxOutputBytes int
	// Sandbox is SandboxFull, SandboxPartial or SandboxNone;
	// SandboxLayers lists the layers applied (SandboxLayer*),
	// SandboxMissing those best-effort mode left out, and SandboxNote says
	// why and what that gives up, or that the network is open to this
	// command by configuration.
	Sandbox        string
	SandboxLayers  []string
	SandboxMissing []string
	SandboxNote    string
	// SandboxRead and SandboxWrite list the directories (and files) the
	// program may read (and execute) and also write beneath, under Landlock.
	SandboxRead  []string
	SandboxWrite []string
	// SandboxReadOnly lists what stays read-only although it lies in the
	// root: .git and .harness (created as empty placeholders for the
	// duration of the command when absent).
	SandboxReadOnly []string
	// NoNetwork reports that the command cannot reach any network.
	NoNetwork bool

	helper  string
	policy  sandboxPolicy
	ns      nsFlags
	private string // per-root private directory (TMPDIR, caches)
}

// Preview returns the plan as JSON-ready data for a trusted preview.
func (p CommandPlan) Preview() map[string]any {
	m := map[string]any{
		"command":          p.Command,
		"argv":             p.Argv,
		"exec_argv":        p.ExecArgv,
		"program":          p.Program,
		"dir":              p.Dir,
		"timeout_seconds":  p.Timeout.Seconds(),
		"max_output_bytes": p.MaxOutputBytes,
	}
	p.sandboxFields(m)
	if len(p.SandboxRead) > 0 {
		m["sandbox_read"] = p.SandboxRead
		m["sandbox_write"] = p.SandboxWrite
	}
	if len(p.SandboxReadOnly) > 0 {
		m["sandbox_read_only"] = p.SandboxReadOnly
	}
	return m
}

// PlanCommand checks command and returns what workspace_run_shell would run,
// without running it: the words (see Tokenize), the resolved program, the
// working directory, the environment, the limits and the sandbox.
//
// The checks, in order: shell enabled (shell_disabled); tokenizer
// (argument_not_allowed for shell metacharacters, invalid_input for
// syntax); first word a bare name listed in AllowedCommands and installed
// (command_not_allowed); per-command argument rules of commandRules and
// path arguments inside the root (argument_not_allowed, with the offending
// word in the message and in Payload["word"]); program installed
// (not_found); for git, .git a plain directory (command_not_allowed);
// sandbox available when required (internal); for git, a configuration
// Harness can account for and sanitize (command_not_allowed, see planGit).
//
// A plan does not freeze the file system: a path argument checked here is
// checked again when Run plans the command anew.
func (w *Workspace) PlanCommand(command string) (CommandPlan, error) {
	if !w.opts.ShellEnabled {
		return CommandPlan{}, action.Errorf(action.CodeShellDisabled, "workspace_run_shell is disabled (shell-enabled: false)")
	}
	words, err := Tokenize(command)
	if err != nil {
		return CommandPlan{}, err
	}
	name := words[0]
	if strings.ContainsRune(name, '/') {
		e := action.Errorf(action.CodeCommandNotAllowed, "command %q is a path; name an allowed command (%s)",
			name, strings.Join(w.allowedCommands(), ", "))
		e.Payload = map[string]any{"word": name}
		return CommandPlan{}, e
	}
	if !slices.Contains(w.allowedCommands(), name) {
		e := action.Errorf(action.CodeCommandNotAllowed, "command %q is not allowed (allowed: %s)",
			name, strings.Join(w.allowedCommands(), ", "))
		e.Payload = map[string]any{"word": name}
		return CommandPlan{}, e
	}
	tail, err := argChecker{w: w, cmd: name, gitS: w.allowedGitSubcommands()}.check(words[1:])
	if err != nil {
		return CommandPlan{}, err
	}
	program, err := lookCommand(name)
	if err != nil {
		return CommandPlan{}, &action.Error{Code: action.CodeNotFound,
			Message: fmt.Sprintf("command %q is allowed but not installed on this host", name), Err: err}
	}
	if name == "git" {
		if err := w.checkGitDir(); err != nil {
			return CommandPlan{}, err
		}
	}
	execArgv := append([]string{name}, tail...)
	if name == "git" {
		execArgv = append([]string{"git", "--no-pager"}, tail...)
	}
	private, err := privateDir(w.rootPath)
	if err != nil {
		return CommandPlan{}, &action.Error{Code: action.CodeInternal, Message: "sandbox temp directory", Err: err}
	}
	plan := CommandPlan{
		Command:        command,
		Argv:           words,
		Program:        program,
		ExecArgv:       execArgv,
		Dir:            w.rootPath,
		Timeout:        w.opts.CommandTimeout,
		MaxOutputBytes: w.opts.MaxCommandOutputBytes,
		private:        private,
	}
	plan.Env = w.commandEnv(private, nil)
	if err := w.planSandbox(&plan); err != nil {
		return CommandPlan{}, err
	}
	if err := w.planGit(&plan); err != nil {
		return CommandPlan{}, err
	}
	return plan, nil
}

// runShell is workspace_run_shell: input command (string, required) and
// timeout_seconds (integer >= 1, capped at the configured timeout).
func (w *Workspace) runShell(ctx context.Context, in map[string]any) (map[string]any, error) {
	if !w.opts.ShellEnabled {
		return nil, action.Errorf(action.CodeShellDisabled, "workspace_run_shell is disabled (shell-enabled: false)")
	}
	command, ok, err := strArg(in, "command")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, action.Errorf(action.CodeInvalidInput, "command is required")
	}
	secs, err := intArg(in, "timeout_seconds", 0)
	if err != nil {
		return nil, err
	}
	if in["timeout_seconds"] != nil && secs < 1 {
		return nil, action.Errorf(action.CodeInvalidInput, "timeout_seconds: want an integer >= 1")
	}
	plan, err := w.PlanCommand(command)
	if err != nil {
		return nil, err
	}
	if secs >= 1 && secs < int64(plan.Timeout/time.Second) {
		plan.Timeout = time.Duration(secs) * time.Second
	}
	return w.runPlan(ctx, plan)
}

// runPlan runs a plan made by PlanCommand on this workspace. A command that
// ran is a success whatever its exit code; the payload holds argv,
// exit_code, stdout, stderr (each capped at MaxOutputBytes, with
// stdout_truncated and stderr_truncated), duration_ms, sandbox (full,
// partial or none), no_network, sandbox_layers (the layers applied),
// sandbox_missing (those best-effort mode left out) and, when set,
// sandbox_note. A command still running at the timeout is killed with
// everything it started and reported as code timeout with the partial
// output as payload. A command whose helper fails to set up the sandbox
// never runs: code internal.
func (w *Workspace) runPlan(ctx context.Context, plan CommandPlan) (map[string]any, error) {
	if plan.Dir != w.rootPath || plan.Program == "" {
		return nil, action.Errorf(action.CodeInternal, "command plan was not made by this workspace")
	}
	var before nestedGit
	watched := false
	if plan.Sandbox != SandboxNone {
		var err error
		if before, watched, err = w.findNestedGit(ctx); err != nil {
			return nil, &action.Error{Code: action.CodeInternal, Message: "looking for nested repositories", Err: err}
		}
		plan.bindNestedGit(w.rootPath, before)
	}
	res, err := w.execute(ctx, plan)
	if err != nil {
		return nil, err
	}
	var removed []string
	if watched {
		// Nothing the command started is left running: what it planted
		// stays planted unless removed now.
		after, ok, ferr := w.findNestedGit(context.WithoutCancel(ctx))
		if ferr == nil && ok {
			removed, ferr = w.removePlanted(before, after)
		}
		if ferr != nil {
			return nil, &action.Error{Code: action.CodeInternal, Message: "removing a git repository the command created", Err: ferr}
		}
	}
	payload := map[string]any{
		"argv":             plan.Argv,
		"exit_code":        res.exitCode,
		"stdout":           res.stdout.String(),
		"stderr":           res.stderr.String(),
		"stdout_truncated": res.stdout.truncated,
		"stderr_truncated": res.stderr.truncated,
		"duration_ms":      float64(res.duration.Microseconds()) / 1000,
	}
	plan.sandboxFields(payload)
	if len(removed) > 0 {
		payload["removed"] = removed
		payload["removed_note"] = "commands may not create or replace git repositories (.git) below the root; removed what this one made"
	}
	if res.timedOut {
		return nil, &action.Error{
			Code:    action.CodeTimeout,
			Message: fmt.Sprintf("command timed out after %s and was killed with its process group", plan.Timeout),
			Payload: payload,
		}
	}
	return payload, nil
}

type execResult struct {
	stdout, stderr *cappedBuffer
	exitCode       int
	duration       time.Duration
	timedOut       bool
}

// execute starts the plan's program (through the sandbox helper, in the
// plan's namespaces, unless the plan's sandbox is none) in its own process
// group, with stdin on /dev/null, and waits for it or for the timeout.
// When it returns, every process the command started has ended (with the
// PID namespace; without it, those that stayed in the process group).
func (w *Workspace) execute(ctx context.Context, plan CommandPlan) (execResult, error) {
	res := execResult{
		stdout: &cappedBuffer{max: plan.MaxOutputBytes},
		stderr: &cappedBuffer{max: plan.MaxOutputBytes},
	}
	for _, d := range []string{"tmp", "gocache", "config"} {
		if err := os.MkdirAll(filepath.Join(plan.private, d), 0o700); err != nil {
			return res, &action.Error{Code: action.CodeInternal, Message: "sandbox temp directory", Err: err}
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, plan.Timeout)
	defer cancel()

	cmd := exec.CommandContext(runCtx, plan.Program)
	cmd.Args = plan.ExecArgv
	var status *os.File
	if plan.Sandbox != SandboxNone {
		r, wr, err := os.Pipe()
		if err != nil {
			return res, &action.Error{Code: action.CodeInternal, Message: "sandbox status pipe", Err: err}
		}
		status = r
		defer status.Close()
		// The helper gets wr as descriptor 3; once it has started, only the
		// helper holds it, and EOF on status means it ran the program.
		defer wr.Close()
		launch, err := w.launchSandbox(plan, wr)
		if err != nil {
			return res, err
		}
		defer launch.release()
		cmd = exec.CommandContext(runCtx, launch.path)
		cmd.Args = launch.args
		cmd.ExtraFiles = launch.files
		cmd.SysProcAttr = launch.sys
	} else {
		setProcessGroup(cmd)
	}
	cmd.Dir = plan.Dir
	cmd.Env = plan.Env
	cmd.Stdin = nil // /dev/null
	cmd.Stdout = res.stdout
	cmd.Stderr = res.stderr
	cmd.Cancel = func() error { return killProcessGroup(cmd.Process.Pid) }
	// Grandchildren that keep stdout open must not hold Wait forever.
	cmd.WaitDelay = 500 * time.Millisecond

	start := time.Now()
	err := cmd.Start()
	if len(cmd.ExtraFiles) > 0 {
		cmd.ExtraFiles[0].Close()
	}
	if err != nil {
		return res, &action.Error{Code: action.CodeInternal, Message: fmt.Sprintf("start %s", plan.Argv[0]), Err: err}
	}
	var helperMsg []byte
	var readDone sync.WaitGroup
	if status != nil {
		readDone.Go(func() { helperMsg, _ = io.ReadAll(io.LimitReader(status, 4096)) })
	}
	waitErr := cmd.Wait()
	res.duration = time.Since(start)
	// Whatever the command left behind in its group goes with it (in a PID
	// namespace the kernel has ended it all already, and the group's
	// number may be anyone's by now).
	if !plan.ns.pid || plan.Sandbox == SandboxNone {
		_ = killProcessGroup(cmd.Process.Pid)
	}
	readDone.Wait()

	if status != nil {
		if len(helperMsg) == 0 || helperMsg[0] != helperStarted {
			return res, action.Errorf(action.CodeInternal,
				"the command did not run: the sandbox helper %s did not start; a program that runs commands must hand the %q sub-command to workspace.SandboxMain at the start of main, or name the harness-sandbox binary as its helper",
				plan.helper, SandboxCommand)
		}
		helperMsg = helperMsg[1:]
	}
	if len(helperMsg) > 0 {
		return res, action.Errorf(action.CodeInternal, "the command did not run: %s", helperMsg)
	}
	res.exitCode = cmd.ProcessState.ExitCode()
	switch {
	case ctx.Err() != nil:
		return res, &action.Error{Code: action.CodeTimeout, Message: "command canceled: " + ctx.Err().Error(), Err: ctx.Err()}
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		res.timedOut = true
	case waitErr != nil && !errors.As(waitErr, new(*exec.ExitError)) && !errors.Is(waitErr, exec.ErrWaitDelay):
		return res, &action.Error{Code: action.CodeInternal, Message: fmt.Sprintf("wait %s", plan.Argv[0]), Err: waitErr}
	}
	return res, nil
}

// cappedBuffer keeps the first max bytes written to it and counts the
// rest as truncated. It never fails a write, so the program is never
// stopped by a full pipe.
type cappedBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	room := b.max - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	b.truncated = true
	return len(p), nil
}

// String returns the captured bytes as valid UTF-8: a rune cut by the cap
// is dropped, other invalid bytes become U+FFFD.
func (b *cappedBuffer) String() string {
	out := b.buf
	if b.truncated {
		for i := 0; i < utf8.UTFMax && len(out) > 0; i++ {
			if r, size := utf8.DecodeLastRune(out); r != utf8.RuneError || size != 1 {
				break
			}
			out = out[:len(out)-1]
		}
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

func (w *Workspace) allowedCommands() []string {
	if w.opts.AllowedCommands == nil {
		return DefaultOptions().AllowedCommands
	}
	return w.opts.AllowedCommands
}

func (w *Workspace) allowedGitSubcommands() []string {
	if w.opts.AllowedGitSubcommands == nil {
		return DefaultOptions().AllowedGitSubcommands
	}
	return w.opts.AllowedGitSubcommands
}

// checkGitDir refuses git when .git is something other than a directory
// inside the root: a gitdir file or a symlink can point git at a repository
// (and its configuration) elsewhere.
func (w *Workspace) checkGitDir() error {
	fi, err := w.root.Lstat(".git")
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !fi.IsDir() {
		e := action.Errorf(action.CodeCommandNotAllowed, "git: .git in the workspace is not a plain directory; git would read a repository outside the root")
		e.Payload = map[string]any{"word": "git"}
		return e
	}
	return nil
}

// commandEnv is the whole environment of a command: nothing is inherited
// from the service except the directories of PATH that hold the allowed
// commands, and LANG.
func (w *Workspace) commandEnv(private string, gitExtra [][2]string) []string {
	lang := os.Getenv("LANG")
	if lang == "" || strings.ContainsAny(lang, "\x00") {
		lang = "C.UTF-8"
	}
	env := []string{
		"PATH=" + strings.Join(w.commandPATH(), string(os.PathListSeparator)),
		"HOME=" + w.rootPath,
		"LANG=" + lang,
		"TMPDIR=" + filepath.Join(private, "tmp"),
		"XDG_CONFIG_HOME=" + filepath.Join(private, "config"),
		"XDG_CACHE_HOME=" + filepath.Join(private, "cache"),
		"GOCACHE=" + filepath.Join(private, "gocache"),
		"GOMODCACHE=" + filepath.Join(private, "gomodcache"),
		"GOPATH=" + filepath.Join(private, "gopath"),
		"GOENV=off",
		"GOTOOLCHAIN=local",
		"GOPROXY=off",
		"GOTELEMETRY=off",
		// VCS stamping would run git on whatever repository encloses the
		// root, which the git environment below deliberately hides.
		"GOFLAGS=-buildvcs=false",
	}
	return append(env, gitEnv(w.rootPath, gitExtra)...)
}

// commandPATH lists the directories of the allowed commands that are
// installed, then the usual system directories.
func (w *Workspace) commandPATH() []string {
	var dirs []string
	for _, name := range w.allowedCommands() {
		if p, err := lookCommand(name); err == nil {
			dirs = append(dirs, filepath.Dir(p))
		}
	}
	dirs = append(dirs, "/usr/local/bin", "/usr/bin", "/bin")
	out := dirs[:0]
	for _, d := range dirs {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

var (
	lookMu    sync.Mutex
	lookCache = map[string]lookResult{}
)

type lookResult struct {
	path string
	err  error
}

// lookCommand resolves a bare command name on the service's PATH once per
// process (the first lookup wins, also when it failed) and returns an
// absolute path with symlinks resolved.
func lookCommand(name string) (string, error) {
	lookMu.Lock()
	defer lookMu.Unlock()
	if r, ok := lookCache[name]; ok {
		return r.path, r.err
	}
	p, err := exec.LookPath(name)
	if err == nil {
		p, err = filepath.Abs(p)
	}
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	lookCache[name] = lookResult{p, err}
	return p, err
}

var helperCache sync.Map // configured HelperPath -> lookResult

// resolveHelper resolves the sandbox helper once per configured path: the
// configured one, or the running executable.
func resolveHelper(configured string) (string, error) {
	if r, ok := helperCache.Load(configured); ok {
		return r.(lookResult).path, r.(lookResult).err
	}
	p := configured
	var err error
	if p == "" {
		p, err = os.Executable()
	}
	if err == nil {
		p, err = filepath.Abs(p)
	}
	if err == nil {
		p, err = filepath.EvalSymlinks(p)
	}
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(p); err == nil && (fi.IsDir() || fi.Mode().Perm()&0o111 == 0) {
			err = fmt.Errorf("%s is not an executable file", p)
		}
	}
	r, _ := helperCache.LoadOrStore(configured, lookResult{p, err})
	return r.(lookResult).path, r.(lookResult).err
}

// privateBase is this process's directory of private directories, made
// in os.TempDir by the first command and removed when the last open
// workspace closes, so that nothing is left in the shared temporary
// directory. A later command makes a new one, under a new random name:
// a name once used is never made again, so that nobody can plant
// something at it.
var privateBase struct {
	sync.Mutex
	dir string
}

func privateBaseDir() (string, error) {
	privateBase.Lock()
	defer privateBase.Unlock()
	if privateBase.dir == "" {
		d, err := os.MkdirTemp("", "harness-exec-")
		if err != nil {
			return "", err
		}
		privateBase.dir = d
	}
	return privateBase.dir, nil
}

// removePrivateBase removes this process's directory of private
// directories, if there is one.
func removePrivateBase() error {
	privateBase.Lock()
	defer privateBase.Unlock()
	if privateBase.dir == "" {
		return nil
	}
	err := os.RemoveAll(privateBase.dir)
	privateBase.dir = ""
	return err
}

// privateDir returns the private directory of a workspace root: TMPDIR and
// the build caches of its commands live there, writable inside the
// sandbox, shared by the commands of that root only. It lives under the
// process's private base in os.TempDir, made when first needed.
func privateDir(root string) (string, error) {
	base, err := privateBaseDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, hex.EncodeToString(sum[:8])), nil
}

// madePrivateDir is privateDir when the base exists, "" when no command of
// this process ever needed one (nothing to remove).
func madePrivateDir(root string) string {
	privateBase.Lock()
	base := privateBase.dir
	privateBase.Unlock()
	if base == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(base, hex.EncodeToString(sum[:8]))
}

// closeExec removes the private directory (TMPDIR, build caches) of this
// workspace's commands. Workspace.Close should call it; it is safe to call
// when no command ever ran.
func (w *Workspace) closeExec() error {
	dir := madePrivateDir(w.rootPath)
	if dir == "" {
		return nil // no command ever ran: nothing was made
	}
	if err := errors.Join(os.RemoveAll(dir), os.RemoveAll(dir+gitConfigSuffix)); err != nil {
		return fmt.Errorf("remove command temp directory: %w", err)
	}
	// The last workspace of the process takes the base with it; holding
	// the table of open roots keeps a new workspace from opening meanwhile.
	openRoots.Lock()
	defer openRoots.Unlock()
	if len(openRoots.n) == 0 {
		return removePrivateBase()
	}
	return nil
}
