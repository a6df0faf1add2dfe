package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/trusted"
)

// exampleDir is a workspace root holding greet.txt, in a temporary
// directory that also holds the audit log and the key, with HOME and the
// XDG directories pointed inside it: an Example leaves nothing in the
// user's home. done removes it all and restores the environment.
func exampleDir() (cfg *config.Config, root string, done func()) {
	dir, err := os.MkdirTemp("", "harness-example-")
	if err != nil {
		panic(err)
	}
	var restore []func()
	for k, v := range map[string]string{"HOME": dir, "XDG_CONFIG_HOME": filepath.Join(dir, "config"), "XDG_STATE_HOME": filepath.Join(dir, "state")} {
		old, had := os.LookupEnv(k)
		os.Setenv(k, v)
		restore = append(restore, func() {
			if had {
				os.Setenv(k, old)
			} else {
				os.Unsetenv(k)
			}
		})
	}
	root = filepath.Join(dir, "root")
	os.MkdirAll(root, 0o755)
	os.WriteFile(filepath.Join(root, "greet.txt"), []byte("hello\n"), 0o644)
	cfg, err = config.LoadFile("") // the embedded defaults: the dev profile
	if err != nil {
		panic(err)
	}
	cfg.Harness.Workspace.Root = root
	return cfg, root, func() {
		for _, r := range restore {
			r()
		}
		os.RemoveAll(dir)
	}
}

// The library's trusted flow: preview a change, show the diff to a
// person, and, once they agree, execute exactly what they saw with the
// one-time token. A write without the token is refused.
func Example_trustedFlow() {
	cfg, root, done := exampleDir()
	defer done()
	ctx := context.Background()

	p, err := pipeline.Open(ctx, cfg, pipeline.Options{Trusted: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	change := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "greet.txt", "content": "hello, world\n"}}

	// Without trust, the write is refused, and the message says how to
	// allow it.
	obs := p.Execute(ctx, change)
	fmt.Println(obs.Status, obs.Code)

	// The preview runs the guard and plans the change; nothing is written.
	alice := trusted.Principal{Name: "alice"}
	prev, err := p.Trusted.Preview(ctx, alice, change)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(prev.Preview["diff"])

	// A person reads the diff and agrees: the token runs exactly the
	// previewed change, once, on the file as it was previewed.
	obs, err = p.Trusted.Execute(ctx, alice, prev.Token)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(obs.Status, obs.Payload["applied"])
	content, _ := os.ReadFile(filepath.Join(root, "greet.txt"))
	fmt.Printf("%q\n", content)

	// The token is spent.
	_, err = p.Trusted.Execute(ctx, alice, prev.Token)
	fmt.Println(action.CodeOf(err))
	// Output:
	// blocked trust_required
	// --- a/greet.txt
	// +++ b/greet.txt
	// @@ -1 +1 @@
	// -hello
	// +hello, world
	// ok true
	// "hello, world\n"
	// not_found
}

// A guard step the program adds answers ask: the action does not run, the
// observation says needs_confirmation with the approval's id, and the
// approval waits in p.Approvals with the preview a person decides on.
func Example_ask() {
	cfg, _, done := exampleDir()
	defer done()
	ctx := context.Background()

	askBeforeGreeting := policy.Step{Name: "ask-before-greet", Fn: func(_ context.Context, req *policy.Request) policy.Decision {
		if path, _ := req.Action.Input["path"].(string); path == "greet.txt" {
			return policy.AskWith("greet.txt is read only with a person's approval")
		}
		return policy.Decision{}
	}}
	p, err := pipeline.Open(ctx, cfg, pipeline.Options{Steps: policy.Steps{Validating: []policy.Step{askBeforeGreeting}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()

	obs := p.Execute(ctx, action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "greet.txt"}})
	fmt.Println(obs.Status, obs.Code, obs.Decision.Step, obs.Decision.Outcome)
	fmt.Println(obs.Payload == nil, "(nothing was read)")

	// The approval is stored, pending, with what the person is shown.
	a, err := p.Approvals.Get(ctx, obs.Approval.ID)
	fmt.Println(err == nil, a.Status, a.Pending.Action.Name, a.Pending.Action.Input["path"], a.Pending.Decision.Step)
	fmt.Println("preview:", a.Pending.Preview["input"])
	pending, _ := p.Approvals.List(ctx, trusted.ApprovalPending)
	fmt.Println("pending:", len(pending))

	// Other files are not asked about.
	obs = p.Execute(ctx, action.Action{Name: "workspace_list_files", Input: map[string]any{}})
	fmt.Println(obs.Status)
	// Output:
	// needs_confirmation approval_required ask-before-greet ask
	// true (nothing was read)
	// true pending workspace_read_file greet.txt ask-before-greet
	// preview: map[path:greet.txt]
	// pending: 1
	// ok
}
