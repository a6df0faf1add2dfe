package workspace_test

import (
	"context"
	"fmt"
	"os"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace"
)

// A command is planned (and shown in a preview) before it runs; refusals
// carry a code and name the offending word.
func ExampleWorkspace_PlanCommand() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	w, _ := workspace.New(dir, workspace.DefaultOptions())
	defer w.Close()

	plan, err := w.PlanCommand(`git log --oneline -- "src/my file.go"`)
	if err == nil {
		fmt.Printf("%q\n", plan.Argv)
		fmt.Printf("%q\n", plan.ExecArgv)
	}

	for _, c := range []string{"cat ../secret", "git -c core.pager=sh log", "ls; rm -rf ."} {
		_, err := w.PlanCommand(c)
		fmt.Println(action.CodeOf(err), action.MessageOf(err) != "")
	}
	// Output:
	// ["git" "log" "--oneline" "--" "src/my file.go"]
	// ["git" "--no-pager" "log" "--no-ext-diff" "--no-textconv" "--oneline" "--" "src/my file.go"]
	// command_not_allowed true
	// argument_not_allowed true
	// argument_not_allowed true
}

// Running a command: a non-zero exit is still a result, with its code.
func ExampleWorkspace_Run_shell() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	opts := workspace.DefaultOptions()
	opts.Sandbox = workspace.SandboxOff // the example binary is not a sandbox helper
	w, _ := workspace.New(dir, opts)
	defer w.Close()

	out, err := w.Run(context.Background(), action.Action{
		Name:  "workspace_run_shell",
		Input: map[string]any{"command": "ls no-such-file", "timeout_seconds": 5},
	})
	fmt.Println(err, out["exit_code"] != 0, out["stdout"] == "", out["sandbox"])
	// Output: <nil> true true none
}
