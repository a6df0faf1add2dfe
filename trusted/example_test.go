package trusted_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/trusted"
)

// Example previews a patch, redeems its token once, and shows that the
// token cannot be used again.
func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "trusted-example-")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "greeting.txt"), []byte("hello\n"), 0o644)

	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	san, _ := sanitize.New(sanitize.Options{Key: bytes.Repeat([]byte{1}, 32)})
	h, ws, err := runtime.Build(cfg, runtime.BuildOptions{Sanitizer: san})
	if err != nil {
		panic(err)
	}
	defer ws.Close()
	svc, _ := trusted.NewService(trusted.Options{Harness: h})
	defer svc.Close()

	alice := trusted.Principal{Name: "alice"}
	a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "greeting.txt", "content": "hello, world\n"}}
	p, err := svc.Preview(ctx, alice, a)
	if err != nil {
		panic(err)
	}
	fmt.Print(p.Preview["diff"])

	obs, err := svc.Execute(ctx, alice, p.Token)
	fmt.Println("execute:", obs.Status, err)
	b, _ := os.ReadFile(filepath.Join(root, "greeting.txt"))
	fmt.Printf("file: %q\n", b)

	_, err = svc.Execute(ctx, alice, p.Token)
	fmt.Println("again:", action.CodeOf(err))
	// Output:
	// --- a/greeting.txt
	// +++ b/greeting.txt
	// @@ -1 +1 @@
	// -hello
	// +hello, world
	// execute: ok <nil>
	// file: "hello, world\n"
	// again: not_found
}
