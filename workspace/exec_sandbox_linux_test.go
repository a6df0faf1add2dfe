//go:build linux

package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

func requireLandlock(t testing.TB) {
	t.Helper()
	if landlockABI() == 0 {
		t.Skip("this kernel has no Landlock")
	}
}

// TestSandboxBlocksWritesOutsideRoot runs code that the workspace itself
// asks to run (a Makefile recipe: allowed, since make is allowed) and that
// tries to write and read outside the root. Under Landlock it cannot; with
// the sandbox off the same recipe succeeds, which shows that the sandbox,
// not the argument rules, is what stops it.
func TestSandboxBlocksWritesOutsideRoot(t *testing.T) {
	requireLandlock(t)
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	recipe := "all:\n" +
		"\t-touch ../outside/pwned\n" +
		"\t-cat ../outside/secret.txt\n" +
		"\t-cp Makefile /tmp/harness-sandbox-test-$$$$\n" +
		"\ttouch inside.txt\n"
	tests := []struct {
		name      string
		mode      string
		confined  bool
		wantNoted string
	}{
		{"landlock", SandboxBestEffort, true, ""},
		{"required", SandboxRequired, true, ""},
		{"control: sandbox off", SandboxOff, false, "off by configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newShEnv(t, tt.mode, nil, map[string]string{"Makefile": recipe})
			out := e.mustRun(t, "make")
			if _, err := os.Stat(filepath.Join(e.root, "inside.txt")); err != nil {
				t.Fatalf("write inside the root failed: %v\n%v", err, out)
			}
			_, pwnErr := os.Stat(filepath.Join(e.outside, "pwned"))
			if tt.confined {
				if out["sandbox"] != SandboxFull {
					t.Fatalf("sandbox = %v", out["sandbox"])
				}
				if pwnErr == nil {
					t.Fatalf("the recipe wrote outside the root under Landlock")
				}
				if !strings.Contains(out["stderr"].(string), "Permission denied") {
					t.Errorf("stderr does not show the denial: %q", out["stderr"])
				}
				e.assertOutsideUntouched(t, out, nil)
				return
			}
			if pwnErr != nil || !strings.Contains(out["stdout"].(string), shSentinel) {
				t.Fatalf("control: without the sandbox the recipe should reach outside: %v %v", pwnErr, out)
			}
			if !strings.Contains(out["sandbox_note"].(string), tt.wantNoted) {
				t.Fatalf("sandbox_note %q", out["sandbox_note"])
			}
		})
	}
}

