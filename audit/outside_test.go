package audit

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// outsideFixture lays out, under a temporary directory T:
//
//	T/a/root/              the workspace root
//	T/a/root/sub/
//	T/a/root/out -> T/state   a link inside the root pointing out
//	T/a/root2/ T/a/rootx   siblings whose names start with "root"
//	T/state/               where Harness's files belong
//	T/outside/link -> T/a/root          absolute link into the root
//	T/outside/rel -> ../a/root/sub      relative link into the root
//	T/outside/chain -> T/outside/link   a link to a link into the root
//	T/outside/loop -> T/outside/loop    a loop
//	T/rootlink -> T/a/root              the root reached through a link
func outsideFixture(t *testing.T) (tmp, root string) {
	t.Helper()
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(tmp, "a", "root")
	for _, d := range []string{root, filepath.Join(root, "sub"), filepath.Join(tmp, "a", "root2"),
		filepath.Join(tmp, "a", "rootx"), filepath.Join(tmp, "state"), filepath.Join(tmp, "outside")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		filepath.Join(root, "out"):             filepath.Join(tmp, "state"),
		filepath.Join(tmp, "outside", "link"):  root,
		filepath.Join(tmp, "outside", "rel"):   "../a/root/sub",
		filepath.Join(tmp, "outside", "chain"): filepath.Join(tmp, "outside", "link"),
		filepath.Join(tmp, "outside", "loop"):  filepath.Join(tmp, "outside", "loop"),
		filepath.Join(tmp, "rootlink"):         root,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return tmp, root
}

func TestCheckOutside(t *testing.T) {
	tmp, root := outsideFixture(t)
	j := filepath.Join
	cases := []struct {
		name   string
		root   string
		path   string
		inside bool
	}{
		{"file beneath the root", root, j(root, "audit.jsonl"), true},
		{"the root itself", root, root, true},
		{"the root with a trailing slash", root + "/", root + "/", true},
		{"deep path not created yet", root, j(root, "x", "y", "audit.jsonl"), true},
		{"dot segments that stay inside", root, root + "/sub/./../audit.jsonl", true},
		{"through the root and out by ..", root, root + "/sub/../../state/audit.jsonl", true},
		{"through a link inside the root that points out", root, j(root, "out", "audit.jsonl"), true},
		{"through an absolute link into the root", root, j(tmp, "outside", "link", "audit.jsonl"), true},
		{"through a relative link into the root", root, j(tmp, "outside", "rel", "hmac.key"), true},
		{"through a chain of links", root, j(tmp, "outside", "chain", "sub", "audit.jsonl"), true},
		{"the root named through a link", j(tmp, "rootlink"), j(root, "audit.jsonl"), true},
		{"a path through the root's link", root, j(tmp, "rootlink", "audit.jsonl"), true},
		{"root not created yet", j(tmp, "new-root"), j(tmp, "new-root", "audit.jsonl"), true},
		{"outside, in the state directory", root, j(tmp, "state", "audit.jsonl"), false},
		{"past the root and out by ..", root, root + "/../../state/audit.jsonl", false},
		{"sibling whose name has the root as prefix", root, j(tmp, "a", "root2", "audit.jsonl"), false},
		{"sibling file with the root as prefix", root, j(tmp, "a", "root.jsonl"), false},
		{"another sibling", root, j(tmp, "a", "rootx", "k"), false},
		{"the root's parent", root, j(tmp, "a", "audit.jsonl"), false},
		{"outside through a link that stays outside", j(tmp, "a", "root2"), j(tmp, "outside", "link", "audit.jsonl"), false},
		{"postgres URL", root, "postgres://u:p@db/harness", false},
		{"nothing configured", root, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOutside(tc.root, tc.path)
			if tc.inside {
				if !errors.Is(err, ErrInsideRoot) {
					t.Fatalf("CheckOutside(%s, %s) = %v, want ErrInsideRoot", tc.root, tc.path, err)
				}
				for _, name := range []string{tc.path, tc.root} {
					if !strings.Contains(err.Error(), name) {
						t.Errorf("message %q does not name %s", err, name)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("CheckOutside(%s, %s) = %v, want nil", tc.root, tc.path, err)
			}
		})
	}
}

func TestCheckOutsideRelative(t *testing.T) {
	tmp, root := outsideFixture(t)
	t.Chdir(root)
	cases := []struct {
		name   string
		root   string
		path   string
		inside bool
	}{
		{"bare name", root, "audit.jsonl", true},
		{"dot slash", root, "./audit.jsonl", true},
		{"dot", root, ".", true},
		{"relative root too", ".", "./hmac.key", true},
		{"relative root, nested", "./", "sub/audit.jsonl", true},
		{"up and back in", root, "../root/audit.jsonl", true},
		{"through the link that points out", ".", "out/audit.jsonl", true},
		{"up and out", root, "../root2/audit.jsonl", false},
		{"up twice into state", ".", "../../state/audit.jsonl", false},
		{"absolute outside with a relative root", ".", filepath.Join(tmp, "state", "k"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOutside(tc.root, tc.path)
			if tc.inside != errors.Is(err, ErrInsideRoot) || (!tc.inside && err != nil) {
				t.Fatalf("CheckOutside(%q, %q) = %v, want inside=%v", tc.root, tc.path, err, tc.inside)
			}
			if tc.inside && !strings.Contains(err.Error(), tc.path) {
				t.Errorf("message %q does not name %s", err, tc.path)
			}
		})
	}
}

func TestCheckOutsideLinkLoop(t *testing.T) {
	tmp, root := outsideFixture(t)
	err := CheckOutside(root, filepath.Join(tmp, "outside", "loop", "audit.jsonl"))
	if err == nil || errors.Is(err, ErrInsideRoot) || !strings.Contains(err.Error(), "symbolic links") {
		t.Fatalf("err = %v, want a refusal naming the link loop", err)
	}
}
