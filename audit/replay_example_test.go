package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/audit"
)

// A session's records come back in order, a page at a time: pass each
// page's Next as the following query's After until it is 0.
func ExampleReplayer() {
	dir, err := os.MkdirTemp("", "audit-replay")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	log, err := audit.OpenJSONL(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		panic(err)
	}
	defer log.Close()
	for i, s := range []string{"s-1", "s-2", "s-1", "s-1"} {
		ev := map[string]any{"session_id": s, "payload": map[string]any{"task_id": "t", "step": i}}
		if _, err := log.Append(ctx, ev, false); err != nil {
			panic(err)
		}
	}

	var r audit.Replayer = log
	q := audit.Query{SessionID: "s-1", Limit: 2}
	for {
		page, err := r.Replay(ctx, q)
		if err != nil {
			panic(err)
		}
		for _, rec := range page.Events {
			fmt.Printf("seq %d: %s\n", rec.Seq, rec.Event)
		}
		if page.Next == 0 {
			break
		}
		q.After = page.Next
	}
	// Output:
	// seq 1: {"payload":{"step":0,"task_id":"t"},"session_id":"s-1"}
	// seq 3: {"payload":{"step":2,"task_id":"t"},"session_id":"s-1"}
	// seq 4: {"payload":{"step":3,"task_id":"t"},"session_id":"s-1"}
}

// A live reader subscribes to the hub the log publishes to; one that
// falls behind is dropped, never waited for.
func ExampleHub() {
	dir, err := os.MkdirTemp("", "audit-hub")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	hub := audit.NewHub(audit.HubOptions{Buffer: 2})
	sub, err := hub.Subscribe()
	if err != nil {
		panic(err)
	}
	log, err := audit.OpenJSONL(filepath.Join(dir, "audit.jsonl"), audit.WithHub(hub))
	if err != nil {
		panic(err)
	}
	defer log.Close()
	for i := range 3 { // one more than the reader's buffer
		if _, err := log.Append(context.Background(), map[string]int{"i": i}, false); err != nil {
			panic(err)
		}
	}
	for rec := range sub.C {
		fmt.Println("seq", rec.Seq)
	}
	fmt.Println("dropped:", sub.Dropped(), hub.Dropped())
	// Output:
	// seq 1
	// seq 2
	// dropped: true 1
}
