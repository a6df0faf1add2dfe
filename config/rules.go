package config

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// RuleConfig is one rule of harness.rules (SPEC section 3): the first
// rule whose actions and condition match an action decides it (see
// policy.RuleSet for what allow, ask and deny mean, and
// policy.Rule for what a condition can read).
type RuleConfig struct {
	ID string `yaml:"id"`
	// Actions the rule applies to; omitted: every action.
	Actions []string `yaml:"actions,omitempty"`
	// When is a CEL condition; omitted: always.
	When    string `yaml:"when,omitempty"`
	Outcome string `yaml:"outcome"`
	Reason  string `yaml:"reason,omitempty"`
	// Examples are inputs the rule must and must not match, checked at
	// start: a rule that does not do what its author meant stops start-up.
	Examples RuleExamples `yaml:"examples,omitempty"`
	// Redact false exempts the observation of an action this rule decides
	// and lets run (allow, or ask once a person approved) from
	// harness.redact-observations: a trusted fixture full of sample keys
	// reaches the model as written. Omitted or true: redacted as
	// configured. A deny rule cannot set it (nothing runs).
	Redact *bool `yaml:"redact,omitempty"`
}

// RuleExamples are a rule's example inputs.
type RuleExamples struct {
	Match    []map[string]any `yaml:"match,omitempty"`
	NotMatch []map[string]any `yaml:"not_match,omitempty"`
}

// Values of harness.rules-mode.
const (
	RulesFirstMatch = string(policy.FirstMatch)
	RulesStrictest  = string(policy.Strictest)
)

// The dev profile's default rules, in force when the file does not set
// harness.rules: a file that sets it replaces them (rules: [] removes
// them all), and production has none.
var (
	// SecretFileGlobs are files that commonly hold credentials.
	SecretFileGlobs = []string{
		"**/.env*", "**/*.pem", "**/*.key", "**/*.p12", "**/*.pfx", "**/*.kdbx",
		"**/id_rsa*", "**/id_dsa*", "**/id_ecdsa*", "**/id_ed25519*",
		"**/.npmrc", "**/.pypirc", "**/.netrc", "**/.pgpass", "**/.git-credentials",
		"**/credentials*", "**/.docker/config.json",
	}
	// CIConfigGlobs are continuous-integration configurations, which run
	// with the repository's secrets wherever the repository is pushed.
	CIConfigGlobs = []string{
		".github/workflows/**", ".github/actions/**", ".gitlab-ci.yml", ".gitlab/ci/**",
		".circleci/**", ".travis.yml", "azure-pipelines.yml", ".azure-pipelines/**",
		"bitbucket-pipelines.yml", "Jenkinsfile", ".buildkite/**", ".drone.yml",
		".woodpecker.yml", ".woodpecker/**",
	}
)

// DevRules returns the dev profile's default rules:
//   - dev-secret-files asks a person before a file action reads, searches
//     under, proposes or applies a change to a file that commonly holds
//     credentials (SecretFileGlobs);
//   - dev-secret-args asks before a command names such a file;
//   - dev-ci-config refuses patches to CI configuration (CIConfigGlobs).
//
// To allow CI changes, set harness.rules without dev-ci-config (copy the
// others from `harness config check`). What these rules do not cover: a
// search over the whole root reads the lines of every file it finds,
// secret ones included, and a command's program opens whatever it likes;
// harness.redact-observations keeps secrets that get through out of the
// model's context.
func DevRules() []RuleConfig {
	return []RuleConfig{
		{
			ID:      "dev-secret-files",
			Actions: []string{"workspace_read_file", "workspace_search_text", "workspace_propose_patch", "workspace_apply_patch"},
			When:    "glob(paths, " + celList(SecretFileGlobs) + ")",
			Outcome: "ask",
			Reason:  "the file commonly holds credentials: a person approves reading or changing it (a dev default rule; harness.rules replaces the defaults)",
			Examples: RuleExamples{
				Match:    []map[string]any{{"path": ".env"}, {"path": "config/.env.local"}, {"path": "deploy/tls.pem"}, {"path": "home/.ssh/id_ed25519"}, {"path": ".npmrc"}},
				NotMatch: []map[string]any{{"path": "main.go"}, {"path": "docs/environment.md"}, {"path": "src/keys.go"}},
			},
		},
		{
			ID:      "dev-secret-args",
			Actions: []string{"workspace_run_shell"},
			When:    "glob(argv, " + celList(SecretFileGlobs) + ")",
			Outcome: "ask",
			Reason:  "the command names a file that commonly holds credentials: a person approves it (a dev default rule; harness.rules replaces the defaults)",
			Examples: RuleExamples{
				Match:    []map[string]any{{"command": "git diff .env"}, {"command": "rg token config/credentials.json"}},
				NotMatch: []map[string]any{{"command": "git status"}, {"command": "go test ./..."}},
			},
		},
		{
			ID:      "dev-ci-config",
			Actions: []string{"workspace_apply_patch"},
			When:    "glob(paths, " + celList(CIConfigGlobs) + ")",
			Outcome: "deny",
			Reason:  "CI configuration runs with the repository's secrets: a person changes it, not an agent (a dev default rule; to allow it, set harness.rules without dev-ci-config)",
			Examples: RuleExamples{
				Match: []map[string]any{
					{"path": ".github/workflows/ci.yml", "content": "on: push"},
					{"patch": "--- a/.gitlab-ci.yml\n+++ b/.gitlab-ci.yml\n@@ -1 +1 @@\n-a\n+b\n"},
				},
				NotMatch: []map[string]any{{"path": "main.go", "content": "package main"}, {"path": "docs/github/workflows.md", "content": "x"}},
			},
		},
	}
}

