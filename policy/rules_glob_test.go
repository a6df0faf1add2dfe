package policy

import (
	"strings"
	"testing"
)

func TestGlobDoublestarSemantics(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*.pem", "key.pem", true},
		{"*.pem", "dir/key.pem", false}, // * never crosses a /
		{"**/*.pem", "key.pem", true},   // ** may be no directory at all
		{"**/*.pem", "a/b/c/key.pem", true},
		{"**/.env*", ".env", true},
		{"**/.env*", ".env.local", true},
		{"**/.env*", "config/.env.production", true},
		{"**/.env*", "src/env.go", false},
		{"**/.env*", "a/.environment/x", false}, // the last segment decides
		{".github/workflows/**", ".github/workflows/ci.yml", true},
		{".github/workflows/**", ".github/workflows/sub/x.yml", true},
		{".github/workflows/**", ".github/workflows", true}, // ** may be nothing
		{".github/workflows/**", "a/.github/workflows/ci.yml", false},
		{"a/**/b", "a/b", true},
		{"a/**", "a", true},
		{"a/**", "ab/c", false},
		{"a/b", "a", false},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"a/**/b/**/c", "a/1/b/2/3/c", true},
		{"a/**/b/**/c", "a/1/c/2/b", false},
		{"**", "anything/at/all", true},
		{"**", "", false}, // an action without a path matches nothing
		{"*", "x", true},
		{"*", "x/y", false},
		{"?.go", "a.go", true},
		{"?.go", "ab.go", false},
		{"[ab].txt", "b.txt", true},
		{"[!ab].txt", "b.txt", false},
		{"*.{pem,key}", "tls.key", true},
		{"*.{pem,key}", "tls.crt", false},
		{"{docs,site}/**", "site/index.html", true},
		{"{a,b/{c,d}}/x", "b/d/x", true},
		{`\*.txt`, "*.txt", true},
		{`\*.txt`, "a.txt", false},
		{"id_rsa*", "id_rsa.pub", true},
		{"Makefile", "makefile", false}, // case matters
	}
	for _, c := range cases {
		g, err := compileGlob(c.pattern)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := g.match(c.name); got != c.want {
			t.Errorf("glob(%q, %q) = %v, want %v", c.name, c.pattern, got, c.want)
		}
	}
}

func TestGlobBadPatternsAreRefused(t *testing.T) {
	for _, p := range []string{"[a-", "a/[", "{a,b", "a}", "/etc/*", strings.Repeat("{a,b}", 7)} {
		if _, err := compileGlob(p); err == nil {
			t.Errorf("%q was accepted", p)
		}
	}
}

// The matcher's work is bounded by segments times segments, whatever the
// number of **: a pattern that would make a naive backtracking matcher
// explore every split of a long path finishes at once.
func TestGlobManyDoubleStarsStayLinear(t *testing.T) {
	g, err := compileGlob(strings.Repeat("**/a/", 30) + "b")
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("a/", 2000) + "c"
	if g.match(name) {
		t.Fatal("matched")
	}
	if allocs := testing.AllocsPerRun(10, func() { g.match(name) }); allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}
