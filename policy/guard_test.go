package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/schema"
)

func testRegistry(t *testing.T) *schema.Registry {
	t.Helper()
	r := schema.Catalog()
	err := r.Register(schema.ActionSchema{Name: "echo", Runtime: schema.RuntimeBuiltin,
		Input: json.RawMessage(`{"properties":{"text":{"type":"string"}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func guardFor(t *testing.T, yaml string, extra ...policy.Steps) *policy.Guard {
	t.Helper()
	c, err := config.Parse("test.yaml", []byte(yaml), config.WithActions("echo"))
	if err != nil {
		t.Fatal(err)
	}
	return policy.NewGuard(testRegistry(t), c.GuardOptions(), extra...)
}

func TestGuardOrderIsTheSpecOrder(t *testing.T) {
	g := guardFor(t, "harness: {}\n")
	want := []string{"registered", "enabled", "tenant_allowed", "input_valid", "trusted_runtime_enabled", "trust_present"}
	got := g.Checks()
	if len(got) != len(want) {
		t.Fatalf("checks %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("checks %v, want %v", got, want)
		}
	}
}

func TestGuardDecisions(t *testing.T) {
	const cfg = `harness:
  disabled-actions: [workspace_run_shell]
  auto-approved-actions: [workspace_list_files]
  tenant-allowed-actions:
    acme: [echo, workspace_read_file]
`
	const prod = "harness: {profile: production}\n"
	read := map[string]any{"path": "a.txt"}
	cases := []struct {
		name  string
		cfg   string
		a     action.Action
		code  action.Code
		check string
	}{
		{"unknown", cfg, action.Action{Name: "nope"}, action.CodeUnknownAction, "registered"},
		{"disabled beats bad input", cfg, action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": 1}}, action.CodeActionDisabled, "enabled"},
		{"tenant not allowed", cfg, action.Action{Name: "workspace_list_files", Tenant: "acme"}, action.CodeTenantNotAllowed, "tenant_allowed"},
		{"tenant allowed", cfg, action.Action{Name: "echo", Tenant: "acme", Input: map[string]any{"text": "hi"}}, "", ""},
		{"unlisted tenant gets all", cfg, action.Action{Name: "echo", Tenant: "other"}, "", ""},
		{"invalid input", cfg, action.Action{Name: "echo", Input: map[string]any{"text": 5}}, action.CodeInvalidInput, "input_valid"},
		{"invalid input before trust", cfg, action.Action{Name: "workspace_read_file", Input: map[string]any{"path": 42}}, action.CodeInvalidInput, "input_valid"},
		{"trust required", cfg, action.Action{Name: "workspace_read_file", Input: read}, action.CodeTrustRequired, "trust_present"},
		{"trusted", cfg, action.Action{Name: "workspace_read_file", Input: read, Trusted: true}, "", ""},
		{"auto-approved", cfg, action.Action{Name: "workspace_list_files"}, "", ""},
		{"trusted runtime off in production", prod, action.Action{Name: "workspace_read_file", Input: read, Trusted: true}, action.CodeTrustedRuntimeDisabled, "trusted_runtime_enabled"},
		{"untrusted builtin in production", prod, action.Action{Name: "echo"}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := guardFor(t, tc.cfg)
			req := &policy.Request{Action: tc.a}
			d := g.Decide(context.Background(), req)
			if d.Code != tc.code || d.Check != tc.check {
				t.Fatalf("decision %+v, want code %q by %q", d, tc.code, tc.check)
			}
			if !d.Allowed() && d.Message == "" {
				t.Fatal("refusal without a message")
			}
			if tc.code != action.CodeUnknownAction && req.Schema == nil {
				t.Fatal("schema not set on the request")
			}
		})
	}
}

func TestGuardExtraValidatingStepRunsAfterTheBuiltInJudgements(t *testing.T) {
	var saw *schema.ActionSchema
	g := guardFor(t, "harness: {}\n", policy.Steps{Validating: []policy.Step{{Name: "budget", Fn: func(_ context.Context, req *policy.Request) policy.Decision {
		saw = req.Schema
		return policy.DenyWith(action.CodeBudgetExhausted, "no budget left")
	}}}})
	d := g.Decide(context.Background(), &policy.Request{Action: action.Action{Name: "echo"}})
	if d.Code != action.CodeBudgetExhausted || d.Check != "budget" || d.Outcome != policy.Deny || saw == nil || saw.Name != "echo" {
		t.Fatalf("added step: %+v, schema %v", d, saw)
	}
	// An earlier refusal stops the chain before the added step.
	saw = nil
	d = g.Decide(context.Background(), &policy.Request{Action: action.Action{Name: "nope"}})
	if d.Code != action.CodeUnknownAction || saw != nil {
		t.Fatalf("chain did not stop: %+v", d)
	}
	names := g.Checks()
	if names[len(names)-1] != "trust_present" || names[len(names)-2] != "budget" {
		t.Fatalf("order %v: validating steps run before trust_present", names)
	}
}

func TestGuardOrderMutatingBeforeInputValid(t *testing.T) {
	g := guardFor(t, "harness: {}\n", policy.Steps{
		Mutating:   []policy.Step{{Name: "m", Fn: func(context.Context, *policy.Request) policy.Decision { return policy.Decision{} }}},
		Validating: []policy.Step{{Name: "v", Fn: func(context.Context, *policy.Request) policy.Decision { return policy.Decision{} }}},
	})
	want := []string{"registered", "enabled", "tenant_allowed", "m", "input_valid", "trusted_runtime_enabled", "v", "trust_present"}
	if got := g.Checks(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestGuardOutcomes(t *testing.T) {
	echo := func(in map[string]any) *policy.Request {
		return &policy.Request{Action: action.Action{Name: "echo", Input: in}}
	}
	step := func(d policy.Decision) policy.Steps {
		return policy.Steps{Validating: []policy.Step{{Name: "s", Fn: func(context.Context, *policy.Request) policy.Decision { return d }}}}
	}
	t.Run("allow", func(t *testing.T) {
		d := guardFor(t, "harness: {}\n", step(policy.Decision{Outcome: policy.Allow})).Decide(context.Background(), echo(nil))
		if !d.Allowed() || !d.Plain() || d.Info().Outcome != "allow" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("deny", func(t *testing.T) {
		d := guardFor(t, "harness: {}\n", step(policy.Decision{Outcome: policy.Deny, Code: action.CodeRuleDenied, Rule: "r1", Message: "no"})).
			Decide(context.Background(), echo(nil))
		if d.Allowed() || d.Code != action.CodeRuleDenied || d.Check != "s" || d.Rule != "r1" {
			t.Fatalf("%+v", d)
		}
		if i := d.Info(); i.Step != "s" || i.Rule != "r1" || i.Outcome != "deny" || i.Reason != "no" {
			t.Fatalf("info %+v", i)
		}
	})
	t.Run("a refusal without an outcome is a deny", func(t *testing.T) {
		d := guardFor(t, "harness: {}\n", step(policy.Decision{Code: action.CodeBudgetExhausted})).Decide(context.Background(), echo(nil))
		if d.Allowed() || d.Outcome != policy.Deny {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("ask", func(t *testing.T) {
		d := guardFor(t, "harness: {}\n", step(policy.AskWith("a person decides"))).Decide(context.Background(), echo(nil))
		if d.Allowed() || d.Outcome != policy.Ask || d.Code != action.CodeApprovalRequired || d.Info().Outcome != "ask" {
			t.Fatalf("%+v", d)
		}
	})
	t.Run("modify then validated again", func(t *testing.T) {
		g := guardFor(t, "harness: {}\n", step(policy.Decision{Outcome: policy.Modify, Input: map[string]any{"text": "new"}}))
		req := echo(map[string]any{"text": "old"})
		d := g.Decide(context.Background(), req)
		if !d.Allowed() || d.Plain() || d.Outcome != policy.Modify || req.Action.Input["text"] != "new" || len(req.Modified) != 1 {
			t.Fatalf("%+v %+v", d, req)
		}
		bad := guardFor(t, "harness: {}\n", step(policy.Decision{Outcome: policy.Modify, Input: map[string]any{"text": 5}}))
		d = bad.Decide(context.Background(), echo(map[string]any{"text": "old"}))
		if d.Allowed() || d.Code != action.CodeInvalidInput || d.Check != "s" {
			t.Fatalf("an invalid modification must be refused: %+v", d)
		}
	})
	t.Run("defer then allow", func(t *testing.T) {
		n := 0
		g := guardFor(t, "harness: {}\n", policy.Steps{Validating: []policy.Step{{Name: "s", Fn: func(context.Context, *policy.Request) policy.Decision {
			n++
			if n < 3 {
				return policy.Decision{Outcome: policy.Defer, RetryAfter: time.Millisecond}
			}
			return policy.Decision{}
		}}}})
		if d := g.Decide(context.Background(), echo(nil)); !d.Allowed() || n != 3 {
			t.Fatalf("%+v after %d asks", d, n)
		}
	})
	t.Run("defer forever is a denial, bounded", func(t *testing.T) {
		n := 0
		g := guardFor(t, "harness: {}\n", policy.Steps{MaxDefers: 2, Validating: []policy.Step{{Name: "s", Fn: func(context.Context, *policy.Request) policy.Decision {
			n++
			return policy.Decision{Outcome: policy.Defer, RetryAfter: time.Millisecond}
		}}}})
		d := g.Decide(context.Background(), echo(nil))
		if d.Allowed() || d.Code != action.CodeHarnessBlocked || n != 3 {
			t.Fatalf("%+v after %d asks", d, n)
		}
	})
	t.Run("defer honours the context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		g := guardFor(t, "harness: {}\n", step(policy.Decision{Outcome: policy.Defer, RetryAfter: time.Hour}))
		if d := g.Decide(ctx, echo(nil)); d.Code != action.CodeCanceled {
			t.Fatalf("%+v", d)
		}
	})
}
