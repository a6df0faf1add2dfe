package eval

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// NewOptions prepares a run in dir (which the caller removes afterwards):
// it builds cmd/harness and cmd/harness-sandbox once with `go build` from
// the module holding the current directory, makes a home directory for
// the harness processes, and names the running executable as the MCP
// server (it must call ServeMCPIfAsked first thing).
//
// It then changes this process's environment as it does the harness
// processes' (Environ): HOME, the XDG directories and TMPDIR move into dir, so that
// nothing an in-process entry point does lands in the user's home, and the
// HARNESS_* variables go, since they override the configuration file
// (config.LoadFile), which must be all that decides each entry point's
// settings.
func NewOptions(ctx context.Context, dir string) (Options, error) {
	var o Options
	self, err := os.Executable()
	if err != nil {
		return o, err
	}
	modDir, err := moduleDir(ctx)
	if err != nil {
		return o, err
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return o, err
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "./cmd/harness", "./cmd/harness-sandbox")
	build.Dir = modDir
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		return o, fmt.Errorf("go build ./cmd/harness ./cmd/harness-sandbox: %v\n%s", err, out.String())
	}
	home := filepath.Join(dir, "home")
	for _, d := range []string{home, filepath.Join(home, "state"), filepath.Join(home, "config"), filepath.Join(home, "tmp")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return o, err
		}
	}
	env := Environ(home)
	os.Clearenv()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	return Options{
		Dir:           dir,
		Harness:       filepath.Join(bin, "harness"),
		SandboxHelper: filepath.Join(bin, "harness-sandbox"),
		MCPServer:     []string{self},
		Env:           env,
	}, nil
}

// Environ is the environment of the harness processes: this process's,
// without HARNESS_* variables, with HOME, XDG_STATE_HOME, XDG_CONFIG_HOME
// and TMPDIR under home, so that nothing lands in the user's home and
// nothing is left in the system's temporary directory.
func Environ(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "HARNESS_"), k == "HOME", k == "XDG_STATE_HOME", k == "XDG_CONFIG_HOME", k == "TMPDIR":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home, "XDG_STATE_HOME="+filepath.Join(home, "state"), "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"TMPDIR="+filepath.Join(home, "tmp"))
}

// moduleDir is the directory of the main module's go.mod.
func moduleDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the harness module")
	}
	return filepath.Dir(mod), nil
}
