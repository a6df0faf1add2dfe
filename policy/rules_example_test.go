package policy_test

import (
	"context"
	"fmt"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// Rules are data: each names the actions it applies to, a CEL condition,
// an outcome and examples that are checked when the rules are compiled.
// The first rule that matches decides.
func ExampleCompileRules() {
	rules, err := policy.CompileRules([]policy.Rule{
		{
			ID: "no-dotenv", Actions: []string{"workspace_read_file"},
			When: `glob(path, "**/.env*")`, Outcome: policy.Deny, Reason: "secrets stay out of the model's context",
			Match: []map[string]any{{"path": ".env"}}, NotMatch: []map[string]any{{"path": "main.go"}},
		},
		{
			ID: "ask-push", Actions: []string{"workspace_run_shell"},
			When: `argv.startsWith(["git", "push"])`, Outcome: policy.Ask, Reason: "a person pushes",
		},
	}, policy.RulesOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	g := policy.NewGuard(schema.Catalog(), policy.Options{TrustedRuntime: true},
		policy.Steps{Validating: []policy.Step{rules.Step()}})
	for _, a := range []action.Action{
		{Name: "workspace_read_file", Input: map[string]any{"path": "config/.env.local"}, Trusted: true},
		{Name: "workspace_run_shell", Input: map[string]any{"command": "git push origin main"}, Trusted: true},
		{Name: "workspace_run_shell", Input: map[string]any{"command": "git status"}, Trusted: true},
	} {
		d := g.Decide(context.Background(), &policy.Request{Action: a})
		fmt.Printf("%v: %s rule=%q code=%q\n", a.Input, d.Info().Outcome, d.Rule, d.Code)
	}

	// A rule whose examples contradict it is refused, naming it.
	_, err = policy.CompileRules([]policy.Rule{{
		ID: "wrong-glob", When: `glob(path, "*.pem")`, Outcome: policy.Deny,
		Match: []map[string]any{{"path": "deep/dir/key.pem"}},
	}}, policy.RulesOptions{})
	fmt.Println(err)
	// Output:
	// map[path:config/.env.local]: deny rule="no-dotenv" code="rule_denied"
	// map[command:git push origin main]: ask rule="ask-push" code="approval_required"
	// map[command:git status]: allow rule="" code=""
	// 1 problem(s) in the rules:
	//   rule wrong-glob: examples.match[0]: {path: deep/dir/key.pem} is an example the rule must match, but it does not
}

// A rule with Unredacted (redact: false in the configuration) marks the
// request of an action it decides, so that the redaction of observations
// leaves what that action returns as it is: here, reads of test fixtures.
func ExampleRule_unredacted() {
	rules, err := policy.CompileRules([]policy.Rule{{
		ID: "fixtures-as-written", Actions: []string{"workspace_read_file"},
		When: `glob(path, "testdata/**")`, Outcome: policy.Allow, Unredacted: true,
	}}, policy.RulesOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, path := range []string{"testdata/keys.txt", "config/app.yaml"} {
		req := &policy.Request{Action: action.Action{Name: "workspace_read_file", Input: map[string]any{"path": path}}}
		rules.Decide(context.Background(), req)
		fmt.Printf("%s: unredacted by %q\n", path, req.Unredacted)
	}
	// Output:
	// testdata/keys.txt: unredacted by "fixtures-as-written"
	// config/app.yaml: unredacted by ""
}
