//go:build linux

package workspace

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// TestSandboxSupportMeasured: every layer this kernel offers is reported,
// and each missing one with a reason.
func TestSandboxSupportMeasured(t *testing.T) {
	f := SandboxSupport()
	for _, l := range []string{SandboxLayerLandlock, SandboxLayerUserNS, SandboxLayerPIDNS, SandboxLayerMountNS, SandboxLayerNetNS, SandboxLayerSeccomp} {
		_, missing := f.Missing[l]
		if slices.Contains(f.Layers(), l) == missing {
			t.Errorf("%s: listed %v, missing %v", l, slices.Contains(f.Layers(), l), missing)
		}
		if missing && f.Missing[l] == "" {
			t.Errorf("%s is missing without a reason", l)
		}
	}
	if f.LandlockABI != landlockABI() {
		t.Errorf("LandlockABI %d, kernel %d", f.LandlockABI, landlockABI())
	}
	// The result is a copy: a caller cannot change what the next one sees.
	f.Missing["x"] = "y"
	if _, ok := SandboxSupport().Missing["x"]; ok {
		t.Error("SandboxSupport shares its map")
	}
}

// TestSandboxFeaturesWithout: a layer pretended missing takes the layers
// that need it along.
func TestSandboxFeaturesWithout(t *testing.T) {
	all := SandboxFeatures{LandlockABI: 7, UserNS: true, PIDNS: true, MountNS: true, NetNS: true, Seccomp: true}
	f := all.without(SandboxLayerMountNS, "test")
	if f.MountNS || f.PIDNS || !f.NetNS || f.Missing[SandboxLayerPIDNS] == "" {
		t.Fatalf("without mount-ns: %+v", f)
	}
	f = all.without(SandboxLayerUserNS, "test")
	if f.UserNS || f.PIDNS != serviceIsRoot() || f.NetNS != serviceIsRoot() {
		t.Fatalf("without user-ns (root %v): %+v", serviceIsRoot(), f)
	}
	if all.Missing != nil {
		t.Fatal("without changed its receiver")
	}
}

