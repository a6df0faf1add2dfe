package workspace

import (
	"fmt"
	"os"
	"testing"
)

// TestMain lets the test binary serve as the sandbox helper: the exec tests
// set Options.HelperPath to os.Args[0], which is re-executed as
// "<test binary> __sandbox ...", exactly as the harness binary would be.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == SandboxCommand {
		os.Exit(SandboxMain(os.Args[2:]))
	}
	code := m.Run()
	if err := removePrivateBase(); err != nil {
		fmt.Fprintln(os.Stderr, "remove the commands' private directory:", err)
	}
	os.Exit(code)
}
