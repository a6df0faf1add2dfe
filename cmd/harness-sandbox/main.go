// Command harness-sandbox is the small helper that confines one workspace
// command (namespaces, read-only .git, Landlock, seccomp, no capabilities;
// see workspace.SandboxMain) and then runs it. The harness binary can play the
// same role (its hidden "__sandbox" sub-command), but this binary links only
// the workspace package, so it starts in a fraction of the time; `harness`
// uses it when it sits next to the harness executable (make build puts it
// there). It is not for people.
package main

import (
	"fmt"
	"os"

	"github.com/harness-runtime/harness/workspace"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != workspace.SandboxCommand {
		fmt.Fprintln(os.Stderr, "harness-sandbox: the workspace's internal sandbox helper; not meant to be run by hand")
		os.Exit(2)
	}
	os.Exit(workspace.SandboxMain(os.Args[2:]))
}
