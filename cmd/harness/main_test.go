package main

import (
	"os"
	"testing"
)

// TestMain gives every test of the CLI a home, state and config directory
// of its own, so that the default audit log and key land there, never in
// the developer's home or the package directory.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "harness-cli-home-")
	if err != nil {
		panic(err)
	}
	for k, v := range map[string]string{"HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_CONFIG_HOME": home + "/config"} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
