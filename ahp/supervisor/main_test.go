package supervisor_test

import (
	"os"
	"testing"

	"github.com/harness-runtime/harness/workspace"
)

// TestMain lets the test binary serve as the sandbox helper of the
// commands the tests run (workspace.SandboxCommand), as the harness
// binary does.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == workspace.SandboxCommand {
		os.Exit(workspace.SandboxMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
