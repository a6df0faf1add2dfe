package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/audit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigCheck runs harness config check end to end and compares its
// output with golden files (go test ./cmd/harness -run TestConfigCheck
// -update). Temporary paths read $TMP, the test's home $HOME and the host
// name $HOST.
func TestConfigCheck(t *testing.T) {
	const secrets = `harness:
  trusted: {store: "redis://:redis-pw@127.0.0.1:6379/0"}
  auth:
    keys:
      - {principal: alice, sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, permissions: [agent:execute]}
  mcp:
    servers:
      tools:
        command: [node, server.js, --api-key, key-in-argv]
        tools: [search]
        env: {API_KEY: key-in-env, FROM_ENV: "${TOOLS_TOKEN}"}
        register-tools: true
  auto-approved-actions: [workspace_read_file, mcp.tools.search]
`
	const bad = `harness:
  profile: staging
  disabled-actions: [workspace_serch_text]
  workspace:
    write-enabeld: false
    command-timeout-seconds: ten
    allowed-commands: ls
  mcp:
    servers:
      tools: {tools: [search]}
`
	cases := []struct {
		name  string
		files map[string]string // relative to the test's directory
		env   map[string]string
		args  func(dir string) []string
		exit  int
	}{
		{"workspace-file", map[string]string{"root/.harness/config.yaml": "harness:\n  disabled-actions: [workspace_run_shell]\n"}, nil,
			func(d string) []string { return []string{"config", "check", "--root", filepath.Join(d, "root")} }, exitOK},
		{"defaults", nil, nil,
			func(d string) []string { return []string{"config", "check", "--root", filepath.Join(d, "root")} }, exitOK},
		{"flag-secrets-hidden", map[string]string{"c.yaml": secrets}, nil,
			func(d string) []string {
				return []string{"config", "check", "--config", filepath.Join(d, "c.yaml"), "--root", filepath.Join(d, "root")}
			}, exitOK},
		{"env-override", map[string]string{"env.yaml": "harness: {}\n"}, map[string]string{"HARNESS_CONFIG": "$TMP/env.yaml", "HARNESS_PROFILE": "production"},
			func(d string) []string { return []string{"config", "check", "--root", filepath.Join(d, "root")} }, exitOK},
		{"problems", map[string]string{"root/.harness/config.yaml": bad}, nil,
			func(d string) []string { return []string{"config", "check", "--root", filepath.Join(d, "root")} }, exitUsage},
		{"audit-inside-root", map[string]string{"c.yaml": "harness:\n  audit: {path: $TMP/root/audit.jsonl}\n"}, nil,
			func(d string) []string {
				return []string{"config", "check", "--config", filepath.Join(d, "c.yaml"), "--root", filepath.Join(d, "root")}
			}, exitUsage},
		{"workspace-file-loosens", map[string]string{"root/.harness/config.yaml": "harness:\n  workspace: {sandbox: \"off\"}\n"}, nil,
			func(d string) []string { return []string{"config", "check", "--root", filepath.Join(d, "root")} }, exitUsage},
		{"missing-file", nil, nil,
			func(d string) []string { return []string{"config", "check", "--config", filepath.Join(d, "nope.yaml")} }, exitUsage},
		{"no-sub-command", nil, nil, func(string) []string { return []string{"config"} }, exitUsage},
		{"unknown-sub-command", nil, nil, func(string) []string { return []string{"config", "show"} }, exitUsage},
	}
	host := audit.DefaultInstance()
	home := os.Getenv("HOME")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "root"), 0o755))
			for rel, text := range tc.files {
				p := filepath.Join(dir, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(text, "$TMP", dir)), 0o600))
			}
			t.Setenv("HARNESS_CONFIG", "")
			for k, v := range tc.env {
				t.Setenv(k, strings.ReplaceAll(v, "$TMP", dir))
			}
			code, stdout, stderr := runCLI(tc.args(dir)...)
			assert.Equal(t, tc.exit, code, "stdout: %s\nstderr: %s", stdout, stderr)
			for _, secret := range []string{"redis-pw", "key-in-argv", "key-in-env"} {
				assert.NotContains(t, stdout+stderr, secret)
			}
			text := "exit: " + strconv.Itoa(code) + "\n-- stdout --\n" + stdout + "-- stderr --\n" + stderr
			text = strings.ReplaceAll(text, dir, "$TMP")
			text = strings.ReplaceAll(text, home, "$HOME")
			text = strings.ReplaceAll(text, "instance: "+host+"\n", "instance: $HOST\n")
			golden := filepath.Join("testdata", "config_"+tc.name+".golden")
			if *update {
				require.NoError(t, os.WriteFile(golden, []byte(text), 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run go test ./cmd/harness -run TestConfigCheck -update")
			assert.Equal(t, string(want), text, "output differs from %s", golden)
		})
	}
}

// The configuration found in the workspace root is the one every command
// uses: a disabled action is refused, and a misspelt action name stops
// the command (exit 2) naming the real one.
func TestCommandsDiscoverTheWorkspaceConfig(t *testing.T) {
	t.Setenv("HARNESS_CONFIG", "")
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".harness"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# hi\n"), 0o644))
	cfg := filepath.Join(dir, ".harness", "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("harness:\n  disabled-actions: [workspace_search_text]\n"), 0o600))

	for _, how := range []string{"--root", "current directory"} {
		t.Run(how, func(t *testing.T) {
			args := []string{"run", "workspace_search_text", "--input", `{"query":"hi"}`}
			if how == "--root" {
				args = append(args, "--root", dir)
			} else {
				t.Chdir(dir)
			}
			code, stdout, stderr := runCLI(args...)
			assert.Equal(t, exitBlocked, code, stderr)
			var obs struct{ Code string }
			require.NoError(t, json.Unmarshal([]byte(stdout), &obs), stdout)
			assert.Equal(t, "action_disabled", obs.Code, "the workspace's config was not read")
		})
	}

	require.NoError(t, os.WriteFile(cfg, []byte("harness:\n  disabled-actions: [workspace_serch_text]\n"), 0o600))
	for _, args := range [][]string{
		{"run", "workspace_read_file", "--input", `{"path":"README.md"}`, "--root", dir},
		{"schema", "list", "--config", cfg},
		{"config", "check", "--root", dir},
	} {
		code, stdout, stderr := runCLI(args...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stdout)
		assert.Empty(t, stdout, "%v", args)
		assert.Contains(t, stderr, cfg+": 1 problem(s):\n  line 2: harness.disabled-actions[0]: \"workspace_serch_text\" is not a registered action; did you mean workspace_search_text?", "%v", args)
	}
}
