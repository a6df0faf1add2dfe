package workspace

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// gitIn runs git in dir with no system or global configuration.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestIndexGitlinks: the gitlinks of indexes that git writes in each of its
// formats (versions 2, 3 and 4, split, SHA-256) are found, and nothing else.
func TestIndexGitlinks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	tests := []struct {
		name   string
		init   []string
		setup  [][]string
		sha256 bool
	}{
		{name: "v2"},
		{name: "v3 (intent to add)", setup: [][]string{{"add", "-N", "later.txt"}}},
		{name: "v4", setup: [][]string{{"update-index", "--index-version", "4"}}},
		{name: "split", setup: [][]string{{"update-index", "--split-index"}, {"update-index", "--add", "--cacheinfo", "160000,%s,z/late"}}},
		{name: "sha256", init: []string{"--object-format=sha256"}, sha256: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			gitIn(t, dir, append([]string{"init", "-q"}, tt.init...)...)
			for _, f := range []string{"a.txt", "dir/b.txt", "later.txt", "dir/deeper/c.txt"} {
				p := filepath.Join(dir, f)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(f), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gitIn(t, dir, "add", "a.txt", "dir")
			gitIn(t, dir, "commit", "-q", "-m", "one")
			head := gitIn(t, dir, "rev-parse", "HEAD")
			for _, p := range []string{"sub", "dir/nested-sub", "dir/deeper/s"} {
				gitIn(t, dir, "update-index", "--add", "--cacheinfo", "160000,"+head+","+p)
			}
			want := []string{"dir/deeper/s", "dir/nested-sub", "sub"}
			for _, s := range tt.setup {
				for i := range s {
					s[i] = strings.ReplaceAll(s[i], "%s", head)
				}
				gitIn(t, dir, s...)
				if strings.Contains(strings.Join(s, " "), ",z/late") {
					want = append(want, "z/late")
				}
			}
			hash := 20
			if tt.sha256 {
				hash = 32
			}
			got, err := indexGitlinks(filepath.Join(dir, ".git", "index"), hash)
			if err != nil {
				t.Fatal(err)
			}
			got = slices.Compact(slices.Sorted(slices.Values(got)))
			if !slices.Equal(got, want) {
				t.Fatalf("gitlinks %q, want %q (ls-files: %s)", got, want, gitIn(t, dir, "ls-files", "-s"))
			}
		})
	}
}

// FuzzIndexGitlinks: no input makes the index reader panic or read out of
// bounds.
func FuzzIndexGitlinks(f *testing.F) {
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x00" + strings.Repeat("\x00", 20)))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, h := range []int{20, 32} {
			links, _, err := parseIndexGitlinks(data, h)
			if err == nil && len(links) > len(data) {
				t.Fatal("more gitlinks than bytes")
			}
		}
	})
}
