package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// TestRulesProblemsHaveTheirLineAndRule: a file's rules are compiled when
// it is read; each problem is placed at its key's line and names its rule,
// all of them in one pass with the file's other problems.
func TestRulesProblemsHaveTheirLineAndRule(t *testing.T) {
	const file = `harness:
  rules-mode: loosest
  rules:
    - id: no-pem
      actions: [workspace_read_fil]
      when: 'glob(path, "**/*.pem")'
      outcome: deny
    - id: wrong-glob
      when: 'glob(path, "*.pem")'
      outcome: deny
      examples: {match: [{path: a.pem}, {path: deep/dir/key.pem}]}
    - id: typo
      when: 'pth == ".env"'
      outcome: block
    - when: 'true'
      outcome: ask
  workspace:
    write-enabeld: false
`
	_, err := Parse("h.yaml", []byte(file))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{
		`line 2: harness.rules-mode: "loosest" is not one of: first-match strictest`,
		`line 5: harness.rules[0].actions[0]: "workspace_read_fil" is not a registered action; did you mean workspace_read_file?`,
		`line 11: harness.rules[1].examples.match[1]: rule wrong-glob: {path: deep/dir/key.pem} is an example the rule must match, but it does not`,
		`line 13: harness.rules[2].when: rule typo: column 1: undeclared reference to 'pth' (did you mean 'path'?)`,
		`line 14: harness.rules[2].outcome: rule typo: "block" is not one of: allow ask deny`,
		`line 15: harness.rules[3].id: rule #3: is required`,
		`line 18: harness.workspace.write-enabeld: unknown key; did you mean write-enabled?`,
	}, ce.Problems)
}

func TestRulesOfAFile(t *testing.T) {
	c, err := Parse("h.yaml", []byte(`harness:
  rules-mode: strictest
  rules:
    - id: ask-push
      actions: [workspace_run_shell]
      when: 'argv.startsWith(["git", "push"])'
      outcome: ask
      reason: a person pushes
      examples:
        match: [{command: git push origin main}]
        not_match: [{command: git status}]
`))
	require.NoError(t, err)
	require.Len(t, c.Harness.Rules, 1, "a file's rules replace the defaults")
	s, err := c.RuleSet(schema.Catalog())
	require.NoError(t, err)
	assert.Equal(t, policy.Strictest, s.Mode())
	d := s.Decide(context.Background(), &policy.Request{Action: action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "git push"}}})
	assert.Equal(t, "ask-push", d.Rule)
	assert.Contains(t, d.Message, "a person pushes")
}

// The dev profile asks before secret files are read or written and
// refuses changes to CI configuration; the defaults' own examples hold
// (RuleSet checks them), a file replaces them, [] removes them, and
// production has none.
func TestDevDefaultRules(t *testing.T) {
	dev := Default()
	s, err := dev.RuleSet(schema.Catalog())
	require.NoError(t, err, "the default rules' own examples")
	require.Equal(t, 3, s.Len())

	decide := func(a action.Action) policy.Decision {
		return s.Decide(context.Background(), &policy.Request{Action: a})
	}
	for _, p := range []string{".env", ".env.local", "app/.env.production", "certs/server.pem", ".ssh/id_rsa", ".ssh/id_ed25519.pub",
		".npmrc", "home/.netrc", "aws/credentials", "vault.kdbx", "tls/server.key", ".git-credentials", ".docker/config.json"} {
		for _, name := range []string{"workspace_read_file", "workspace_search_text", "workspace_propose_patch"} {
			d := decide(action.Action{Name: name, Input: map[string]any{"path": p}})
			assert.Equal(t, policy.Ask, d.Outcome, "%s %s", name, p)
			assert.Equal(t, "dev-secret-files", d.Rule, "%s %s", name, p)
		}
	}
	for _, p := range []string{"main.go", "README.md", "docs/environment.md", "src/keys.go", "env/x"} {
		assert.True(t, decide(action.Action{Name: "workspace_read_file", Input: map[string]any{"path": p}}).Allowed(), p)
	}
	for _, cmd := range []string{"git diff .env", "git show HEAD -- config/.env", "rg TOKEN .npmrc"} {
		assert.Equal(t, "dev-secret-args", decide(action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": cmd}}).Rule, cmd)
	}
	assert.True(t, decide(action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "go test ./..."}}).Allowed())

	ci := []map[string]any{
		{"path": ".github/workflows/ci.yml", "content": "x"},
		{"path": "./.github//workflows/release.yaml", "content": "x"},
		{"path": ".gitlab-ci.yml", "content": "x"},
		{"path": ".circleci/config.yml", "content": "x"},
		{"path": "Jenkinsfile", "content": "x"},
		{"patch": "--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -1 +1 @@\n-a\n+b\n"},
		{"patch": "--- a/main.go\n+++ b/main.go\n@@ -1 +1 @@\n-a\n+b\n--- a/.github/actions/setup/action.yml\n+++ b/.github/actions/setup/action.yml\n@@ -1 +1 @@\n-a\n+b\n"},
		{"patch": "*** Begin Patch\n*** Add File: .github/workflows/new.yml\n+on: push\n*** End Patch\n"},
		{"patch": "diff --git a/x.yml b/.travis.yml\nrename from x.yml\nrename to .travis.yml\n"},
	}
	for _, in := range ci {
		d := decide(action.Action{Name: "workspace_apply_patch", Input: in})
		assert.Equal(t, action.CodeRuleDenied, d.Code, "%v", in)
		assert.Equal(t, "dev-ci-config", d.Rule, "%v", in)
	}
	assert.True(t, decide(action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "main.go", "content": "x"}}).Allowed())
	assert.True(t, decide(action.Action{Name: "workspace_propose_patch", Input: map[string]any{"path": ".github/workflows/ci.yml", "content": "x"}}).Allowed(),
		"proposing a diff writes nothing")

	none, err := Parse("h.yaml", []byte("harness:\n  rules: []\n"))
	require.NoError(t, err)
	assert.Empty(t, none.Harness.Rules, "rules: [] removes the defaults")
	prod, err := Parse("h.yaml", []byte("harness:\n  profile: production\n"))
	require.NoError(t, err)
	assert.Empty(t, prod.Harness.Rules)
	assert.Equal(t, RulesFirstMatch, dev.Harness.RulesMode)
}

