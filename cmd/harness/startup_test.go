package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestPackagesInitialiseWithoutACollection: the packages of the harness
// binary allocate a few megabytes as they initialise (the JSON Schema
// libraries compile their meta-schemas), which at Go's default target
// costs two collections before main runs. Package tune's init raises the
// target first (GODEBUG=inittrace shows the order Go runs inits in), so
// that no collection runs before main (gctrace shows each one).
func TestPackagesInitialiseWithoutACollection(t *testing.T) {
	cmd := exec.Command(harnessBinary(t), "version")
	env := []string{"GODEBUG=inittrace=1,gctrace=1"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GODEBUG=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("harness version: %v\n%s", err, stderr.String())
	}
	initLine := regexp.MustCompile(`^init (\S+) @`)
	gcLine := regexp.MustCompile(`^gc \d+ @`)
	order := map[string]int{}
	lastInit, firstGC := -1, -1
	for i, line := range strings.Split(stderr.String(), "\n") {
		if m := initLine.FindStringSubmatch(line); m != nil {
			order[m[1]] = i
			lastInit = i
		} else if gcLine.MatchString(line) && firstGC < 0 {
			firstGC = i
		}
	}
	tune, ok := order["github.com/harness-runtime/harness/internal/tune"]
	if !ok {
		t.Fatalf("no init of package tune in the trace:\n%s", stderr.String())
	}
	for _, heavy := range []string{"github.com/santhosh-tekuri/jsonschema/v6", "github.com/santhosh-tekuri/jsonschema/v5"} {
		if at, ok := order[heavy]; !ok || at < tune {
			t.Errorf("%s is initialised before package tune (or not at all): lines %d and %d", heavy, at, tune)
		}
	}
	if firstGC >= 0 && firstGC < lastInit {
		t.Errorf("a collection ran while packages initialised:\n%s", stderr.String())
	}
}