// TestSandboxCatchesSwapAfterCheck: the argument rules check a path when
// the command is planned; if a directory is swapped for a symlink leaving
// the root before the program runs, Landlock still refuses the write.
func TestSandboxCatchesSwapAfterCheck(t *testing.T) {
	requireLandlock(t)
	e := newShEnv(t, SandboxBestEffort, []string{"touch"}, map[string]string{"dir/keep": ""})
	plan, err := e.w.PlanCommand("touch dir/pwned")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(e.root, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(e.outside, filepath.Join(e.root, "dir")); err != nil {
		t.Fatal(err)
	}
	e.watch.drain()
	out, err := e.w.runPlan(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if out["exit_code"] == 0 {
		t.Fatalf("touch through the swapped symlink succeeded: %v", out)
	}
	if _, err := os.Stat(filepath.Join(e.outside, "pwned")); err == nil {
		t.Fatal("file created outside the root")
	}
	// Planning again refuses the word outright.
	if _, err := e.w.PlanCommand("touch dir/pwned"); action.CodeOf(err) != action.CodeArgumentNotAllowed {
		t.Fatalf("replan: %v", err)
	}
}

// TestSandboxDeniesNetwork: no TCP connect from inside the sandbox.
func TestSandboxDeniesNetwork(t *testing.T) {
	requireLandlock(t)
	if landlockABI() < 4 {
		t.Skip("Landlock ABI < 4 has no network rules")
	}
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to open a socket with")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	recipe := "all:\n\t@/usr/bin/python3 -c \"import socket; socket.create_connection(('127.0.0.1', " +
		itoaPort(port) + "), timeout=3); print('connected')\"\n"
	for _, tt := range []struct {
		mode      string
		connected bool
	}{{SandboxBestEffort, false}, {SandboxOff, true}} {
		t.Run(tt.mode, func(t *testing.T) {
			e := newShEnv(t, tt.mode, nil, map[string]string{"Makefile": recipe})
			out := e.mustRun(t, "make")
			got := strings.Contains(out["stdout"].(string), "connected")
			if got != tt.connected {
				t.Fatalf("connected = %v, want %v: %v", got, tt.connected, out)
			}
		})
	}
}

func itoaPort(p int) string {
	const digits = "0123456789"
	if p == 0 {
		return "0"
	}
	var b []byte
	for ; p > 0; p /= 10 {
		b = append([]byte{digits[p%10]}, b...)
	}
	return string(b)
}

func TestSandboxRequiredFailsClosed(t *testing.T) {
	e := newShEnv(t, SandboxRequired, nil, nil)
	e.w.opts.HelperPath = filepath.Join(e.root, "no-such-helper")
	_, err := e.run(t, "pwd")
	if action.CodeOf(err) != action.CodeInternal || !strings.Contains(err.Error(), "sandbox required") {
		t.Fatalf("want internal sandbox error, got %v", err)
	}
	// best-effort runs, unconfined, and says so.
	e.w.opts.Sandbox = SandboxBestEffort
	out := e.mustRun(t, "pwd")
	if out["sandbox"] != SandboxNone || !strings.Contains(out["sandbox_note"].(string), "helper") {
		t.Fatalf("best-effort without helper: %v", out)
	}
}

// TestSandboxHelperFailureNeverRunsUnconfined: when the helper cannot set
// up Landlock it reports through the status pipe and the program never
// starts.
func TestSandboxHelperFailureNeverRunsUnconfined(t *testing.T) {
	requireLandlock(t)
	e := newShEnv(t, SandboxRequired, []string{"touch"}, nil)
	plan, err := e.w.PlanCommand("touch ran.txt")
	if err != nil {
		t.Fatal(err)
	}
	plan.policy.WriteDirs = append(plan.policy.WriteDirs, filepath.Join(e.root, "missing-dir"))
	_, err = e.w.runPlan(context.Background(), plan)
	if action.CodeOf(err) != action.CodeInternal || !strings.Contains(err.Error(), "did not run") {
		t.Fatalf("want helper failure, got %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.root, "ran.txt")); err == nil {
		t.Fatal("the program ran although the sandbox failed")
	}
}

// TestSandboxRefusesDeviceNodes: even a command running as root cannot
// create a device node inside the root (through which it could read a
// disk) nor open a disk under /dev.
func TestSandboxRefusesDeviceNodes(t *testing.T) {
	requireLandlock(t)
	if os.Geteuid() != 0 {
		t.Skip("only root can make device nodes at all")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	e := newShEnv(t, SandboxRequired, nil, map[string]string{
		"Makefile": "all:\n\t-mknod blk b 7 0\n\t-mknod chr c 1 3\n\t-head -c1 /dev/loop0 /dev/mem\n\ttouch done\n",
	})
	out := e.mustRun(t, "make")
	if _, err := os.Stat(filepath.Join(e.root, "done")); err != nil {
		t.Fatalf("recipe did not finish: %v", out)
	}
	for _, n := range []string{"blk", "chr"} {
		if _, err := os.Lstat(filepath.Join(e.root, n)); err == nil {
			t.Errorf("device node %s was created inside the sandbox", n)
		}
	}
	if strings.Count(out["stderr"].(string), "Permission denied") < 3 {
		t.Errorf("stderr: %q", out["stderr"])
	}
}

// TestSandboxDeniesUnixSockets: a command cannot reach a Unix socket
// outside the root (Landlock ABI 9+ rules, seccomp before that).
func TestSandboxDeniesUnixSockets(t *testing.T) {
	requireLandlock(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 to open a socket with")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	for _, tt := range []struct {
		mode      string
		connected bool
	}{{SandboxRequired, false}, {SandboxOff, true}} {
		t.Run(tt.mode, func(t *testing.T) {
			e := newShEnv(t, tt.mode, nil, nil)
			sock := filepath.Join(e.outside, "service.sock")
			ln, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					c.Close()
				}
			}()
			recipe := "all:\n\t@/usr/bin/python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('" +
				sock + "'); print('connected')\"\n"
			if err := os.WriteFile(filepath.Join(e.root, "Makefile"), []byte(recipe), 0o644); err != nil {
				t.Fatal(err)
			}
			out := e.mustRun(t, "make")
			if got := strings.Contains(out["stdout"].(string), "connected"); got != tt.connected {
				t.Fatalf("connected = %v, want %v: %v", got, tt.connected, out)
			}
		})
	}
}

// requireFullSandbox skips when this host lacks a layer of the sandbox
// (the degraded modes have their own tests, with layers pretended missing).
func requireFullSandbox(t testing.TB) {
	t.Helper()
	if missing := SandboxSupport().Missing; len(missing) > 0 {
		for _, l := range requiredLayers {
			if why, ok := missing[l]; ok {
				t.Skipf("this host lacks the %s sandbox layer: %s", l, why)
			}
		}
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
}

// outputText is everything a command printed, and the error, as one string.
func outputText(out map[string]any, err error) string {
	var b strings.Builder
	for _, k := range []string{"stdout", "stderr", "sandbox_note"} {
		if s, ok := out[k].(string); ok {
			b.WriteString(s)
		}
	}
	if err != nil {
		b.WriteString(err.Error())
	}
	return b.String()
}

// TestSandboxHidesOtherProcesses: a recipe cannot read the environment or
// the command line of the service (the test process, with a secret in its
// environment) nor of any other process, by pid, by glob or through its
// parent; /proc lists only the command's own processes. With the sandbox
// off the same recipe reads the secret, which shows the recipe would.
func TestSandboxHidesOtherProcesses(t *testing.T) {
	requireFullSandbox(t)
	secret := fmt.Sprintf("harness-env-sentinel-%d", time.Now().UnixNano())
	t.Setenv("HARNESS_SANDBOX_TEST_SECRET", secret)
	argSecret := secret + "-argv"
	other := exec.Command("sh", "-c", "sleep 30", argSecret)
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()
	self, ppid := os.Getpid(), os.Getppid()
	// Only what matches the sentinel is printed, so the output cap cannot
	// hide a leak.
	grep := " | grep -a -o 'harness-env-sentinel[-0-9a-z]*'"
	recipe := fmt.Sprintf("all:\n"+
		"\t@echo PROCS; ls /proc; echo END\n"+
		"\t-@cat /proc/%[1]d/environ /proc/%[1]d/cmdline /proc/%[2]d/environ /proc/%[3]d/cmdline"+grep+"\n"+
		"\t-@cat /proc/*/environ /proc/*/cmdline"+grep+"\n"+
		"\t-@cat /proc/$$PPID/environ /proc/1/environ /proc/1/cmdline"+grep+"\n"+
		"\t-@sh -c 'for p in /proc/[0-9]*; do cat $$p/environ $$p/cmdline; done'"+grep+"\n"+
		"\t-@head -c 200 /proc/%[1]d/mem /proc/%[1]d/maps\n", self, ppid, other.Process.Pid)
	for _, tt := range []struct {
		mode   string
		hidden bool
	}{{SandboxRequired, true}, {SandboxOff, false}} {
		t.Run(tt.mode, func(t *testing.T) {
			e := newShEnv(t, tt.mode, nil, map[string]string{"Makefile": recipe})
			out, err := e.run(t, "make")
			if err != nil {
				t.Fatal(err)
			}
			text := outputText(out, err)
			leaked := strings.Contains(text, secret)
			if !tt.hidden {
				if !leaked {
					t.Fatalf("control: without the sandbox the recipe should read the service's environment:\n%s", text)
				}
				return
			}
			if leaked {
				t.Fatalf("a secret of another process reached the command's output:\n%s", text)
			}
			stdout := out["stdout"].(string)
			_, procs, _ := strings.Cut(stdout, "PROCS\n")
			procs, _, _ = strings.Cut(procs, "END\n")
			var pids []int
			for _, name := range strings.Fields(procs) {
				if n, err := strconv.Atoi(name); err == nil {
					pids = append(pids, n)
				}
			}
			// The helper (1), make, its shell and ls.
			if len(pids) == 0 || len(pids) > 6 || slices.Contains(pids, self) || slices.Max(pids) > 50 {
				t.Fatalf("/proc lists processes other than the command's: %v", pids)
			}
		})
	}
}

// treeState records every path beneath dir (mode, size, content hash or
// link target), to tell whether anything there changed.
func treeState(t testing.TB, dir string) map[string]string {
	t.Helper()
	state := map[string]string{}
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == dir {
				state["."] = "absent"
				return nil
			}
			state[p] = "error " + err.Error()
			return nil
		}
		v := fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			v += " -> " + target
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			v += " " + hex.EncodeToString(sum[:])
		}
		state[p] = v
		return nil
	})
	return state
}

