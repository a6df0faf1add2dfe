package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/workspace"
)

func TestSandboxCommandIsHidden(t *testing.T) {
	c, ok := commands[workspace.SandboxCommand]
	if !ok || !c.hidden {
		t.Fatalf("%s registered=%v hidden=%v", workspace.SandboxCommand, ok, c.hidden)
	}
	var buf bytes.Buffer
	usage(&buf)
	if strings.Contains(buf.String(), workspace.SandboxCommand) {
		t.Fatalf("usage lists the hidden helper:\n%s", buf.String())
	}
}

func TestSandboxCommandBadArguments(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no program", []string{"--ro", "/usr"}},
		{"relative program", []string{"--", "touch", "touch", "x"}},
		{"unknown option", []string{"--rw-everything", "--", "/usr/bin/true", "true"}},
		{"missing value", []string{"--ro"}},
		{"bad status fd", []string{"--status-fd", "1", "--", "/usr/bin/true", "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := dispatch(context.Background(), append([]string{workspace.SandboxCommand}, tt.args...), stdio{out: &out, err: &errb})
			if code != 126 {
				t.Fatalf("exit %d, want 126", code)
			}
		})
	}
}

// TestSandboxHelperProcess is not a test: TestSandboxCommandConfines runs
// the test binary as "harness __sandbox ..." through it.
func TestSandboxHelperProcess(t *testing.T) {
	if os.Getenv("HARNESS_TEST_SANDBOX_HELPER") != "1" {
		t.Skip("helper process only")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(dispatch(context.Background(), args, stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}

// TestSandboxCommandConfines runs the real sub-command: a program it starts
// may write beneath --rw but not elsewhere.
func TestSandboxCommandConfines(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is linux only")
	}
	touch, err := exec.LookPath("touch")
	if err != nil {
		t.Skip("no touch")
	}
	inside, outside := t.TempDir(), t.TempDir()
	helper := func(target string) (int, string) {
		args := []string{"-test.run=^TestSandboxHelperProcess$", "--", workspace.SandboxCommand,
			"--ro", "/usr", "--ro", "/lib", "--ro", "/lib64", "--ro", "/etc", "--ro", "/bin",
			"--rw", inside, "--no-net", "--", touch, "touch", target}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, os.Args[0], args...)
		cmd.Env = []string{"HARNESS_TEST_SANDBOX_HELPER=1", "PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	code, out := helper(filepath.Join(inside, "ok"))
	if strings.Contains(out, "landlock") && code == 126 {
		t.Skipf("no Landlock here: %s", out)
	}
	if code != 0 {
		t.Fatalf("touch inside: exit %d: %s", code, out)
	}
	code, out = helper(filepath.Join(outside, "pwned"))
	if code == 0 || !strings.Contains(out, "Permission denied") {
		t.Fatalf("touch outside: exit %d: %s", code, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
		t.Fatal("the helper let the program write outside --rw")
	}
}
