package main

import (
	"fmt"
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
	if v, err := goCaches(); err == nil && v[0] != "" && v[1] != "" {
		os.Setenv("GOCACHE", v[0])
		os.Setenv("GOMODCACHE", v[1])
	}
}

// goCaches returns what `go env` gives for GOCACHE and GOMODCACHE.
func goCaches() ([2]string, error) {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE").Output()
	if err != nil {
		return [2]string{}, err
	}
	v := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(v) != 2 {
		return [2]string{}, fmt.Errorf("go env: %q", out)
	}
	return [2]string{v[0], v[1]}, nil
}

// TestGoCommandKeepsItsCaches: the go command the tests start uses the
// caches it used before TestMain moved HOME, not new ones under it.
func TestGoCommandKeepsItsCaches(t *testing.T) {
	caches, err := goCaches()
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	home := os.Getenv("HOME")
	for _, dir := range caches {
		if rel, err := filepath.Rel(home, dir); err == nil && !strings.HasPrefix(rel, "..") {
			t.Errorf("the go command's cache %s is under the tests' HOME %s", dir, home)
		}
	}
}
