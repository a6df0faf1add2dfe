package policy_test

import (
	"context"
	"fmt"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// A Governor is a guard step and an observer of outcomes: the step
// refuses what a session may no longer do, the observer counts what it
// did (the dispatcher, runtime.Harness, calls it with every observation).
func ExampleGovernor() {
	gov, err := policy.NewGovernor(policy.GovernanceOptions{Limits: policy.Limits{MaxActions: 2, RepeatFailing: 3}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gov.Close()
	guard := policy.NewGuard(schema.Catalog(), policy.Options{TrustedRuntime: true},
		policy.Steps{Validating: []policy.Step{gov.Step()}})

	ctx := context.Background()
	for i := range 3 {
		req := &policy.Request{Action: action.Action{
			Name: "workspace_read_file", Input: map[string]any{"path": fmt.Sprint(i, ".txt")}, SessionID: "s-1", Trusted: true,
		}}
		d := guard.Decide(ctx, req)
		fmt.Printf("%d: allowed=%v code=%q rule=%q\n", i, d.Allowed(), d.Code, d.Rule)
		obs := action.Observation{Source: action.SourceWorkspace, Status: action.StatusOK}
		if !d.Allowed() {
			obs = action.Observation{Source: action.SourcePolicy, Status: d.Code.Status(), Code: d.Code}
		}
		gov.Observe(ctx, req, &obs)
	}
	// An operator gives the session a fresh budget.
	if err := gov.Reset(ctx, policy.SessionKey{Session: "s-1"}); err != nil {
		fmt.Println(err)
	}
	c, _ := gov.Counters(ctx, policy.SessionKey{Session: "s-1"})
	fmt.Println("actions after reset:", c.Actions)
	// Output:
	// 0: allowed=true code="" rule=""
	// 1: allowed=true code="" rule=""
	// 2: allowed=false code="budget_exhausted" rule="max-actions"
	// actions after reset: 0
}
