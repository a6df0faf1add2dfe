//go:build !linux

package workspace

import "errors"

// landlockABI is 0: Landlock exists only on Linux.
func landlockABI() int { return 0 }

func restrictSelf(sandboxPolicy) error {
	return errors.New("landlock is only available on linux")
}

func execProgram(program string, _ []string, _ int) error {
	return errors.New("exec " + program + ": the sandbox helper only runs on linux")
}
