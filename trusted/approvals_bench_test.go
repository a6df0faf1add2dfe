package trusted

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

// BenchmarkApprovalLifecycle measures one approval's store work: request,
// the approver's decision (with its check of the current state) and the
// requester's claim, for the memory store and a real Redis (no HTTP, no
// audit log).
//
//	go test -run XXX -bench ApprovalLifecycle ./trusted
func BenchmarkApprovalLifecycle(b *testing.B) {
	for _, name := range []string{"memory", "redis"} {
		b.Run(name, func(b *testing.B) {
			s := approvalStores()[name](b)
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": fmt.Sprint(i)}, SessionID: "bench"}
				h, _ := a.Hash()
				ap, err := s.Request(ctx, runtime.PendingApproval{Action: a, ActionHash: h, Principal: "alice", Preview: map[string]any{"diff": "+x"}})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Decide(ctx, ap.ID, StoreDecision{Status: ApprovalApproved, DecidedBy: "rita", Scope: ScopeOnce, At: time.Now()}); err != nil {
					b.Fatal(err)
				}
				if _, err := s.Claim(ctx, ap.ID); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
