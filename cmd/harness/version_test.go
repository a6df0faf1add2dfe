package main

import (
	"regexp"
	"strings"
	"testing"
)

func TestVersionCommandAndFlag(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, errOut := runCLI(args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		if !regexp.MustCompile(`^harness \S+ \(commit \S+, go1\.\d+`).MatchString(out) || !strings.HasSuffix(out, ")\n") {
			t.Fatalf("%v: %q", args, out)
		}
	}
}
