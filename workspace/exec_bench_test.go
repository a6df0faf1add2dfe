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
	for _, mode := range []string{SandboxOff, SandboxRequired} {
		b.Run("run_shell-sandbox-"+mode, func(b *testing.B) {
			if mode == SandboxRequired && landlockABI() == 0 {
				b.Skip("no Landlock")
			}
			opts := DefaultOptions()
			opts.Sandbox = mode
			opts.HelperPath = os.Args[0]
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
