package testkit

import (
	"path/filepath"
	"testing"
)

// Home gives the test a home of its own: HOME, XDG_CONFIG_HOME and
// XDG_STATE_HOME point into a fresh temporary directory (removed with the
// test), so that the default audit log, key and configuration never land
// in the developer's. It returns the directory.
func Home(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	return dir
}