// keepDefaultRules puts the profile's default rules before the rules of a
// file found in the workspace root, which may add rules but not take the
// defaults away. A rule of the file with the id of a default one is left
// out: it cannot loosen the default it would replace, and an id decides
// one rule.
func (h *HarnessConfig) keepDefaultRules() {
	if h.Profile == "production" {
		return
	}
	if h.rulesDefaulted {
		return // the file did not set rules: the defaults are there
	}
	defaults := DevRules()
	ids := map[string]bool{}
	for _, r := range defaults {
		ids[r.ID] = true
	}
	for _, r := range h.Rules {
		if !ids[r.ID] {
			defaults = append(defaults, r)
		}
	}
	h.Rules = defaults
}

// celList writes strings as a CEL list literal.
func celList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// PolicyRules returns harness.rules as the guard takes them.
func (h *HarnessConfig) PolicyRules() []policy.Rule {
	out := make([]policy.Rule, len(h.Rules))
	for i, r := range h.Rules {
		out[i] = policy.Rule{
			ID: r.ID, Actions: r.Actions, When: r.When, Outcome: policy.Outcome(r.Outcome),
			Reason: r.Reason, Match: r.Examples.Match, NotMatch: r.Examples.NotMatch,
			Unredacted: r.Redact != nil && !*r.Redact,
		}
	}
	return out
}

// RuleSet compiles harness.rules for the guard, with the actions of
// registry (the examples of a rule that names no actions are tried with
// each). Parse has already checked the rules of a file, with lines; this
// checks them again for a configuration built or changed in Go.
func (c *Config) RuleSet(registry *schema.Registry) (*policy.RuleSet, error) {
	actions := map[string]string{}
	if registry != nil {
		for _, s := range registry.List() {
			actions[s.Name] = string(s.Risk)
		}
	}
	return policy.CompileRules(c.Harness.PolicyRules(), c.Harness.rulesOptions(actions))
}

func (h *HarnessConfig) rulesOptions(actions map[string]string) policy.RulesOptions {
	return policy.RulesOptions{Mode: policy.RulesMode(h.RulesMode), Actions: actions}
}

// checkRules compiles the rules of a file (the profile's defaults are
// checked by a test) and places each problem at its rule's key.
func (h *HarnessConfig) checkRules(o *options, at func(ns string) problem) []problem {
	if len(h.Rules) == 0 {
		return nil
	}
	actions := map[string]string{}
	for _, s := range schema.Catalog().List() {
		actions[s.Name] = string(s.Risk)
	}
	for _, name := range h.knownActions(o.actions) {
		if _, ok := actions[name]; !ok {
			actions[name] = ""
			if strings.HasPrefix(name, "mcp.") {
				actions[name] = string(schema.RiskNetwork)
			}
		}
	}
	opts := h.rulesOptions(actions)
	if opts.Mode != policy.FirstMatch && opts.Mode != policy.Strictest {
		opts.Mode = "" // the value check reports it
	}
	_, err := policy.CompileRules(h.PolicyRules(), opts)
	var re *policy.RulesError
	if err == nil || !errors.As(err, &re) {
		if err != nil {
			p := at("harness.rules")
			p.why = err.Error()
			return []problem{p}
		}
		return nil
	}
	var out []problem
	for _, rp := range re.Problems {
		ns := "harness.rules-mode"
		if rp.Index >= 0 {
			ns = "harness.rules[" + strconv.Itoa(rp.Index) + "]." + rp.Field
		}
		p := at(ns)
		p.why = rp.Why
		if rp.Index >= 0 {
			id := rp.ID
			if id == "" {
				id = "#" + strconv.Itoa(rp.Index)
			}
			p.why = "rule " + id + ": " + rp.Why
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].line < out[j].line })
	return out
}
