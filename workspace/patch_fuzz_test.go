package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzApplyPatchStaysInRoot applies arbitrary patches to a root that holds
// a symlink leading outside it, and checks that nothing outside the root
// is ever created, changed or removed, and that the escaping symlink is
// never replaced or written through.
func FuzzApplyPatchStaysInRoot(f *testing.F) {
	f.Add("--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-package x\n+package y\n")
	f.Add("*** Begin Patch\n*** Add File: out/secret.txt\n+pwned\n*** End Patch\n")
	f.Add("*** Begin Patch\n*** Update File: out/secret.txt\n@@\n-secret\n+pwned\n*** End Patch\n")
	f.Add("--- a/../outside/secret.txt\n+++ b/../outside/secret.txt\n@@ -1 +1 @@\n-secret\n+pwned\n")
	f.Add("diff --git a/x.go b/out/x.go\nrename from x.go\nrename to out/x.go\n")
	f.Add("diff --git a/out b/out\ndeleted file mode 120000\n--- a/out\n+++ /dev/null\n@@ -1 +0,0 @@\n-../outside\n")
	f.Add("--- /dev/null\n+++ b/out/../../outside/new.txt\n@@ -0,0 +1 @@\n+x\n")
	f.Fuzz(func(t *testing.T, text string) {
		w, dir := patchRoot(t, map[string]string{"x.go": "package x\n", "sub/y.txt": "y\n"}, true)
		parent := filepath.Dir(dir)
		outside := filepath.Join(parent, "outside")
		if err := os.Mkdir(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../outside", filepath.Join(dir, "out")); err != nil {
			t.Fatal(err)
		}
		before := snapshot(t, parent)
		for _, in := range []map[string]any{{"patch": text}, {"patch": text, "path": "out/secret.txt"}, {"patch": text, "path": "x.go"}} {
			_, _ = run(w, "workspace_apply_patch", in)
		}
		after := snapshot(t, parent)
		for k, v := range before {
			if strings.HasPrefix(k, "root/") && k != "root/out" {
				continue
			}
			if after[k] != v {
				t.Fatalf("%s changed outside the root: %q -> %q", k, v, after[k])
			}
		}
		for k := range after {
			if !strings.HasPrefix(k, "root/") && before[k] == "" && k != "root/" {
				if _, ok := before[k]; !ok {
					t.Fatalf("%s created outside the root", k)
				}
			}
		}
	})
}
