//go:build linux

package workspace

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
				if out["sandbox"] != SandboxLandlock {
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