// TestSandboxProtectsGitAndHarness runs recipes that try every way we know
// to write beneath .git/ or .harness/ of the root, or to create them when
// they are absent: direct writes, appends, truncation, chmod, removal,
// renames away and over, symlinks, hard links, copies, remounting, a nested
// user namespace to unmount, git init. None may change anything there, and
// an absent .git or .harness is absent again afterwards. The recipe itself
// runs to the end. With the sandbox off the first attack succeeds.
func TestSandboxProtectsGitAndHarness(t *testing.T) {
	requireFullSandbox(t)
	present := map[string]string{
		".git/HEAD":                    "ref: refs/heads/main\n",
		".git/config":                  "[core]\n\trepositoryformatversion = 0\n",
		".git/hooks/pre-commit.sample": "#!/bin/sh\n",
		".git/refs/heads/.keep":        "",
		".harness/config.yaml":         "harness: {}\n",
		".harness/keys/.keep":          "",
		"src/main.go":                  "package main\n",
		"evil/hooks/pre-commit":        "#!/bin/sh\necho pwned\n",
		"evil/config":                  "[core]\n\tfsmonitor = ./pwn\n",
	}
	tests := []struct {
		name    string
		git     bool // .git and .harness exist
		recipe  []string
		control bool // with the sandbox off, the attack works
	}{
		{"write hook", true, []string{"echo evil > .git/hooks/pre-commit", "chmod +x .git/hooks/pre-commit"}, true},
		{"append config", true, []string{"printf '[core]\\n\\tfsmonitor = ./pwn\\n' >> .git/config"}, false},
		{"truncate config", true, []string{": > .git/config", "truncate -s0 .git/HEAD"}, false},
		{"chmod and touch", true, []string{"chmod 777 .git .git/config", "touch .git/config .git/new"}, false},
		{"remove", true, []string{"rm -rf .git .harness", "rmdir .git/hooks"}, false},
		{"rename away and recreate", true, []string{"mv .git .git-away", "mv .harness .harness-away",
			"mkdir -p .git/hooks", "echo evil > .git/hooks/pre-commit"}, false},
		{"rename over", true, []string{"mv -T evil .git", "mv -T evil/hooks .git/hooks"}, false},
		{"through a symlink", true, []string{"ln -s .git/hooks hooks-link", "echo evil > hooks-link/pre-commit",
			"ln -s .harness h", "echo evil > h/config.yaml"}, false},
		{"through a hard link", true, []string{"ln .git/config cfg-link", "echo evil >> cfg-link",
			"ln .harness/config.yaml hcfg", "echo evil >> hcfg"}, false},
		{"copy in", true, []string{"cp evil/hooks/pre-commit .git/hooks/post-checkout", "cp -r evil/hooks .git/"}, false},
		{"write harness", true, []string{"echo evil > .harness/config.yaml", "mkdir .harness/plugins"}, false},
		{"remount", true, []string{"mount -o remount,rw,bind .git", "umount -l .git", "echo evil > .git/hooks/pre-commit"}, false},
		{"nested user namespace", true, []string{"unshare -rm sh -c 'umount -l .git; echo evil > .git/hooks/pre-commit'"}, false},
		{"mkdir -p when absent", false, []string{"mkdir -p .git/hooks", "echo evil > .git/hooks/pre-commit",
			"mkdir -p .harness", "echo x > .harness/config.yaml"}, false},
		{"rename into place when absent", false, []string{"mv evil .git", "cp -r evil .harness"}, false},
		{"symlink when absent", false, []string{"ln -s evil .git", "ln -s evil .harness"}, false},
		{"replace the placeholder", false, []string{"rmdir .git", "mv .git x", "chmod 700 .git", "mkdir .git/hooks"}, false},
		{"git init when absent", false, []string{"git init -q .", "git init -q --bare .git"}, false},
	}
	run := func(t *testing.T, mode string, git bool, recipe []string) (*shEnv, map[string]string, map[string]any) {
		files := map[string]string{}
		for p, c := range present {
			if git || !(strings.HasPrefix(p, ".git/") || strings.HasPrefix(p, ".harness/")) {
				files[p] = c
			}
		}
		mk := "all:\n"
		for _, line := range recipe {
			mk += "\t-" + line + "\n"
		}
		files["Makefile"] = mk + "\ttouch done\n"
		e := newShEnv(t, mode, nil, files)
		before := map[string]string{}
		for _, d := range []string{".git", ".harness"} {
			maps.Copy(before, treeState(t, filepath.Join(e.root, d)))
		}
		out := e.mustRun(t, "make")
		if _, err := os.Stat(filepath.Join(e.root, "done")); err != nil {
			t.Fatalf("the recipe did not run to the end: %v", out)
		}
		return e, before, out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, before, out := run(t, SandboxRequired, tt.git, tt.recipe)
			after := map[string]string{}
			for _, d := range []string{".git", ".harness"} {
				maps.Copy(after, treeState(t, filepath.Join(e.root, d)))
			}
			if !maps.Equal(before, after) {
				t.Fatalf("the command changed .git or .harness:\nbefore %v\nafter  %v\n%v", before, after, out)
			}
			if !tt.git {
				for _, d := range []string{".git", ".harness"} {
					if _, err := os.Lstat(filepath.Join(e.root, d)); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("%s exists after the command: %v", d, err)
					}
				}
			}
			if tt.control {
				e, before, _ := run(t, SandboxOff, tt.git, tt.recipe)
				if maps.Equal(before, treeState(t, filepath.Join(e.root, ".git"))) {
					t.Fatal("control: without the sandbox the recipe should change .git")
				}
			}
		})
	}
}

