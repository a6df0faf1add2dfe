package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/workspace"
)

// PlanPatch previews a change; ApplyPlan writes exactly that change, or
// refuses with stale_preview if the file changed in between.
func ExampleWorkspace_PlanPatch() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one\ntwo\n"), 0o644)
	w, err := workspace.New(dir, workspace.DefaultOptions())
	if err != nil {
		panic(err)
	}
	defer w.Close()
	ctx := context.Background()
	plan, err := w.PlanPatch(ctx, map[string]any{
		"patch": "*** Begin Patch\n*** Update File: notes.txt\n@@\n one\n-two\n+2\n*** End Patch\n",
	})
	if err != nil {
		panic(err)
	}
	fmt.Print(plan.Diff)
	if err := w.ApplyPlan(ctx, plan); err != nil {
		panic(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "notes.txt"))
	fmt.Printf("%s %s: %q\n", plan.Format, plan.Files[0].Stage, b)
	// Output:
	// --- a/notes.txt
	// +++ b/notes.txt
	// @@ -1,2 +1,2 @@
	//  one
	// -two
	// +2
	// envelope exact: "one\n2\n"
}
