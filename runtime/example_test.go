package runtime_test

import (
	"context"
	"fmt"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/schema"
)

type addInput struct {
	A int `json:"a"`
	B int `json:"b"`
}

// A program registers a typed Go function as an action and runs actions
// through the guard; every outcome, refusals included, is an Observation.
func Example() {
	cfg := config.Default()
	reg := schema.Catalog()
	san, _ := sanitize.New(sanitize.Options{Key: []byte("an installation's 32-byte secret")})
	h, _ := runtime.New(runtime.Options{Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions()), Sanitizer: san})
	h.Subscribe(ahp.SinkFunc(func(_ context.Context, ev ahp.Event) error {
		fmt.Println("event:", ev.EventType, ev.Payload.Action)
		return nil
	}))

	_ = runtime.RegisterFunc(h, runtime.Spec{Name: "add", Description: "add two integers"},
		func(_ context.Context, in addInput) (map[string]int, error) {
			return map[string]int{"sum": in.A + in.B}, nil
		})

	obs := h.Execute(context.Background(), action.Action{Name: "add", Input: map[string]any{"a": 2, "b": 3}})
	fmt.Println(obs.Status, obs.Payload["sum"])

	obs = h.Execute(context.Background(), action.Action{Name: "add", Input: map[string]any{"a": "two"}})
	fmt.Println(obs.Status, obs.Code, obs.Source)
	// Output:
	// event: pre_action add
	// event: post_action add
	// ok 5
	// event: pre_action add
	// event: post_action add
	// blocked invalid_input policy
}
