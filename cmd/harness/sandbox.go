package main

import (
	"context"

	"github.com/harness-runtime/harness/workspace"
)

// The hidden sandbox helper: the workspace re-executes this binary as
// "harness __sandbox [policy] -- /abs/program argv0 args..." to confine one
// command (see workspace.SandboxMain) before running it, so that the
// serving process itself is never restricted. It is not for people and not listed in usage.
func init() {
	commands[workspace.SandboxCommand] = command{
		summary: "internal: confine and exec one workspace command",
		hidden:  true,
		run: func(_ context.Context, args []string, _ stdio) int {
			return workspace.SandboxMain(args)
		},
	}
}
