package policy_test

import (
	"context"
	"fmt"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// The guard is an ordered list of named checks; the first refusal wins and
// names its step and code. Programs add their own steps when the guard is
// built; it cannot change after.
func ExampleGuard() {
	cfg, err := config.Parse("example.yaml", []byte(`
harness:
  disabled-actions: [workspace_run_shell]
  auto-approved-actions: [workspace_list_files]
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	noFridays := policy.Step{Name: "no_fridays", Fn: func(context.Context, *policy.Request) policy.Decision {
		return policy.Decision{}
	}}
	g := policy.NewGuard(schema.Catalog(), cfg.GuardOptions(), policy.Steps{Validating: []policy.Step{noFridays}})
	fmt.Println(g.Checks())

	for _, a := range []action.Action{
		{Name: "workspace_run_shell", Input: map[string]any{"command": "ls"}},
		{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}},
		{Name: "workspace_list_files"},
	} {
		d := g.Decide(context.Background(), &policy.Request{Action: a})
		fmt.Printf("%s: allowed=%v code=%q check=%q\n", a.Name, d.Allowed(), d.Code, d.Check)
	}
	// Output:
	// [registered enabled tenant_allowed input_valid trusted_runtime_enabled no_fridays trust_present]
	// workspace_run_shell: allowed=false code="action_disabled" check="enabled"
	// workspace_read_file: allowed=false code="trust_required" check="trust_present"
	// workspace_list_files: allowed=true code="" check=""
}

// A bad configuration is refused with every problem listed.
func ExampleParse() {
	_, err := config.Parse("bad.yaml", []byte("harness:\n  profile: staging\n  workspace:\n    max-file-bytes: -5\n"))
	fmt.Println(err)
	// Output:
	// config bad.yaml: 2 problem(s):
	//   line 2: harness.profile: "staging" is not one of: dev production
	//   line 4: harness.workspace.max-file-bytes: must be at least 0
}
