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
// the minimal environment, capture, process group, and with the sandbox
// the re-executed helper that sets up namespaces, Landlock, seccomp and
// drops capabilities before it starts pwd. The "without-*" variants leave
// out one layer each (best-effort with that layer pretended missing), so
// that each layer's cost is the difference to "full" (without the mount
// namespace there is no PID namespace either); "helper-only" leaves out
// every layer but the helper itself. Besides wall time
// per run it reports cpu-ms/op, the CPU time of the process and of its
// children (helper and pwd) per run, which a loaded machine inflates less;
// kernel work done later elsewhere (a network namespace is freed by a
// kernel worker) is in neither.
//
//	go test -run '^$' -bench RunShellPwd -benchtime 200x ./workspace/
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
		defer reportCPU(b)()
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
	type variant struct {
		name, mode, helper string
		without            []string
	}
	variants := []variant{
		{"run_shell-sandbox-off", SandboxOff, os.Args[0], nil},
		{"run_shell-full-test-binary-helper", SandboxRequired, os.Args[0], nil},
		{"run_shell-full", SandboxRequired, small, nil},
	}
	all := []string{SandboxLayerLandlock, SandboxLayerUserNS, SandboxLayerPIDNS, SandboxLayerMountNS, SandboxLayerNetNS, SandboxLayerSeccomp}
	for _, l := range all {
		variants = append(variants, variant{"run_shell-without-" + l, SandboxBestEffort, small, []string{l}})
	}
	// The helper alone: it drops capabilities and execs pwd.
	variants = append(variants, variant{"run_shell-helper-only", SandboxBestEffort, small, all})
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			if v.mode != SandboxOff {
				if missing := SandboxSupport().Missing; len(missing) > 0 {
					b.Skipf("this host lacks sandbox layers: %v", missing)
				}
			}
			if len(v.without) > 0 {
				pretendMissing(b, v.without...)
			}
			opts := DefaultOptions()
			opts.Sandbox = v.mode
			opts.HelperPath = v.helper
			w, err := New(root, opts)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			a := action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "pwd"}}
			if _, err := w.Run(context.Background(), a); err != nil { // plans once: lookups, sandbox probe
				b.Fatal(err)
			}
			defer reportCPU(b)()
			for b.Loop() {
				if _, err := w.Run(context.Background(), a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// reportCPU returns a function that reports the CPU time (user and system,
// of this process and its reaped children) per iteration since the call.
func reportCPU(b *testing.B) func() {
	start := cpuTimeWithChildren()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64((cpuTimeWithChildren()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		}
	}
}

// pretendMissing makes the sandbox act as if layers were missing on this
// host until the test ends. Tests that use it must not run in parallel.
func pretendMissing(t testing.TB, layers ...string) {
	t.Helper()
	sandboxTestMissing.Lock()
	sandboxTestMissing.layers = map[string]string{}
	for _, l := range layers {
		sandboxTestMissing.layers[l] = "pretended missing by the test"
	}
	sandboxTestMissing.Unlock()
	t.Cleanup(func() {
		sandboxTestMissing.Lock()
		sandboxTestMissing.layers = nil
		sandboxTestMissing.Unlock()
	})
}
