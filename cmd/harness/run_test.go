package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// testConfig writes a configuration with a workspace and an audit log in a
// temporary directory and returns its path and the workspace root.
func testConfig(t *testing.T, extra string) (cfgPath, root string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(dir, "cfg.yaml")
	cfg := "harness:\n  workspace:\n    root: " + root + "\n  audit:\n    path: " + filepath.Join(dir, "audit.jsonl") +
		"\n  sanitize:\n    key-path: " + filepath.Join(dir, "hmac.key") + "\n" + extra
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, root
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func TestRunExitCodes(t *testing.T) {
	cfg, _ := testConfig(t, "")
	cases := []struct {
		name     string
		args     []string
		exit     int
		code     string
		inStderr string
	}{
		{"unknown action", []string{"run", "no_such_action", "--input", "{}"}, exitBlocked, "unknown_action", "unknown_action"},
		{"invalid input names the field", []string{"run", "workspace_read_file", "--input", `{"path": 42}`, "--trusted"}, exitBlocked, "invalid_input", "input.path"},
		{"trust required", []string{"run", "workspace_apply_patch", "--input", `{"path":"a.txt","content":"x"}`}, exitBlocked, "trust_required", "--trusted"},
		{"a read is auto-approved in dev", []string{"run", "workspace_read_file", "--input", `{"path":"a.txt"}`}, exitOK, "", ""},
		{"trusted read", []string{"run", "workspace_read_file", "--input", `{"path":"a.txt"}`, "--trusted"}, exitOK, "", ""},
		{"escape", []string{"run", "workspace_read_file", "--input", `{"path":"../../etc/passwd"}`, "--trusted"}, exitBlocked, "path_outside_root", ""},
		{"missing file is an action error", []string{"run", "workspace_read_file", "--input", `{"path":"nope.txt"}`, "--trusted"}, exitActionError, "not_found", ""},
		{"flags before the action", []string{"run", "--trusted", "--input", `{"path":"a.txt"}`, "workspace_read_file"}, exitOK, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(append(tc.args, "--config", cfg)...)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d; stdout %s stderr %s", code, tc.exit, out, errOut)
			}
			var obs map[string]any
			if err := json.Unmarshal([]byte(out), &obs); err != nil {
				t.Fatalf("stdout is not one JSON observation: %q", out)
			}
			if obs["code"] != tc.code {
				t.Fatalf("code %v, want %q", obs["code"], tc.code)
			}
			if !strings.Contains(errOut, tc.inStderr) {
				t.Fatalf("stderr %q lacks %q", errOut, tc.inStderr)
			}
		})
	}
}

// TestRunAskExitsFourWithTheApprovalID: an action a rule asks about
// prints its needs_confirmation observation and exits 4, naming the
// approval on stderr.
func TestRunAskExitsFourWithTheApprovalID(t *testing.T) {
	cfg, root := testConfig(t, "  rules:\n    - {id: ask-writes, actions: [workspace_apply_patch], outcome: ask, reason: a person looks first}\n")
	code, out, errOut := runCLI("run", "workspace_apply_patch", "--input", `{"path":"a.txt","content":"x\n"}`, "--config", cfg)
	if code != 4 {
		t.Fatalf("exit %d, want 4; stdout %s stderr %s", code, out, errOut)
	}
	var obs struct {
		Status, Code string
		Approval     struct{ ID string }
	}
	if err := json.Unmarshal([]byte(out), &obs); err != nil {
		t.Fatalf("stdout is not one JSON observation: %q", out)
	}
	if obs.Status != "needs_confirmation" || obs.Code != "approval_required" || !strings.HasPrefix(obs.Approval.ID, "apr_") {
		t.Fatalf("observation %s", out)
	}
	if !strings.Contains(errOut, "approval "+obs.Approval.ID+" waits") {
		t.Fatalf("stderr %q does not name approval %s", errOut, obs.Approval.ID)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "hello\n" {
		t.Fatalf("the change ran: %q", b)
	}
}

func TestRunUsageErrors(t *testing.T) {
	cfg, _ := testConfig(t, "")
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("harness:\n  profile: staging\n  workspace:\n    sandbox: maybe\n"), 0o600)
	cases := []struct {
		name     string
		args     []string
		inStderr []string
	}{
		{"no action", []string{"run", "--config", cfg}, []string{"ACTION"}},
		{"two actions", []string{"run", "a", "b", "--config", cfg}, []string{"ACTION"}},
		{"input not JSON", []string{"run", "x", "--input", "{nope", "--config", cfg}, []string{"not a JSON object"}},
		{"input not an object", []string{"run", "x", "--input", "[1]", "--config", cfg}, []string{"not a JSON object"}},
		{"both inputs", []string{"run", "x", "--input", "{}", "--input-file", "f", "--config", cfg}, []string{"not both"}},
		{"bad config lists every problem", []string{"run", "x", "--config", bad}, []string{"harness.profile", "harness.workspace.sandbox", bad}},
		{"unknown flag", []string{"run", "x", "--frobnicate"}, []string{"frobnicate"}},
		{"unknown command", []string{"frobnicate"}, []string{"unknown command"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(tc.args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2; stderr %s", code, errOut)
			}
			if out != "" {
				t.Fatalf("usage error wrote to stdout: %q", out)
			}
			for _, w := range tc.inStderr {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}

func TestEveryCommandHasHelp(t *testing.T) {
	for name, c := range commands {
		if c.hidden {
			continue
		}
		t.Run(name, func(t *testing.T) {
			code, _, errOut := runCLI(name, "--help")
			if code != exitOK {
				t.Fatalf("%s --help exit %d", name, code)
			}
			if !strings.Contains(errOut, "Usage") && !strings.Contains(errOut, "usage") {
				t.Fatalf("%s --help printed no usage: %q", name, errOut)
			}
		})
	}
}

var volatile = regexp.MustCompile(`act-[0-9a-f]{12}-\d+|"latency_ms":[0-9.e-]+`)

// TestRunGolden pins the observation JSON a user scripts against.
func TestRunGolden(t *testing.T) {
	cfg, _ := testConfig(t, "")
	cases := map[string][]string{
		"run_unknown_action": {"run", "no_such_action", "--input", "{}"},
		"run_read_file":      {"run", "workspace_read_file", "--input", `{"path":"a.txt"}`, "--trusted"},
		"schema_list":        {"schema", "list"},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			_, out, _ := runCLI(append(args, "--config", cfg)...)
			got := volatile.ReplaceAllStringFunc(out, func(s string) string {
				if strings.HasPrefix(s, "act-") {
					return "act-ID"
				}
				return `"latency_ms":0`
			})
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				os.MkdirAll("testdata", 0o755)
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/harness -run TestRunGolden -update)", err)
			}
			if got != string(want) {
				t.Fatalf("output differs from %s:\n got: %s\nwant: %s", golden, got, want)
			}
		})
	}
}

func TestSchemaShow(t *testing.T) {
	code, out, _ := runCLI("schema", "show", "workspace_run_shell")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var sc map[string]any
	if err := json.Unmarshal([]byte(out), &sc); err != nil {
		t.Fatal(err)
	}
	if sc["name"] != "workspace_run_shell" || sc["risk"] != "exec" || sc["input_schema"] == nil {
		t.Fatalf("schema %v", sc)
	}
	if code, _, errOut := runCLI("schema", "show", "nope"); code != exitActionError || !strings.Contains(errOut, "nope") {
		t.Fatalf("unknown action: exit %d %s", code, errOut)
	}
}
