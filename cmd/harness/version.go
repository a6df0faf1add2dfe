package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime/debug"
)

func init() {
	commands["version"] = command{summary: "print the version, the commit and the Go version", run: versionCmd}
}

// version is set at link time (-ldflags "-X main.version=v1.2.3"); without
// it the module version from the build info is used (set by go install
// …@version), else "devel".
var version = ""

// versionCmd is "harness version" (and "harness --version").
func versionCmd(_ context.Context, args []string, s stdio) int {
	fs := newFlags("version", "harness version", s.err)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	fmt.Fprintln(s.out, versionLine())
	return exitOK
}

// buildVersion is the version alone: set at link time, else the module's,
// else "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func versionLine() string {
	v, commit, dirty, goVersion := buildVersion(), "unknown", false, "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		for _, st := range bi.Settings {
			switch st.Key {
			case "vcs.revision":
				commit = st.Value
				if len(commit) > 12 {
					commit = commit[:12]
				}
			case "vcs.modified":
				dirty = st.Value == "true"
			}
		}
	}
	if dirty {
		commit += "-dirty"
	}
	return fmt.Sprintf("harness %s (commit %s, %s)", v, commit, goVersion)
}
