package workspace

import (
	"os"
	"reflect"
	"slices"
	"testing"
)

func TestHelperArgsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		p    sandboxPolicy
		argv []string
	}{
		{"full", sandboxPolicy{ReadDirs: []string{"/usr", "/etc"}, WriteDirs: []string{"/w"},
			ReadFiles: []string{"/dev/zero"}, WriteFiles: []string{"/dev/null"},
			NoNet: true, BestEffort: true, NoLandlock: true, Seccomp: true, MountNS: true, PIDNS: true, NetNSFD: 6,
			Protect:  []protectFD{{4, "/w/.git"}, {5, "/w/.harness"}},
			ROBinds:  [][2]string{{"/tmp/cfg", "/w/.git/config"}, {"/tmp/m", "/w/.git/modules/a/config"}},
			StatusFD: 3}, []string{"git", "--no-pager", "log", "--", "-- odd"}},
		{"minimal", sandboxPolicy{}, []string{"pwd"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, prog, argv, err := parseHelperArgs(tt.p.helperArgs("/usr/bin/x", tt.argv))
			if err != nil {
				t.Fatal(err)
			}
			if prog != "/usr/bin/x" || !slices.Equal(argv, tt.argv) || !reflect.DeepEqual(p, tt.p) {
				t.Fatalf("got %+v %q %q", p, prog, argv)
			}
		})
	}
}

func TestSandboxMainRefusesBadArguments(t *testing.T) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	stderr := os.Stderr
	os.Stderr = devnull // the helper reports to stderr; keep the test log clean
	defer func() { os.Stderr = stderr }()
	for _, args := range [][]string{nil, {"--"}, {"--", "rel", "rel"}, {"--status-fd", "x", "--", "/bin/true", "true"},
		{"--pid-ns", "--", "/bin/true", "true"}, {"--ro-bind", "/a", "/b", "--", "/bin/true", "true"},
		{"--mount-ns", "--ro-bind", "rel", "/b", "--", "/bin/true", "true"}, {"--mount-ns", "--protect-fd", "2", "/x", "--", "/bin/true", "true"},
		{"--mount-ns", "--pid-ns", "--no-landlock", "--", "/bin/true", "true"}} {
		if code := SandboxMain(args); code != sandboxExitCode {
			t.Fatalf("SandboxMain(%q) = %d, want %d", args, code, sandboxExitCode)
		}
	}
}

// A refused --status-fd (0, 1, 2) is never written to or closed: the
// helper's stdout and stderr stay open.
func TestHelperNeverUsesAStandardDescriptorForStatus(t *testing.T) {
	for _, fd := range []string{"0", "1", "2"} {
		p, _, _, err := parseHelperArgs([]string{"--status-fd", fd, "--", "/usr/bin/true", "true"})
		if err == nil || p.StatusFD != 0 {
			t.Fatalf("--status-fd %s: policy fd %d, err %v", fd, p.StatusFD, err)
		}
	}
}
