package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
)

// Under the dev profile's default rules a read of .env ends
// needs_confirmation (an approval waits, nothing was read), a write to CI
// configuration is refused, and the rest runs as before: through
// pipeline.Open and Harness.Execute, as every entry point does.
func TestDefaultRulesAskBeforeReadingDotEnvAndRefuseCIWrites(t *testing.T) {
	home(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, ".env"), []byte("TOKEN=sk-live-1234\n"), 0o644)
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644)
	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()

	obs := p.Execute(ctx, action.Action{Name: "workspace_read_file", Input: map[string]any{"path": ".env"}})
	if obs.Status != action.StatusNeedsConfirmation || obs.Code != action.CodeApprovalRequired {
		t.Fatalf("read .env: %s", obs.JSON())
	}
	if obs.Decision == nil || obs.Decision.Step != "rules" || obs.Decision.Rule != "dev-secret-files" || obs.Decision.Outcome != "ask" {
		t.Fatalf("decision: %+v", obs.Decision)
	}
	if obs.Approval == nil || obs.Approval.ID == "" {
		t.Fatalf("no approval waits: %s", obs.JSON())
	}
	if strings.Contains(string(obs.JSON()), "sk-live-1234") {
		t.Fatal("the file was read")
	}

	// Trust does not skip a rule: a trusted caller's read is asked too.
	obs = p.Execute(ctx, action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "./.env"}, Trusted: true})
	if obs.Status != action.StatusNeedsConfirmation {
		t.Fatalf("trusted read of ./.env: %s", obs.JSON())
	}

	obs = p.Execute(ctx, action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "main.go"}})
	if obs.Status != action.StatusOK || obs.Decision != nil {
		t.Fatalf("read main.go: %s", obs.JSON())
	}

	for _, in := range []map[string]any{
		{"path": ".github/workflows/ci.yml", "content": "on: push\n"},
		{"patch": "--- /dev/null\n+++ b/.github/workflows/ci.yml\n@@ -0,0 +1 @@\n+on: push\n"},
	} {
		obs = p.Execute(ctx, action.Action{Name: "workspace_apply_patch", Input: in, Trusted: true})
		if obs.Code != action.CodeRuleDenied || obs.Source != action.SourcePolicy || obs.Decision == nil || obs.Decision.Rule != "dev-ci-config" {
			t.Fatalf("CI write %v: %s", in, obs.JSON())
		}
	}
	if _, err := os.Stat(filepath.Join(root, ".github")); err == nil {
		t.Fatal("the CI configuration was written")
	}
}

// A configuration whose rules do not hold is refused by Open, naming the
// rule, so that a program that builds its configuration in Go cannot
// start with a rule that does not do what its author meant.
func TestOpenRefusesRulesThatContradictTheirExamples(t *testing.T) {
	home(t)
	cfg := config.Default()
	cfg.Harness.Workspace.Root = t.TempDir()
	cfg.Harness.Rules = []config.RuleConfig{{ID: "wrong-glob", When: `glob(path, "*.pem")`, Outcome: "deny",
		Examples: config.RuleExamples{Match: []map[string]any{{"path": "deep/key.pem"}}}}}
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
	if err == nil {
		p.Close()
		t.Fatal("opened")
	}
	if !strings.Contains(err.Error(), "harness.rules") || !strings.Contains(err.Error(), "wrong-glob") {
		t.Fatalf("err = %v", err)
	}
}
