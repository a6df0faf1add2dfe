package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// BenchmarkRunShellPwd measures the overhead of workspace_run_shell over a
// bare os/exec of the same program: planning (tokenize, rules, lookups),
// the minimal environment, capture, process group, and with landlock the
// re-executed helper that restricts itself before exec'ing pwd.
//
//	go test -run XXX -bench RunShellPwd -benchtime 200x ./workspace/
func BenchmarkRunShellPwd(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	pwd, err := exec.LookPath("pwd")
	if err != nil {
		b.Skip("no pwd")
	}
	b.Run("bare-os-exec", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command(pwd)
			cmd.Dir = root
			if _, err := cmd.Output(); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The helper a deployment uses: cmd/harness-sandbox, which links only
	// this package (the test binary links every test dependency too).
	small := filepath.Join(b.TempDir(), "harness-sandbox")
	build := exec.Command("go", "build", "-o", small, "github.com/harness-runtime/harness/cmd/harness-sandbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0") // as make build does: a static binary starts faster
	if out, err := build.CombinedOutput(); err != nil {
		b.Logf("cannot build cmd/harness-sandbox, using the test binary as the helper: %v %s", err, out)
		small = os.Args[0]
	}
	for _, v := range []struct{ name, mode, helper string }{
		{"run_shell-sandbox-off", SandboxOff, os.Args[0]},
		{"run_shell-sandbox-required-test-binary-helper", SandboxRequired, os.Args[0]},
		{"run_shell-sandbox-required-harness-sandbox-helper", SandboxRequired, small},
	} {
		mode := v.mode
		b.Run(v.name, func(b *testing.B) {
			if mode == SandboxRequired && landlockABI() == 0 {
				b.Skip("no Landlock")
			}
			opts := DefaultOptions()
			opts.Sandbox = mode
			opts.HelperPath = v.helper
			w, err := New(root, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			a := action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "pwd"}}
			for b.Loop() {
				if _, err := w.Run(context.Background(), a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
