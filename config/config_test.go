package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultConfigIsDevWithSpecValues(t *testing.T) {
	c := Default()
	h := c.Harness
	if h.Profile != "dev" || !Bool(h.TrustedRuntimeEnabled) || !Bool(h.Workspace.WriteEnabled) || !Bool(h.Workspace.ShellEnabled) {
		t.Fatalf("dev defaults wrong: %+v", h)
	}
	if h.Workspace.Root != "." || h.Workspace.CommandTimeoutSeconds != 10 || h.Workspace.MaxCommandOutputBytes != 12000 ||
		h.Workspace.MaxFileBytes != 20000 || h.Workspace.MaxSearchFiles != 1000 || h.Trusted.TokenTTLSeconds != 300 ||
		h.Trusted.Store != "memory" || h.Audit.Path != DefaultAuditPath() || !strings.HasSuffix(h.Audit.Path, "/harness/audit.jsonl") {
		t.Fatalf("SPEC defaults wrong: %+v", h)
	}
	if strings.Join(h.Workspace.AllowedCommands, ",") != "pwd,ls,rg,git,go,make" {
		t.Fatalf("allowed commands %v", h.Workspace.AllowedCommands)
	}
}

func TestProductionProfileTurnsDangerOff(t *testing.T) {
	c, err := Parse("prod.yaml", []byte("harness:\n  profile: production\n"))
	if err != nil {
		t.Fatal(err)
	}
	h := c.Harness
	if Bool(h.TrustedRuntimeEnabled) || Bool(h.Workspace.WriteEnabled) || Bool(h.Workspace.ShellEnabled) || h.Workspace.Sandbox != "required" {
		t.Fatalf("production left something on: %+v", h)
	}
	c, err = Parse("prod.yaml", []byte("harness:\n  profile: production\n  trusted-runtime-enabled: true\n  workspace:\n    write-enabled: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !Bool(c.Harness.TrustedRuntimeEnabled) || !Bool(c.Harness.Workspace.WriteEnabled) || Bool(c.Harness.Workspace.ShellEnabled) {
		t.Fatal("explicit settings not honoured in production")
	}
}

func TestBadConfigListsEveryProblem(t *testing.T) {
	bad := `harness:
  profile: staging
  auto-approved-actions: [workspace_read_file]
  disabled-actions: [workspace_read_file]
  workspace:
    command-timeout-seconds: -1
    allowed-commands: [/bin/sh]
    sandbox: maybe
  trusted:
    store: mongodb://x
  auth:
    keys:
      - {principal: "", sha256: "abc", permissions: [root]}
  mcp:
    servers:
      broken: {tools: [x]}
`
	_, err := Parse("bad.yaml", []byte(bad))
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("want *ConfigError, got %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"bad.yaml",
		"harness.profile", "harness.workspace.command-timeout-seconds", "harness.workspace.allowed-commands[0]",
		"harness.workspace.sandbox", "harness.trusted.store", "harness.auth.keys[0].principal",
		"harness.auth.keys[0].sha256", "harness.auth.keys[0].permissions[0]", "harness.auto-approved-actions",
		"harness.mcp.servers.broken: set command or url",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("problems do not name %s:\n%s", want, msg)
		}
	}
}

func TestUnknownKeyIsAProblem(t *testing.T) {
	_, err := Parse("typo.yaml", []byte("harness:\n  workspace:\n    wirte-enabled: false\n"))
	if err == nil || !strings.Contains(err.Error(), "wirte-enabled") {
		t.Fatalf("typo accepted or not named: %v", err)
	}
}

func TestLoadFileMissingAndEnv(t *testing.T) {
	if _, err := LoadFile(filepath.Join(t.TempDir(), "nope.yaml")); err == nil {
		t.Fatal("missing file accepted")
	}
	t.Setenv("HARNESS_PROFILE", "production")
	c, err := LoadFile("")
	if err != nil {
		t.Fatal(err)
	}
	if c.Harness.Profile != "production" {
		t.Fatal("HARNESS_PROFILE ignored")
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("harness:\n  workspace:\n    root: /tmp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HARNESS_WORKSPACE_ROOT", "/srv")
	c, err = LoadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Harness.Workspace.Root != "/srv" {
		t.Fatalf("env override lost: %s", c.Harness.Workspace.Root)
	}
}

func TestMCPServerEnv(t *testing.T) {
	c, err := Parse("env.yaml", []byte("harness:\n  mcp:\n    servers:\n      fs:\n        command: [srv]\n        env: {API_TOKEN: \"${TOKEN}\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Harness.MCP.Servers["fs"].Env["API_TOKEN"] != "${TOKEN}" {
		t.Fatalf("env %v", c.Harness.MCP.Servers["fs"].Env)
	}
	if _, err := Parse("env.yaml", []byte("harness:\n  mcp:\n    servers:\n      fs:\n        command: [srv]\n        env: {\"A=B\": x}\n")); err == nil {
		t.Fatal("a variable name with '=' accepted")
	}
}
