package policy

import (
	"context"
	"encoding/json"
	"testing"

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

func guardFor(t *testing.T, yaml string) *Guard {
	t.Helper()
	c, err := Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return NewGuard(testRegistry(t), c)
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
			req := &Request{Action: tc.a}
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

func TestGuardAppendRunsLast(t *testing.T) {
	g := guardFor(t, "harness: {}\n")
	var saw *schema.ActionSchema
	g.Append(Check{Name: "budget", Fn: func(_ context.Context, req *Request) Decision {
		saw = req.Schema
		return Decision{Code: action.CodeBudgetExhausted, Message: "no budget left"}
	}})
	d := g.Decide(context.Background(), &Request{Action: action.Action{Name: "echo"}})
	if d.Code != action.CodeBudgetExhausted || d.Check != "budget" || saw == nil || saw.Name != "echo" {
		t.Fatalf("appended check: %+v, schema %v", d, saw)
	}
	// An earlier refusal stops the chain before the appended check.
	saw = nil
	d = g.Decide(context.Background(), &Request{Action: action.Action{Name: "nope"}})
	if d.Code != action.CodeUnknownAction || saw != nil {
		t.Fatalf("chain did not stop: %+v", d)
	}
}
