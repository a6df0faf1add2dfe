package attack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
)

// sentinel is put in Harness's own environment; no command may see it.
const sentinel = "HARNESS_ATTACK_SENTINEL_5b7e0c"

var binDir string

func TestMain(m *testing.M) {
	if runtime.GOOS != "linux" {
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "harness-attack-bin-")
	if err != nil {
		panic(err)
	}
	for _, c := range []string{"harness", "harness-sandbox"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, c), "../../cmd/"+c)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			panic(fmt.Sprintf("build %s: %v\n%s", c, err, out))
		}
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// recipe is a Makefile whose default target attacks; what it prints comes
// back in the observation.
const recipe = `all:
	-cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep ` + "HARNESS_ATTACK" + ` ; true
	-cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' ' ' ; echo
	-ls /proc | grep -c '^[0-9]' ; true
	-mkdir -p .git/hooks 2>&1; echo 'touch PWNED' > .git/hooks/pre-commit 2>&1 ; true
	-mkdir -p .harness 2>&1; echo x > .harness/config.yaml 2>&1 ; true
	-mkdir -p planted/.git/hooks 2>&1; echo 'touch PWNED' > planted/.git/hooks/pre-commit 2>&1 ; true
	-echo 'touch PWNED' > nested/.git/hooks/pre-commit 2>&1 ; true
	-mv nested/.git nested/.git-old 2>&1; mkdir -p nested/.git/hooks; echo 'touch PWNED' > nested/.git/hooks/post-checkout 2>&1 ; true
	-mkdir -p Deep/.GIT 2>&1; echo x > Deep/.GIT/config 2>&1 ; true
	-cat /etc/shadow 2>&1 | head -c 200 ; true
	-setsid sh -c 'touch DETACHED; sleep 1; touch LATE' > /dev/null 2>&1 &
	-i=0; while [ ! -f DETACHED ] && [ $$i -lt 200 ]; do sleep 0.05; i=$$((i+1)); done
	@echo recipe-done
`

// workspace makes a root with a git repository and the hostile Makefile,
// and returns the root and a config file for it.
func workspace(t *testing.T) (root, cfg string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A repository nested below the root, as a vendored or sibling project.
	if err := os.MkdirAll(filepath.Join(root, "nested", ".git", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "Makefile"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("HARNESS_CONFIG", "")
	t.Setenv(sentinel, "the-service-secret")
	cfg = filepath.Join(dir, "cfg.yaml")
	yaml := fmt.Sprintf("harness:\n  workspace:\n    root: %s\n    sandbox: %s\n  audit:\n    path: %s\n", root, sandboxMode, filepath.Join(dir, "audit.jsonl"))
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return root, cfg
}

// check asserts what must hold after the recipe ran.
func check(t *testing.T, root, output string) {
	t.Helper()
	if !strings.Contains(output, "recipe-done") {
		t.Fatalf("the recipe did not run: %.500s", output)
	}
	if strings.Contains(output, "the-service-secret") || strings.Contains(output, sentinel+"=") {
		t.Errorf("a command read Harness's environment: %.500s", output)
	}
	if strings.Contains(output, "harness serve") || strings.Contains(output, "attack.test") {
		t.Errorf("a command read another process's command line: %.500s", output)
	}
	if strings.Contains(output, "root:") {
		t.Errorf("a command read /etc/shadow: %.500s", output)
	}
	for _, p := range []string{".git/hooks/pre-commit", ".harness/config.yaml",
		"planted/.git", "nested/.git/hooks/pre-commit", "nested/.git/hooks/post-checkout", "nested/.git-old", "Deep/.GIT"} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("a command wrote %s", p)
		}
	}
	time.Sleep(2 * time.Second)
	if _, err := os.Stat(filepath.Join(root, "LATE")); err == nil {
		t.Error("a child that called setsid outlived the action and wrote to the workspace")
	}
}

func output(obs map[string]any) string {
	p, _ := obs["payload"].(map[string]any)
	b, _ := json.Marshal(p)
	return fmt.Sprint(obs["status"], " ", obs["code"], " ", obs["message"], " ", string(b))
}

func TestAttacksThroughTheCLI(t *testing.T) {
	root, cfg := workspace(t)
	cmd := exec.Command(filepath.Join(binDir, "harness"), "run", "workspace_run_shell", "--input", `{"command":"make"}`, "--trusted", "--config", cfg)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	_ = cmd.Run()
	var obs map[string]any
	if err := json.Unmarshal(out.Bytes(), &obs); err != nil {
		t.Fatalf("not an observation: %s %s", out.String(), errb.String())
	}
	check(t, root, output(obs))
}

func TestAttacksThroughHTTP(t *testing.T) {
	root, cfg := workspace(t)
	const key = "attack-test-key-0001"
	sum := sha256.Sum256([]byte(key))
	data, _ := os.ReadFile(cfg)
	data = append(data, []byte(fmt.Sprintf("  auth:\n    keys:\n      - {principal: a, sha256: %q, permissions: [agent:execute, agent:trusted]}\n", hex.EncodeToString(sum[:])))...)
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := exec.Command(filepath.Join(binDir, "harness"), "serve", "--config", cfg, "--addr", addr)
	var logs bytes.Buffer
	srv.Stderr = &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	base := "http://" + addr
	for i := 0; i < 100; i++ {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	post := func(path string, body string) map[string]any {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v\n%s", path, err, logs.String())
		}
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return m
	}
	pv := post("/v1/actions/preview", `{"name":"workspace_run_shell","input":{"command":"make"}}`)
	tok, _ := pv["token"].(string)
	if tok == "" {
		t.Fatalf("preview: %v", pv)
	}
	check(t, root, output(post("/v1/actions/execute/"+tok, "")))
}

func TestAttacksThroughTheLibrary(t *testing.T) {
	root, cfgPath := workspace(t)
	cfg, err := config.LoadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{HelperPath: filepath.Join(binDir, "harness-sandbox")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	obs := p.Execute(context.Background(), action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "make"}, Trusted: true})
	raw, _ := json.Marshal(obs)
	var m map[string]any
	json.Unmarshal(raw, &m)
	check(t, root, output(m))
}

// sandboxMode is "required" except in TestTheChecksCatchAnUnsandboxedRun.
var sandboxMode = "required"

// The checks are not vacuous: without the sandbox the same recipe reads
// the service's environment, plants the hook and outlives the action.
func TestTheChecksCatchAnUnsandboxedRun(t *testing.T) {
	sandboxMode = "off"
	defer func() { sandboxMode = "required" }()
	root, cfg := workspace(t)
	cmd := exec.Command(filepath.Join(binDir, "harness"), "run", "workspace_run_shell", "--input", `{"command":"make"}`, "--trusted", "--config", cfg)
	var out bytes.Buffer
	cmd.Stdout = &out
	_ = cmd.Run()
	var obs map[string]any
	if err := json.Unmarshal(out.Bytes(), &obs); err != nil {
		t.Fatalf("not an observation: %s", out.String())
	}
	got := output(obs)
	if !strings.Contains(got, "the-service-secret") {
		t.Error("without the sandbox the recipe should read the sentinel from the service's environment")
	}
	for _, p := range []string{".git/hooks/pre-commit", "planted/.git/hooks/pre-commit", "nested/.git/hooks/post-checkout"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("without the sandbox the recipe should plant %s", p)
		}
	}
	// The recipe waits until the child is in a session of its own (before
	// that, ending the action's process group ends it too); the child
	// then sleeps a second before it writes.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(root, "LATE")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("without the sandbox the setsid child should outlive the action: %.3000s", out.String())
			break
		}
	}
}
