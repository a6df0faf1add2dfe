package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain gives every test of the CLI a home, state and config directory
// of its own, so that the default audit log and key land there, never in
// the developer's home or the package directory.
//
// The go command takes its build and module caches from HOME unless told
// otherwise, so the caches it uses now are named first: with the new HOME
// alone, each run's `go build` of the binary (harnessBinary) would
// download every module again and compile all of the binary's
// dependencies into an empty cache.
func TestMain(m *testing.M) {
	keepGoCaches()
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

// keepGoCaches sets GOCACHE and GOMODCACHE to what the go command uses
// now. Without a go command it does nothing (the tests that build the
// binary then fail or skip on their own).
func keepGoCaches() {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return
	}
	v := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(v) != 2 || v[0] == "" || v[1] == "" {
		return
	}
	os.Setenv("GOCACHE", v[0])
	os.Setenv("GOMODCACHE", v[1])
}

// TestGoCommandKeepsItsCaches: the go command the tests start uses the
// caches it used before TestMain moved HOME, not new ones under it.
func TestGoCommandKeepsItsCaches(t *testing.T) {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	home := os.Getenv("HOME")
	for _, dir := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if rel, err := filepath.Rel(home, dir); err == nil && !strings.HasPrefix(rel, "..") {
			t.Errorf("the go command's cache %s is under the tests' HOME %s", dir, home)
		}
	}
}