// TestSandboxPreviewSaysWhatIsReadOnly: the plan names .git and .harness
// as read-only, and every layer applied.
func TestSandboxPreviewSaysWhatIsReadOnly(t *testing.T) {
	requireFullSandbox(t)
	e := newShEnv(t, SandboxRequired, nil, nil)
	plan, err := e.w.PlanCommand("make")
	if err != nil {
		t.Fatal(err)
	}
	pv := plan.Preview()
	if ro := pv["sandbox_read_only"].([]string); !slices.Contains(ro, filepath.Join(e.root, ".git")) || !slices.Contains(ro, filepath.Join(e.root, ".harness")) {
		t.Fatalf("sandbox_read_only %v", ro)
	}
	want := []string{SandboxLayerLandlock, SandboxLayerPIDNS, SandboxLayerMountNS, SandboxLayerNetNS, SandboxLayerSeccomp, SandboxLayerNoCaps}
	for _, l := range want {
		if !slices.Contains(pv["sandbox_layers"].([]string), l) {
			t.Fatalf("sandbox_layers %v lacks %s", pv["sandbox_layers"], l)
		}
	}
	if pv["sandbox"] != SandboxFull || pv["no_network"] != true {
		t.Fatalf("preview %v", pv)
	}
	if slices.Contains(pv["sandbox_read"].([]string), "/etc") {
		t.Fatalf("/etc is readable as a whole: %v", pv["sandbox_read"])
	}
	// Each path is listed once, in one list: a write grant implies read.
	seen := map[string]string{}
	for _, list := range []string{"sandbox_read", "sandbox_write", "sandbox_read_only"} {
		for _, p := range pv[list].([]string) {
			if prev, dup := seen[p]; dup {
				t.Errorf("%s is listed in %s and again in %s", p, prev, list)
			}
			seen[p] = list
		}
	}
}

