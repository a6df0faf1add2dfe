//go:build !linux

package workspace

import "errors"

// landlockABI is 0: Landlock exists only on Linux.
func landlockABI() int { return 0 }

func runSandboxed(sandboxPolicy, string, []string) error {
	return errors.New("the sandbox helper only runs on linux")
}
