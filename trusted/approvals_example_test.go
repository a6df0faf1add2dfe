package trusted_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/trusted"
)

// Example_approval: a guard step asks a person about every patch; the
// agent's action waits as an approval, an approver (another principal)
// approves it, and the agent's AwaitApproval runs exactly the approved
// change.
func Example_approval() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "trusted-approval-example-")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "greeting.txt"), []byte("hello\n"), 0o644)

	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	san, _ := sanitize.New(sanitize.Options{Key: bytes.Repeat([]byte{1}, 32)})
	askPatches := policy.Step{Name: "ask-patches", Fn: func(_ context.Context, req *policy.Request) policy.Decision {
		if req.Action.Name == "workspace_apply_patch" {
			return policy.AskWith("a person looks at every patch")
		}
		return policy.Decision{}
	}}
	approvals := trusted.NewMemoryApprovals(15*time.Minute, 0)
	h, ws, err := runtime.Build(cfg, runtime.BuildOptions{
		Sanitizer: san, Approvals: approvals, Steps: policy.Steps{Validating: []policy.Step{askPatches}},
	})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	svc, _ := trusted.NewService(trusted.Options{Harness: h, Approvals: approvals})
	defer svc.Close()

	agent := trusted.Principal{Name: "agent"}
	a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "greeting.txt", "content": "hello, world\n"}, SessionID: "s1"}
	obs := h.Execute(runtime.WithPrincipal(ctx, agent.Name), a)
	fmt.Println(obs.Status, obs.Code)
	id := obs.Approval.ID

	// The agent waits; a person decides meanwhile.
	done := make(chan action.Observation)
	go func() {
		obs, err := svc.AwaitApproval(ctx, agent, id)
		if err != nil {
			panic(err)
		}
		done <- obs
	}()
	pending, _ := svc.ListApprovals(ctx, trusted.ApprovalPending)
	fmt.Print(pending[0].Preview["diff"])
	_, err = svc.DecideApproval(ctx, id, agent, trusted.ApprovalDecision{Approve: true})
	fmt.Println("self-approval:", action.CodeOf(err))
	v, _ := svc.DecideApproval(ctx, id, trusted.Principal{Name: "rita"}, trusted.ApprovalDecision{Approve: true, Reason: "fine"})
	fmt.Println(v.Status, "by", v.DecidedBy, "via", v.Method)

	fmt.Println("run:", (<-done).Status)
	b, _ := os.ReadFile(filepath.Join(root, "greeting.txt"))
	fmt.Printf("file: %q\n", b)
	// Output:
	// needs_confirmation approval_required
	// --- a/greeting.txt
	// +++ b/greeting.txt
	// @@ -1 +1 @@
	// -hello
	// +hello, world
	// self-approval: forbidden
	// approved by rita via api
	// run: ok
	// file: "hello, world\n"
}
