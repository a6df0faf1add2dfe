package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

func TestRefusedLongMatch(t *testing.T) {
	getopt := &argRule{style: styleGetopt, refusedLong: []string{"output", "ext-diff"}}
	goflag := &argRule{style: styleGoFlag, refusedLong: []string{"o", "toolexec"}}
	tests := []struct {
		name string
		rule *argRule
		opt  string
		want string
	}{
		{"exact", getopt, "output", "output"},
		{"abbreviation", getopt, "outp", "output"},
		{"shortest abbreviation", getopt, "o", "output"},
		{"longer name is another option", getopt, "output-indicator-new", ""},
		{"negation is allowed", getopt, "no-ext-diff", ""},
		{"go flags are exact", goflag, "toolex", ""},
		{"go exact", goflag, "toolexec", "toolexec"},
		{"go short name", goflag, "o", "o"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rule.refusedLongMatch(tt.opt); got != tt.want {
				t.Fatalf("refusedLongMatch(%q) = %q, want %q", tt.opt, got, tt.want)
			}
		})
	}
}

// TestCommandRulesAreConsistent keeps the table honest: every git
// subcommand in the default configuration has a rule, and no rule lists
// an option both as refused and as a value option.
func TestCommandRulesAreConsistent(t *testing.T) {
	for _, sub := range DefaultOptions().AllowedGitSubcommands {
		if commandRules["git"].subcommands[sub] == nil {
			t.Errorf("default git subcommand %q has no rule", sub)
		}
	}
	for _, cmd := range DefaultOptions().AllowedCommands {
		if commandRules[cmd] == nil {
			t.Errorf("default command %q has no rule", cmd)
		}
	}
	var check func(name string, r *argRule)
	check = func(name string, r *argRule) {
		for _, v := range append(append([]string{}, r.valueLong...), r.writeLong...) {
			if r.refusedLongMatch(v) == v {
				t.Errorf("%s: %q is both refused and a value option", name, v)
			}
		}
		for sub, sr := range r.subcommands {
			check(name+" "+sub, sr)
		}
	}
	for name, r := range commandRules {
		check(name, r)
	}
}

// FuzzPlanCommand: no input panics, every refusal carries a code, and an
// accepted command has no word that, read as a path in any of the ways
// the rules consider, leaves the root.
func FuzzPlanCommand(f *testing.F) {
	for _, s := range []string{
		"ls -la src", "git log --oneline -5", "git diff HEAD~1..HEAD -- src", "go test ./...",
		"make -f Makefile all", "rg -n foo src", "cat ../x", "ls -I../x", "git show HEAD:a/../../b",
		"go build -o=bin/x", "make -sfMakefile", "ls link", "ls link/x", "git branch --list x",
		"ls a=b:c,../d", "ls '-la' \"src\"", "touch .git/x", "ls --hide=~root",
	} {
		f.Add(s)
	}
	base, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(filepath.Join(root, "src"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(base, filepath.Join(root, "link")); err != nil {
		f.Fatal(err)
	}
	opts := DefaultOptions()
	opts.Sandbox = SandboxOff
	opts.AllowedCommands = append(opts.AllowedCommands, "cat", "touch")
	w, err := New(root, opts)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { w.Close() })

	f.Fuzz(func(t *testing.T, s string) {
		plan, err := w.PlanCommand(s)
		if err != nil {
			switch action.CodeOf(err) {
			case action.CodeArgumentNotAllowed, action.CodeCommandNotAllowed, action.CodeInvalidInput, action.CodeNotFound:
			default:
				t.Fatalf("PlanCommand(%q): unexpected code: %v", s, err)
			}
			return
		}
		if strings.Contains(plan.Argv[0], "/") {
			t.Fatalf("PlanCommand(%q) accepted a program path", s)
		}
		groups := true // getopt-style short option groups
		if r := commandRules[plan.Argv[0]]; r != nil && r.style == styleGoFlag {
			groups = false
		}
		for _, word := range plan.Argv[1:] {
			for _, p := range pathReadings(word, groups) {
				if escapesRoot(root, p) {
					t.Fatalf("PlanCommand(%q) accepted %q, which reads as %q outside the root", s, word, p)
				}
			}
		}
	})
}

// pathReadings lists the ways a program may read word as a path: the word,
// its parts around '=', ':' and ',', without leading dashes, and for a
// short option group, the attached value after each letter.
func pathReadings(word string, groups bool) []string {
	out := []string{word}
	for _, p := range strings.FieldsFunc(word, func(r rune) bool { return r == '=' || r == ':' || r == ',' }) {
		out = append(out, strings.TrimLeft(p, "-"))
	}
	if groups && strings.HasPrefix(word, "-") && !strings.HasPrefix(word, "--") {
		for j := 2; j < len(word); j++ {
			out = append(out, word[j:])
		}
	}
	return out
}

// escapesRoot is an oracle independent of the rules: join, clean, resolve
// symlinks of the existing part, compare prefixes.
func escapesRoot(root, p string) bool {
	if p == "" {
		return false
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return true
	}
	full := filepath.Join(root, p)
	if full != root && !strings.HasPrefix(full, root+string(filepath.Separator)) {
		return true
	}
	// Resolve the longest existing prefix.
	for cur := full; strings.HasPrefix(cur, root); cur = filepath.Dir(cur) {
		if _, err := os.Lstat(cur); err == nil {
			resolved, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return false // a loop or dangling link resolves nowhere
			}
			return resolved != root && !strings.HasPrefix(resolved, root+string(filepath.Separator))
		}
		if cur == root {
			break
		}
	}
	return false
}