// A file in the workspace root may add deny and ask rules, after the
// defaults, but not allow rules, not take the defaults away, not choose
// first-match, and not exempt anything from redaction (redact: false).
func TestWorkspaceFileRulesOnlyTighten(t *testing.T) {
	cases := []struct {
		name, yaml string
		refused    string
		ids        []string
	}{
		{"a deny rule", "harness:\n  rules:\n    - {id: no-sql, when: 'glob(path, \"**/*.sql\")', outcome: deny}\n", "",
			[]string{"dev-secret-files", "dev-secret-args", "dev-ci-config", "no-sql"}},
		{"an empty list", "harness:\n  rules: []\n", "", []string{"dev-secret-files", "dev-secret-args", "dev-ci-config"}},
		{"a default's id", "harness:\n  rules:\n    - {id: dev-ci-config, outcome: ask, when: 'false'}\n", "", []string{"dev-secret-files", "dev-secret-args", "dev-ci-config"}},
		{"strictest", "harness:\n  rules-mode: strictest\n", "", []string{"dev-secret-files", "dev-secret-args", "dev-ci-config"}},
		{"production, no defaults", "harness:\n  profile: production\n  rules:\n    - {id: x, outcome: ask}\n", "", []string{"x"}},
		{"an allow rule", "harness:\n  rules:\n    - {id: ok, outcome: allow}\n", "harness.rules", nil},
		{"an ask rule with redact: false", "harness:\n  rules:\n    - {id: show-all, outcome: ask, redact: false}\n", "redact: false", nil},
		{"an ask rule with redact: true", "harness:\n  rules:\n    - {id: x, outcome: ask, when: 'false', redact: true}\n", "",
			[]string{"dev-secret-files", "dev-secret-args", "dev-ci-config", "x"}},
		{"first-match", "harness:\n  rules-mode: first-match\n", "harness.rules-mode", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			t.Setenv("HARNESS_CONFIG", "")
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			require.NoError(t, os.MkdirAll(filepath.Join(root, ".harness"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, WorkspaceFile), []byte(c.yaml), 0o644))
			cfg, err := Load("", root)
			if c.refused != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.refused)
				assert.Contains(t, err.Error(), "inside the workspace")
				return
			}
			require.NoError(t, err)
			var ids []string
			for _, r := range cfg.Harness.Rules {
				ids = append(ids, r.ID)
			}
			assert.Equal(t, c.ids, ids)
			_, err = cfg.RuleSet(schema.Catalog())
			require.NoError(t, err)
		})
	}
}

// A configuration built in Go is checked by Validate and by RuleSet, which
// the pipeline calls.
func TestRulesOfAConfigBuiltInGo(t *testing.T) {
	c := Default()
	c.Harness.Rules = append(c.Harness.Rules, RuleConfig{ID: "bad", When: "glob(path,", Outcome: "deny"})
	err := c.Validate("")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "harness.rules[3].when: rule bad:")
	_, err = c.RuleSet(schema.Catalog())
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "rule bad: when:"), err.Error())
}

// TestRulesRedactFalse: a rule's redact: false reaches the guard (the
// deciding rule marks the request unredacted); on a deny rule it is a
// problem at its own line, in the configuration's terms.
func TestRulesRedactFalse(t *testing.T) {
	c, err := Parse("h.yaml", []byte(`harness:
  redact-observations: true
  rules:
    - id: fixtures-as-written
      actions: [workspace_read_file]
      when: 'glob(path, "testdata/**")'
      outcome: allow
      redact: false
      examples: {match: [{path: testdata/keys.txt}], not_match: [{path: main.go}]}
`))
	require.NoError(t, err)
	s, err := c.RuleSet(schema.Catalog())
	require.NoError(t, err)
	req := &policy.Request{Action: action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "testdata/keys.txt"}}}
	s.Decide(context.Background(), req)
	assert.Equal(t, "fixtures-as-written", req.Unredacted)
	req = &policy.Request{Action: action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "main.go"}}}
	s.Decide(context.Background(), req)
	assert.Empty(t, req.Unredacted)

	_, err = Parse("h.yaml", []byte(`harness:
  rules:
    - id: no-pem
      when: 'glob(path, "**/*.pem")'
      outcome: deny
      redact: false
    - id: yes-redact
      outcome: allow
      redact: true
`))
	var ce *ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, []string{
		`line 6: harness.rules[0].redact: rule no-pem: false exempts from redaction what a rule lets run, and a deny rule runs nothing: use allow or ask`,
	}, ce.Problems)
}