// TestSandboxDegradedModes pretends each layer missing in turn. Required
// mode refuses the command (internal, the message and the payload naming
// the layer); best-effort runs it, says in the payload which layer is
// missing and why, and the other layers still hold, while the missing one
// really is off.
func TestSandboxDegradedModes(t *testing.T) {
	requireFullSandbox(t)
	_, shadowErr := os.ReadFile("/etc/shadow")
	tests := []struct {
		layer string
		check func(t *testing.T, res map[string]string, hookWritten bool)
	}{
		{SandboxLayerLandlock, func(t *testing.T, res map[string]string, hook bool) {
			if shadowErr == nil && !strings.HasPrefix(res["read=/etc/shadow"], "ok") {
				t.Errorf("without Landlock /etc/shadow should be readable here: %s", res["read=/etc/shadow"])
			}
			if hook {
				t.Error(".git was written")
			}
		}},
		{SandboxLayerUserNS, func(t *testing.T, res map[string]string, hook bool) {
			if strings.Count(res["ls=/proc"], ",") > 60 || hook || !strings.HasPrefix(res["read=/etc/shadow"], "err") {
				t.Errorf("without a user namespace the other layers must hold: %v, hook %v", res, hook)
			}
		}},
		{SandboxLayerPIDNS, func(t *testing.T, res map[string]string, hook bool) {
			if strings.Count(res["ls=/proc"], ",") < 60 {
				t.Errorf("without the PID namespace /proc should show the host: %s", res["ls=/proc"])
			}
			if hook {
				t.Error(".git was written")
			}
		}},
		{SandboxLayerMountNS, func(t *testing.T, res map[string]string, hook bool) {
			if !hook {
				t.Error("without the mount namespace .git should be writable here")
			}
		}},
		{SandboxLayerNetNS, func(t *testing.T, res map[string]string, hook bool) {
			if res["tcp4"] != "err=EACCES" || hook {
				t.Errorf("without the network namespace seccomp must still refuse sockets: %v", res)
			}
		}},
		{SandboxLayerSeccomp, func(t *testing.T, res map[string]string, hook bool) {
			if res["userns"] != "ok" || !strings.HasPrefix(res["tcp4"], "err=") {
				t.Errorf("without seccomp a user namespace is allowed, the network namespace and Landlock still stop TCP: %v", res)
			}
			if hook {
				t.Error(".git was written")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.layer, func(t *testing.T) {
			pretendMissing(t, tt.layer)
			e := newShEnv(t, SandboxRequired, nil, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/.keep": ""})
			nt := newNetTarget(t, e.outside)
			linkProbe(t, e.root)
			recipe := probeRecipe("status", "tcp4="+strconv.Itoa(nt.tcpPort), "userns", "read=/etc/shadow", "ls=/proc") +
				"\t-@echo evil > .git/hooks/pre-commit\n"
			if err := os.WriteFile(filepath.Join(e.root, "Makefile"), []byte(recipe), 0o644); err != nil {
				t.Fatal(err)
			}
			requiredLayer := tt.layer != SandboxLayerUserNS || !serviceIsRoot()

			_, err := e.run(t, "make")
			if requiredLayer {
				var ae *action.Error
				if action.CodeOf(err) != action.CodeInternal || !strings.Contains(err.Error(), tt.layer) ||
					!asActionError(err, &ae) || ae.Payload == nil || !slices.Contains(ae.Payload["sandbox_missing"].([]string), tt.layer) {
					t.Fatalf("required mode: want internal naming %s, got %v", tt.layer, err)
				}
			} else if err != nil {
				t.Fatalf("required mode without a user namespace (root): %v", err)
			}

			e.w.opts.Sandbox = SandboxBestEffort
			out := e.mustRun(t, "make")
			res := probeResults(out["stdout"].(string))
			res["tcp4"] = res["tcp4="+strconv.Itoa(nt.tcpPort)]
			if !strings.Contains(res["status"], "CapEff:0000000000000000") || !strings.Contains(res["status"], "NoNewPrivs:1") {
				t.Errorf("capabilities kept: %s", res["status"])
			}
			layers := out["sandbox_layers"].([]string)
			if slices.Contains(layers, tt.layer) {
				t.Errorf("sandbox_layers %v lists the missing %s", layers, tt.layer)
			}
			if requiredLayer {
				missing, _ := out["sandbox_missing"].([]string)
				note, _ := out["sandbox_note"].(string)
				if out["sandbox"] != SandboxPartial || !slices.Contains(missing, tt.layer) ||
					!strings.Contains(note, tt.layer) || !strings.Contains(note, "pretended missing") {
					t.Errorf("best-effort payload does not name the missing %s: %v", tt.layer, out)
				}
			} else if out["sandbox"] != SandboxFull {
				t.Errorf("payload %v", out)
			}
			_, hookErr := os.Stat(filepath.Join(e.root, ".git", "hooks", "pre-commit"))
			tt.check(t, res, hookErr == nil)
		})
	}
}

// TestSandboxPlaceholdersShared: concurrent holders of a missing .git share
// one placeholder; it goes when the last one releases it, and never when
// something was put inside meanwhile.
func TestSandboxPlaceholdersShared(t *testing.T) {
	e := newShEnv(t, SandboxOff, nil, nil)
	a, err := e.w.holdProtected()
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.w.holdProtected()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range protectedNames {
		fi, err := os.Lstat(filepath.Join(e.root, name))
		if err != nil || !isPlaceholder(fi) {
			t.Fatalf("placeholder %s: %v %v", name, fi, err)
		}
	}
	e.w.releaseProtected(a, true)
	if _, err := os.Lstat(filepath.Join(e.root, ".git")); err != nil {
		t.Fatalf("placeholder removed while still held: %v", err)
	}
	// Someone outside (root) wrote into a placeholder meanwhile.
	if err := os.WriteFile(filepath.Join(e.root, ".harness"), []byte("kept"), 0o400); err != nil {
		t.Fatal(err)
	}
	e.w.releaseProtected(b, true)
	if _, err := os.Lstat(filepath.Join(e.root, ".git")); err == nil {
		t.Fatal("placeholder left after the last holder")
	}
	if b, err := os.ReadFile(filepath.Join(e.root, ".harness")); string(b) != "kept" {
		t.Fatalf("a placeholder that was written meanwhile was removed: %v", err)
	}
	// A real, empty .git directory or file is not a placeholder and stays.
	for _, mk := range []func(string) error{
		func(p string) error { return os.Mkdir(p, placeholderMode) },
		func(p string) error { return os.WriteFile(p, nil, 0o644) },
	} {
		os.RemoveAll(filepath.Join(e.root, ".git"))
		if err := mk(filepath.Join(e.root, ".git")); err != nil {
			t.Fatal(err)
		}
		c, err := e.w.holdProtected()
		if err != nil {
			t.Fatal(err)
		}
		e.w.releaseProtected(c, true)
		if _, err := os.Lstat(filepath.Join(e.root, ".git")); err != nil {
			t.Fatalf("an empty .git of the user was removed: %v", err)
		}
	}
}

// TestSandboxUnprivilegedService runs the sandbox tests' core checks in a
// copy of this test binary that runs as nobody, so that the path of an
// unprivileged service (a user namespace owning the others, the helper's
// setup capabilities kept as ambient ones and then dropped) is tested on a
// host where the tests run as root. (Run as an unprivileged user, every
// test takes that path anyway.)
func TestSandboxUnprivilegedService(t *testing.T) {
	if os.Getenv("HARNESS_SANDBOX_UNPRIVILEGED") != "" {
		unprivilegedChecks(t)
		return
	}
	requireFullSandbox(t)
	if !serviceIsRoot() {
		t.Skip("not root: the other tests take the unprivileged path")
	}
	if readSysctl("user/max_user_namespaces") == "0" {
		t.Skip("user namespaces are disabled")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "harness-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "workspace.test")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(tmp, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// A root the service may read but not write: no placeholder can be
	// made there, and none is needed, since the command cannot create .git
	// either.
	readOnly := filepath.Join(dir, "read-only-root")
	if err := os.Mkdir(readOnly, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(readOnly, "Makefile"), []byte("all:\n\t@echo read\n\t-@mkdir .git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestSandboxUnprivilegedService$", "-test.count=1", "-test.v")
	cmd.Env = []string{"HARNESS_SANDBOX_UNPRIVILEGED=" + readOnly, "TMPDIR=" + tmp, "PATH=" + os.Getenv("PATH"), "HOME=" + tmp}
	cmd.Dir = tmp
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skipf("as nobody: %s", out)
	}
}

// unprivilegedChecks is TestSandboxUnprivilegedService as nobody.
func unprivilegedChecks(t *testing.T) {
	if serviceIsRoot() {
		t.Fatal("still root")
	}
	f := SandboxSupport()
	for _, l := range append([]string{SandboxLayerUserNS}, requiredLayers...) {
		if why, ok := f.Missing[l]; ok {
			t.Skipf("an unprivileged service lacks %s here: %s", l, why)
		}
	}
	e := newShEnv(t, SandboxRequired, nil, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/hooks/.keep": ""})
	linkProbe(t, e.root)
	recipe := probeRecipe("status", "tcp4=1", "udp4=53", "userns", "read=/etc/shadow", "ls=/proc", "socketpair") +
		"\t-@echo evil > .git/hooks/pre-commit\n\t-@mkdir -p .harness/x\n"
	if err := os.WriteFile(filepath.Join(e.root, "Makefile"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.mustRun(t, "make")
	res := probeResults(out["stdout"].(string))
	for _, want := range []string{"CapInh:0000000000000000", "CapPrm:0000000000000000", "CapEff:0000000000000000",
		"CapBnd:0000000000000000", "CapAmb:0000000000000000", "NoNewPrivs:1", "Seccomp:2"} {
		if !strings.Contains(res["status"], want) {
			t.Errorf("status %s lacks %s", res["status"], want)
		}
	}
	for _, c := range []string{"tcp4=1", "udp4=53", "userns", "read=/etc/shadow"} {
		if !strings.HasPrefix(res[c], "err=") {
			t.Errorf("%s: %s, want a refusal", c, res[c])
		}
	}
	if res["socketpair"] != "ok" || strings.Count(res["ls=/proc"], ",") > 60 {
		t.Errorf("probe %v", res)
	}
	if out["sandbox"] != SandboxFull || !slices.Contains(out["sandbox_layers"].([]string), SandboxLayerUserNS) {
		t.Errorf("payload %v", out)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".harness"} {
		if _, err := os.Lstat(filepath.Join(e.root, p)); err == nil {
			t.Errorf("%s was written", p)
		}
	}

	readOnly := os.Getenv("HARNESS_SANDBOX_UNPRIVILEGED")
	opts := DefaultOptions()
	opts.Sandbox, opts.HelperPath = SandboxRequired, os.Args[0]
	w, err := New(readOnly, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ro, err := w.Run(context.Background(), action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "make"}})
	if err != nil || ro["stdout"] != "read\n" {
		t.Fatalf("a command in a root the service cannot write: %v %v", ro, err)
	}
	if _, err := os.Lstat(filepath.Join(readOnly, ".git")); err == nil {
		t.Error(".git exists in the read-only root")
	}
}
