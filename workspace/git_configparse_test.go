package workspace

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// gitConfigSeeds reads the FuzzGitConfig corpus: configuration files
// written the way people and tools write them, and the odd corners of
// git's grammar.
func gitConfigSeeds(t *testing.T) map[string][]byte {
	t.Helper()
	dir := filepath.Join("testdata", "fuzz", "FuzzGitConfig")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seeds := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		_, lit, ok := strings.Cut(strings.TrimSpace(string(b)), "\n[]byte(")
		if !ok {
			t.Fatalf("%s: not a []byte seed", e.Name())
		}
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		seeds[e.Name()] = []byte(s)
	}
	return seeds
}

// gitListConfig is what git itself reads from a configuration file:
// "name=value" per entry ("name" alone for a bare key), or ok false when
// git refuses the file.
func gitListConfig(t *testing.T, data []byte) ([]string, bool) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(f, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("git", "config", "--file", f, "--no-includes", "--null", "--list")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent"}
	cmd.Dir = "/"
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	var got []string
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		name, value, hasValue := bytes.Cut(rec, []byte("\n"))
		if hasValue {
			got = append(got, string(name)+"="+string(value))
		} else {
			got = append(got, string(name))
		}
	}
	return got, true
}

func entryStrings(entries []gitConfigEntry) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = e.name()
		if e.value != nil {
			out[i] += "=" + *e.value
		}
	}
	return out
}

// TestGitConfigParseMatchesGit: on every seed, parseGitConfig reads what
// git reads (names as git canonicalises them, values after quoting,
// escapes and continuations), or refuses what git refuses; and what
// writeGitConfig writes, git reads back entry for entry.
func TestGitConfigParseMatchesGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for name, data := range gitConfigSeeds(t) {
		t.Run(name, func(t *testing.T) {
			entries, err := parseGitConfig(data)
			want, gitOK := gitListConfig(t, data)
			if err != nil {
				if gitOK {
					t.Fatalf("parse: %v; git reads %q", err, want)
				}
				return
			}
			if !gitOK {
				t.Fatalf("git refuses the file; parse read %q", entryStrings(entries))
			}
			if got := entryStrings(entries); !slices.Equal(got, want) {
				t.Fatalf("parse read\n%q\ngit reads\n%q", got, want)
			}
			out, written := writeGitConfig(entries)
			var kept []gitConfigEntry
			for i, e := range entries {
				if written[i] {
					kept = append(kept, e)
				}
			}
			back, ok := gitListConfig(t, out)
			if !ok || !slices.Equal(back, entryStrings(kept)) {
				t.Fatalf("written\n%s\ngit reads back %q (ok %v), want %q", out, back, ok, entryStrings(kept))
			}
		})
	}
}

// FuzzGitConfig: whatever the input, the sanitized copy parses back to
// exactly the entries that were kept, and each of them is inert; and the
// writer's output reads back as what was written.
func FuzzGitConfig(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseGitConfig(data)
		if err != nil {
			return
		}
		out, written := writeGitConfig(entries)
		back, err := parseGitConfig(out)
		if err != nil {
			t.Fatalf("written copy does not parse: %v\n%s", err, out)
		}
		var kept []gitConfigEntry
		for i, e := range entries {
			if written[i] {
				kept = append(kept, e)
			}
		}
		if !slices.Equal(entryStrings(back), entryStrings(kept)) {
			t.Fatalf("round trip\n%q\n!=\n%q", entryStrings(back), entryStrings(kept))
		}
		c, err := sanitizeGitConfig(data)
		if err != nil {
			t.Fatalf("sanitize: %v", err)
		}
		san, err := parseGitConfig(c.sanitized)
		if err != nil {
			t.Fatalf("sanitized copy does not parse: %v", err)
		}
		for _, e := range san {
			if !gitInert(e) {
				t.Fatalf("sanitized copy keeps %s", e.name())
			}
		}
	})
}

// TestGitConfigSanitizeAllowlist: the sanitized copy keeps the inert
// variables and drops every other, whatever the case of section, key or
// (for drivers) subsection.
func TestGitConfigSanitizeAllowlist(t *testing.T) {
	in := `[core]
	repositoryformatversion = 0
	FileMode = true
	bare = false
	bare = true
	worktree = /elsewhere
	hooksPath = /tmp/h
	FSMonitor = ./fsm
	pager = ./pager
	editor = ./ed
	sshCommand = ./ssh
	attributesFile = ./attr
[extensions]
	objectformat = sha1
	worktreeConfig = true
	partialclone = origin
[include]
	path = evil.cfg
[includeIf "gitdir:/"]
	path = evil.cfg
[filter "EVIL"]
	clean = ./x
[FILTER "evil"]
	process = ./x
[diff "Evil"]
	textconv = ./x
[diff]
	external = ./x
	renames = copies
[merge "m"]
	driver = ./x
[alias]
	st = !./x
[credential]
	helper = ./x
[url "ext::sh -c x"]
	insteadOf = https://
[remote "Origin"]
	url = https://example.com/r.git
	fetch = +refs/heads/*:refs/remotes/Origin/*
	vcs = evil
	uploadpack = ./x
[branch "main"]
	remote = Origin
	merge = refs/heads/main
[submodule "s"]
	url = ../s
	update = !./x
[user]
	name = A
[gpg]
	program = ./x
[pager]
	log = ./x
`
	c, err := sanitizeGitConfig([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseGitConfig(c.sanitized)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"core.repositoryformatversion=0",
		"core.filemode=true",
		"core.bare=false",
		"extensions.objectformat=sha1",
		"diff.renames=copies",
		"remote.Origin.url=https://example.com/r.git",
		"remote.Origin.fetch=+refs/heads/*:refs/remotes/Origin/*",
		"branch.main.remote=Origin",
		"branch.main.merge=refs/heads/main",
		"submodule.s.url=../s",
		"user.name=A",
	}
	if !slices.Equal(entryStrings(got), want) {
		t.Fatalf("sanitized:\n%s\nentries %q\nwant %q", c.sanitized, entryStrings(got), want)
	}
}

func TestDriverOverrides(t *testing.T) {
	entries, err := parseGitConfig([]byte(`[filter "EVIL"]
	clean = x
	Smudge = x
[filter "a.b"]
	process = x
	required
[diff "x"]
	textconv = x
	command = x
[diff]
	external = x
[merge "M"]
	driver = x
[core]
	pager = x
`))
	if err != nil {
		t.Fatal(err)
	}
	got := driverOverrides(entries)
	want := [][2]string{
		{"filter.EVIL.clean", "cat"},
		{"filter.EVIL.smudge", "cat"},
		{"filter.a.b.process", "false"},
		{"filter.a.b.required", "false"},
		{"diff.x.textconv", "cat"},
		{"diff.x.command", "false"},
		{"diff.external", "false"},
		{"merge.M.driver", "false"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("driverOverrides = %v, want %v", got, want)
	}
}

func TestCheckGitVersion(t *testing.T) {
	for out, ok := range map[string]bool{
		"git version 2.39.5\n":               true,
		"git version 2.32.0":                 true,
		"git version 2.39.3 (Apple Git-146)": true,
		"git version 3.0.0":                  true,
		"git version 2.31.8":                 false,
		"git version 1.9.5":                  false,
		"git version 2.9.5":                  false,
		"something else":                     false,
		"git version 2.45.0.windows.1\r\n":   true,
	} {
		if err := checkGitVersion(out); (err == nil) != ok {
			t.Errorf("checkGitVersion(%q) = %v, want ok %v", out, err, ok)
		}
	}
}