// TestSandboxRefusesUnprotectableGitDir: a .git (or .harness) that is a
// symlink could be replaced by the command, and a .git that points git at
// a directory elsewhere in the root leaves that directory writable, so no
// command runs; a .git file pointing outside the root is fine and stays as
// it is.
func TestSandboxRefusesUnprotectableGitDir(t *testing.T) {
	requireFullSandbox(t)
	tests := []struct {
		name  string
		setup func(e *shEnv) error
		ok    bool
	}{
		{".git symlink", func(e *shEnv) error { return os.Symlink("real", filepath.Join(e.root, ".git")) }, false},
		{".harness symlink", func(e *shEnv) error { return os.Symlink(e.outside, filepath.Join(e.root, ".harness")) }, false},
		{"gitdir inside the root", func(e *shEnv) error {
			return os.WriteFile(filepath.Join(e.root, ".git"), []byte("gitdir: real\n"), 0o644)
		}, false},
		{"commondir inside the root", func(e *shEnv) error {
			return os.WriteFile(filepath.Join(e.root, ".git", "commondir"), []byte("../real\n"), 0o644)
		}, false},
		{"gitdir outside the root", func(e *shEnv) error {
			return os.WriteFile(filepath.Join(e.root, ".git"), []byte("gitdir: "+e.outside+"\n"), 0o644)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newShEnv(t, SandboxRequired, nil, map[string]string{
				"real/hooks/.keep": "", ".git/HEAD": "x", "Makefile": "all:\n\t-echo 'gitdir: real' > .git\n\ttouch done\n"})
			if tt.name != "commondir inside the root" {
				os.RemoveAll(filepath.Join(e.root, ".git"))
			}
			if err := tt.setup(e); err != nil {
				t.Fatal(err)
			}
			before := treeState(t, filepath.Join(e.root, ".git"))
			_, planErr := e.w.PlanCommand("make")
			out, err := e.run(t, "make")
			if !tt.ok {
				if strings.Contains(tt.name, "symlink") && action.CodeOf(planErr) != action.CodeCommandNotAllowed {
					t.Errorf("the plan should refuse already: %v", planErr)
				}
				if action.CodeOf(err) != action.CodeCommandNotAllowed {
					t.Fatalf("want command_not_allowed, got %v %v", out, err)
				}
				if _, err := os.Stat(filepath.Join(e.root, "done")); err == nil {
					t.Fatal("the command ran")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(before, treeState(t, filepath.Join(e.root, ".git"))) {
				t.Fatalf("the .git file changed: %v", out)
			}
		})
	}
}

// TestSandboxReadOnlyBinds: a caller's (src, dst) binds lay src read-only
// over dst for the command only: the command reads src's content at dst
// and cannot write it; dst itself is unchanged. A dst that is a symlink or
// missing stops the command before it runs.
func TestSandboxReadOnlyBinds(t *testing.T) {
	requireFullSandbox(t)
	e := newShEnv(t, SandboxRequired, nil, map[string]string{
		".git/config": "[core]\n\tfsmonitor = ./pwn\n",
		"notes.txt":   "original\n",
		"Makefile":    "all:\n\t@cat .git/config notes.txt\n\t-@echo evil >> notes.txt\n\t-@echo evil >> .git/config\n",
	})
	sanitized := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(sanitized, []byte("[core]\n\tbare = false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	replacement := filepath.Join(t.TempDir(), "notes")
	if err := os.WriteFile(replacement, []byte("replaced\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := e.w.PlanCommand("make")
	if err != nil {
		t.Fatal(err)
	}
	plan.policy.ROBinds = [][2]string{{sanitized, filepath.Join(e.root, ".git", "config")}, {replacement, filepath.Join(e.root, "notes.txt")}}
	out, err := e.w.runPlan(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if out["stdout"] != "[core]\n\tbare = false\nreplaced\n" {
		t.Fatalf("the command did not see the bound files: %v", out)
	}
	if strings.Count(out["stderr"].(string), "Read-only file system") != 2 {
		t.Fatalf("writes to the bound files were not refused: %v", out)
	}
	for p, want := range map[string]string{".git/config": "[core]\n\tfsmonitor = ./pwn\n", "notes.txt": "original\n"} {
		if b, _ := os.ReadFile(filepath.Join(e.root, p)); string(b) != want {
			t.Fatalf("%s changed: %q", p, b)
		}
	}

	if err := os.Symlink("notes.txt", filepath.Join(e.root, "link")); err != nil {
		t.Fatal(err)
	}
	for name, dst := range map[string]string{"symlink": "link", "missing": "absent.txt"} {
		t.Run(name, func(t *testing.T) {
			plan, err := e.w.PlanCommand("make")
			if err != nil {
				t.Fatal(err)
			}
			plan.policy.ROBinds = [][2]string{{replacement, filepath.Join(e.root, dst)}}
			out, err := e.w.runPlan(context.Background(), plan)
			if action.CodeOf(err) != action.CodeInternal || !strings.Contains(err.Error(), "did not run") {
				t.Fatalf("want the helper to refuse, got %v %v", out, err)
			}
		})
	}
}

// TestSandboxNothingOutlivesTheAction: children that leave the process
// group (setsid, setsid -f, nohup, a double fork) and would write to the
// root once the command has ended never do: the PID namespace ends with the
// command.
// With the PID namespace pretended missing, the setsid child survives,
// which shows the test would catch it.
func TestSandboxNothingOutlivesTheAction(t *testing.T) {
	requireFullSandbox(t)
	// Each child waits for a file the test makes once the command has
	// ended, then writes: no timing decides the outcome.
	child := func(name string) string {
		return "sh -c 'while [ ! -e go ]; do sleep 0.02; done; touch late-" + name + "' </dev/null >/dev/null 2>&1"
	}
	recipe := "all:\n" +
		"\t@setsid " + child("setsid") + " &\n" +
		"\t@setsid -f " + child("setsid-f") + "\n" +
		"\t@nohup " + child("nohup") + " &\n" +
		"\t@(" + child("fork") + " &) &\n" +
		"\t@echo started\n"
	lingering := func() []string {
		var out []string
		entries, _ := os.ReadDir("/proc")
		for _, en := range entries {
			b, err := os.ReadFile("/proc/" + en.Name() + "/cmdline")
			if err == nil && strings.Contains(string(b), "touch late-") && processAlive(en.Name()) {
				out = append(out, en.Name())
			}
		}
		return out
	}
	for _, tt := range []struct {
		name     string
		without  string
		survives bool
	}{{"pid namespace", "", false}, {"control: no pid namespace", SandboxLayerPIDNS, true}} {
		t.Run(tt.name, func(t *testing.T) {
			mode := SandboxRequired
			if tt.without != "" {
				pretendMissing(t, tt.without)
				mode = SandboxBestEffort
			}
			e := newShEnv(t, mode, nil, map[string]string{"Makefile": recipe})
			defer func() {
				for _, pid := range lingering() {
					if n, err := strconv.Atoi(pid); err == nil {
						syscall.Kill(n, syscall.SIGKILL)
					}
				}
			}()
			out := e.mustRun(t, "make")
			if out["stdout"] != "started\n" {
				t.Fatalf("recipe output %v", out)
			}
			if p := lingering(); len(p) > 0 && !tt.survives {
				t.Fatalf("processes of the command outlived it: %v", p)
			}
			if err := os.WriteFile(filepath.Join(e.root, "go"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			var late []string
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if late, _ = filepath.Glob(filepath.Join(e.root, "late-*")); tt.survives && len(late) > 0 {
					return
				}
			}
			if tt.survives {
				t.Fatal("control: without the PID namespace the setsid child should survive")
			}
			if len(late) > 0 || len(lingering()) > 0 {
				t.Fatalf("a child wrote after the command ended: %v", late)
			}
		})
	}
}

// TestSandboxTimeoutEndsEveryProcess: on timeout, a child that left the
// process group ends too.
func TestSandboxTimeoutEndsEveryProcess(t *testing.T) {
	requireFullSandbox(t)
	e := newShEnv(t, SandboxRequired, nil, map[string]string{
		"Makefile": "all:\n\t@setsid sh -c 'sleep 300.5151' </dev/null >/dev/null 2>&1 & echo started; sleep 300\n",
	})
	_, err := e.w.Run(context.Background(), action.Action{Name: "workspace_run_shell",
		Input: map[string]any{"command": "make", "timeout_seconds": 1}})
	if action.CodeOf(err) != action.CodeTimeout {
		t.Fatalf("want timeout, got %v", err)
	}
	for _, arg := range []string{"sleep 300.5151", "300.5151"} { // sh, or sleep after sh exec'd it
		if pid := processWithArg(arg); pid != "" {
			t.Fatalf("process %s outlived the timed-out command", pid)
		}
	}
}

// netTarget is what the network checks aim at: a UDP and a TCP listener on
// loopback, a Unix socket outside the root and an abstract one.
type netTarget struct {
	udp       *net.UDPConn
	tcpPort   int
	unixPath  string
	abstract  string
	udpPort   int
	accepted  chan struct{}
	closeFunc func()
}

func newNetTarget(t *testing.T, dir string) *netTarget {
	t.Helper()
	nt := &netTarget{accepted: make(chan struct{}, 16)}
	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	nt.udp, nt.udpPort = udp, udp.LocalAddr().(*net.UDPAddr).Port
	var lns []net.Listener
	serve := func(network, addr string) net.Listener {
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				nt.accepted <- struct{}{}
				c.Close()
			}
		}()
		return ln
	}
	nt.tcpPort = serve("tcp4", "127.0.0.1:0").Addr().(*net.TCPAddr).Port
	nt.unixPath = filepath.Join(dir, "service.sock")
	serve("unix", nt.unixPath)
	nt.abstract = fmt.Sprintf("harness-sandbox-test-%d", time.Now().UnixNano())
	serve("unix", "@"+nt.abstract)
	t.Cleanup(func() {
		udp.Close()
		for _, ln := range lns {
			ln.Close()
		}
	})
	return nt
}

func (nt *netTarget) checks() []string {
	return []string{
		"udp4=" + strconv.Itoa(nt.udpPort), "tcp4=" + strconv.Itoa(nt.tcpPort), "udp6", "tcp6", "raw", "packet", "netlink",
		"unix=" + nt.unixPath, "abstract=" + nt.abstract, "socketpair",
	}
}

// udpReceived reports whether a datagram reached the UDP listener.
func (nt *netTarget) udpReceived() bool {
	nt.udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 64)
	n, _, err := nt.udp.ReadFromUDP(buf)
	return err == nil && n > 0
}

// TestSandboxNoNetworkNoPrivilege: a command has no capability, no
// no_new_privs escape, and no socket to anything: UDP and TCP over IPv4
// and IPv6, raw, packet and netlink sockets, a Unix socket listening
// outside the root and an abstract one all fail; socketpair works.
// io_uring, clone3, new user namespaces and the keyring are refused, and
// /etc/shadow (root's 0640 file, readable through ownership by a command
// that keeps uid 0) is not readable. With the sandbox off the same checks
// reach the listeners and the file.
func TestSandboxNoNetworkNoPrivilege(t *testing.T) {
	requireFullSandbox(t)
	shadow, shadowErr := os.ReadFile("/etc/shadow")
	for _, tt := range []struct {
		mode     string
		confined bool
	}{{SandboxRequired, true}, {SandboxOff, false}} {
		t.Run(tt.mode, func(t *testing.T) {
			e := newShEnv(t, tt.mode, nil, nil)
			nt := newNetTarget(t, e.outside)
			checks := append(nt.checks(), "io_uring", "clone3", "userns", "keyctl", "status",
				"read=/etc/shadow", "read=/etc/gshadow", "ls=/etc/ssl/private", "read=/etc/passwd")
			linkProbe(t, e.root)
			if err := os.WriteFile(filepath.Join(e.root, "Makefile"), []byte(probeRecipe(checks...)), 0o644); err != nil {
				t.Fatal(err)
			}
			e.watch.drain()
			out := e.mustRun(t, "make")
			res := probeResults(out["stdout"].(string))
			if !tt.confined {
				for _, c := range []string{checks[0], checks[1], "raw", "packet", "unix=" + nt.unixPath, "abstract=" + nt.abstract} {
					if res[c] != "ok" {
						t.Errorf("control: without the sandbox %s should work: %s", c, res[c])
					}
				}
				if shadowErr == nil && res["read=/etc/shadow"] == "" {
					t.Errorf("control: /etc/shadow unread")
				}
				return
			}
			for _, c := range checks {
				got := res[c]
				switch c {
				case "socketpair", "read=/etc/passwd":
					if !strings.HasPrefix(got, "ok") {
						t.Errorf("%s: %s, want ok", c, got)
					}
				case "io_uring", "clone3":
					if got != "err=ENOSYS" {
						t.Errorf("%s: %s, want err=ENOSYS", c, got)
					}
				case "status":
					for _, want := range []string{"CapInh:0000000000000000", "CapPrm:0000000000000000", "CapEff:0000000000000000",
						"CapBnd:0000000000000000", "CapAmb:0000000000000000", "NoNewPrivs:1", "Seccomp:2"} {
						if !strings.Contains(got, want) {
							t.Errorf("status %s lacks %s", got, want)
						}
					}
				default:
					if !strings.HasPrefix(got, "err=") {
						t.Errorf("%s: %q, want a refusal", c, got)
					}
				}
			}
			if nt.udpReceived() || len(nt.accepted) > 0 {
				t.Error("a listener outside the sandbox was reached")
			}
			if shadowErr == nil && len(shadow) > 8 && strings.Contains(out["stdout"].(string), string(shadow[:8])) {
				t.Error("/etc/shadow reached the output")
			}
		})
	}
}

// TestSandboxNetworkCommands: a command listed in NetworkCommands reaches
// the network (TCP and UDP on loopback here), and the plan says so; it
// still cannot open Unix, packet or raw sockets, and has no capability.
// Other commands stay closed.
func TestSandboxNetworkCommands(t *testing.T) {
	requireFullSandbox(t)
	e := newShEnv(t, SandboxRequired, nil, nil)
	e.w.opts.NetworkCommands = []string{"make"}
	nt := newNetTarget(t, e.outside)
	linkProbe(t, e.root)
	checks := append(nt.checks(), "status")
	if err := os.WriteFile(filepath.Join(e.root, "Makefile"), []byte(probeRecipe(checks...)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, err := e.w.PlanCommand("make")
	if err != nil {
		t.Fatal(err)
	}
	pv := plan.Preview()
	if pv["no_network"] != false || !strings.Contains(pv["sandbox_note"].(string), "network is open to make") ||
		slices.Contains(pv["sandbox_layers"].([]string), SandboxLayerNetNS) || pv["sandbox"] != SandboxFull {
		t.Fatalf("preview of a network command: %v", pv)
	}
	out := e.mustRun(t, "make")
	res := probeResults(out["stdout"].(string))
	for _, c := range checks {
		want := "err="
		if strings.HasPrefix(c, "udp") || strings.HasPrefix(c, "tcp") || c == "netlink" || c == "socketpair" || c == "status" {
			want = "ok"
		}
		if !strings.HasPrefix(res[c], want) {
			t.Errorf("%s: %s, want %s", c, res[c], want)
		}
	}
	if !strings.Contains(res["status"], "CapEff:0000000000000000") {
		t.Errorf("status %s", res["status"])
	}
	if !nt.udpReceived() || len(nt.accepted) != 1 {
		t.Errorf("the network command did not reach the listeners")
	}
	if _, ok := out["sandbox_note"]; !ok {
		t.Errorf("payload lacks the network note: %v", out)
	}
	if slices.Contains(plan.Env, "GOPROXY=off") {
		t.Errorf("a network command keeps GOPROXY=off")
	}
	// pwd is not a network command.
	plan, err = e.w.PlanCommand("pwd")
	if err != nil || plan.NoNetwork != true || !slices.Contains(plan.SandboxLayers, SandboxLayerNetNS) || !slices.Contains(plan.Env, "GOPROXY=off") {
		t.Fatalf("pwd plan %+v %v", plan, err)
	}
}

// TestSandboxConcurrentCommandsShareProtection: commands running at the same
// time on a root without .git share its placeholder; none of them can
// create .git while another holds it, and the last one to end removes it.
func TestSandboxConcurrentCommandsShareProtection(t *testing.T) {
	requireFullSandbox(t)
	e := newShEnv(t, SandboxRequired, nil, map[string]string{
		"Makefile": "all:\n\t-@mkdir -p .git/hooks 2>/dev/null; echo evil > .git/hooks/pre-commit 2>/dev/null\n\t@sleep 0.2\n\t-@mkdir .harness 2>/dev/null\n",
	})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if _, err := e.run(t, "make"); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, name := range protectedNames {
		if _, err := os.Lstat(filepath.Join(e.root, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the commands: %v", name, err)
		}
	}
}

// TestSandboxEmptyNetworkNamespace: a command's network namespace is not
// the service's, and has no interface but the loopback.
func TestSandboxEmptyNetworkNamespace(t *testing.T) {
	requireFullSandbox(t)
	e := newShEnv(t, SandboxRequired, nil, map[string]string{
		"Makefile": "all:\n\t@readlink /proc/self/ns/net\n\t@cat /proc/net/dev\n",
	})
	host, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	out := e.mustRun(t, "make")
	lines := strings.Split(strings.TrimSpace(out["stdout"].(string)), "\n")
	if len(lines) != 4 || lines[0] == host || !strings.HasPrefix(lines[0], "net:[") || !strings.HasPrefix(strings.TrimSpace(lines[3]), "lo:") {
		t.Fatalf("network namespace of a command (service's %s):\n%s", host, out["stdout"])
	}
}

// TestSandboxPassesNoOtherDescriptor: a descriptor the service left
// inheritable (opened without O_CLOEXEC, as a C library might) reaches the
// helper, but not the command.
func TestSandboxPassesNoOtherDescriptor(t *testing.T) {
	requireFullSandbox(t)
	e := newShEnv(t, SandboxRequired, nil, nil)
	fd, err := syscall.Open(e.secret, syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	recipe := fmt.Sprintf("all:\n\t@ls /proc/self/fd | tr '\\n' ' '\n\t-@cat /proc/self/fd/%d <&%d\n", fd, fd)
	if err := os.WriteFile(filepath.Join(e.root, "Makefile"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := e.run(t, "make")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(outputText(out, nil), shSentinel) || strings.Fields(out["stdout"].(string))[0] != "0" ||
		len(strings.Fields(out["stdout"].(string))) > 4 {
		t.Fatalf("the command got a descriptor of the service: %v", out)
	}
}

// TestSandboxHelperThatIsNotOneIsRefused: a helper path naming a program
// that does not hand the sub-command to SandboxMain (a library user's
// program that forgot to, or any other binary) is reported as such; its
// exit status is never taken for the command's.
func TestSandboxHelperThatIsNotOneIsRefused(t *testing.T) {
	requireFullSandbox(t)
	for _, helper := range []string{"/bin/true", "/bin/false", "/bin/echo"} {
		t.Run(helper, func(t *testing.T) {
			root := t.TempDir()
			opts := DefaultOptions()
			opts.Sandbox = SandboxRequired
			opts.HelperPath = helper
			w, err := New(root, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			_, err = w.Run(context.Background(), action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "pwd"}})
			if action.CodeOf(err) != action.CodeInternal || !strings.Contains(action.MessageOf(err), "SandboxMain") {
				t.Fatalf("got %v, want an internal error naming SandboxMain", err)
			}
		})
	}
}
