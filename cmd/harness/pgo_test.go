package main

import (
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestBinaryIsBuiltWithItsProfile: go build compiles the harness binary
// with default.pgo (profile-guided optimisation), and the profile is a
// CPU profile that names the hot paths it was taken from (make pgo), so
// that a profile gone stale by a rename, emptied or replaced does not
// quietly stop optimising them.
func TestBinaryIsBuiltWithItsProfile(t *testing.T) {
	info, err := buildinfo.ReadFile(harnessBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	var pgo string
	for _, s := range info.Settings {
		if s.Key == "-pgo" {
			pgo = s.Value
		}
	}
	if filepath.Base(pgo) != "default.pgo" {
		t.Fatalf("the binary was built with -pgo=%q, not default.pgo", pgo)
	}
	// A profile is a gzipped protocol buffer whose string table holds
	// the name of every function sampled.
	f, err := os.Open("default.pgo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("default.pgo is not a profile: %v", err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("default.pgo: %v", err)
	}
	for _, want := range []string{
		"github.com/harness-runtime/harness/sanitize.(*scanner).next",
		"github.com/harness-runtime/harness/runtime.(*Harness).Execute",
		"github.com/harness-runtime/harness/policy.(*RuleSet).Decide",
		"github.com/harness-runtime/harness/audit.(*JSONL).writeBatch",
		"github.com/harness-runtime/harness/workspace.(*Workspace).readFile",
	} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("default.pgo has no samples in %s: make pgo takes it again", want)
		}
	}
}
