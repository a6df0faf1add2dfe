package workspace

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
// subcommand and command in the default configuration has a rule, no
// denylist rule lists an option both as refused and as a value option, and
// every refused option of an allowlist says why.
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
		for _, v := range r.valueLong {
			if r.refusedLongMatch(v) == v {
				t.Errorf("%s: %q is both refused and a value option", name, v)
			}
		}
		if (r.opts != nil || r.short != nil) && (r.refusedLong != nil || r.refusedShort != "" || r.valueLong != nil) {
			t.Errorf("%s: an allowlist rule with denylist fields, which it would ignore", name)
		}
		for opt, spec := range r.opts {
			if spec.kind == optRefused && spec.why == "" {
				t.Errorf("%s: refused option %q does not say why", name, opt)
			}
			if spec.kind == optOptional && r.style != styleGetopt {
				t.Errorf("%s: %q: Go flags have no optional values", name, opt)
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

// argFixture is a workspace whose root holds the places a write must
// never reach, and the ways to reach them: a nested repository, a
// symlink into .git, a symlink out of the root, a hard link to a file of
// .git.
type argFixture struct {
	w       *Workspace
	root    string
	outside string
}

func newArgFixture(t *testing.T) *argFixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := &argFixture{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{".git/hooks", ".harness", "sub/.git/hooks", "bin", "cmd/x", "src"} {
		if err := os.MkdirAll(filepath.Join(f.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(f.outside, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{
		".git/config": "[core]\n", ".git/HEAD": "ref: refs/heads/main\n",
		"Makefile": "test:\n\ttrue\n", "go.mod": "module m\n", "cmd/x/main.go": "package main\n",
		"flags.txt": "-extld=./x.sh\n",
	} {
		if err := os.WriteFile(filepath.Join(f.root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"hooks":   ".git/hooks",            // inside the root, into .git
		"subgit":  "sub/.git",              // a nested repository's .git
		"deep":    "sub/../.git",           // the same, spelled around
		"out":     f.outside,               // out of the root
		"dotlink": ".harness",              // Harness's own directory
		"chain":   "hooks",                 // a link to a link into .git
		"updir":   "src/../sub/.git/hooks", // climbs inside the root into a nested .git
	} {
		if err := os.Symlink(target, filepath.Join(f.root, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(f.root, ".git/config"), filepath.Join(f.root, "hl")); err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.Sandbox = SandboxOff
	opts.AllowedCommands = append(opts.AllowedCommands, "touch", "cat")
	opts.AllowedGitSubcommands = append(opts.AllowedGitSubcommands, "grep", "blame")
	f.w, err = New(f.root, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.w.Close() })
	return f
}

// assertRefusedWord: code argument_not_allowed, the word in the payload,
// and the word (or its quoted form) and every mention in the message.
func assertRefusedWord(t *testing.T, command string, err error, word string, mentions ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: accepted", command)
	}
	var e *action.Error
	if !errors.As(err, &e) || e.Code != action.CodeArgumentNotAllowed {
		t.Fatalf("%s: %v, want argument_not_allowed", command, err)
	}
	if e.Payload["word"] != word {
		t.Errorf("%s: payload word = %q, want %q (%s)", command, e.Payload["word"], word, e.Message)
	}
	if !strings.Contains(e.Message, word) && !strings.Contains(e.Message, strconv.Quote(word)) {
		t.Errorf("%s: message %q does not name %q", command, e.Message, word)
	}
	for _, m := range mentions {
		if !strings.Contains(e.Message, m) {
			t.Errorf("%s: message %q does not mention %q", command, e.Message, m)
		}
	}
}

// TestArgumentRulesRefuseTheClass runs the classes of issue 11's smaller
// holes through PlanCommand, each in many spellings: options that name a
// file to write, checked on every component (not only the first), however
// the option and the path are spelled; values handed to other programs
// (the compiler and linker, the shell, git's drivers, rg's preprocessors),
// allowed only when known to be inert. Each refusal is
// argument_not_allowed and names the offending word.
func TestArgumentRulesRefuseTheClass(t *testing.T) {
	f := newArgFixture(t)
	type refusal struct {
		command string
		word    string
		mention []string
	}
	// Paths that must never be written, each in a spelling a check of the
	// first component (or a case-sensitive one, or one that does not
	// follow symlinks) would pass.
	protected := map[string]string{
		"nested repository":        "sub/.git/hooks/x",
		"dot-dot into .git":        "./sub/../.git/x",
		"dot-dot in the middle":    "src/../.git/hooks/pre-commit",
		"upper case":               "SUB/.GIT/x",
		"mixed case":               ".Git/hooks/x",
		"harness dir":              ".harness/x",
		"nested harness dir":       "sub/.harness/x",
		"harness dir, upper case":  ".HARNESS/config.yaml",
		"windows trailing dot":     "sub/.git./hooks/x",
		"windows trailing space":   "'.git /hooks/x'",
		"windows short name":       "GIT~1/hooks/x",
		"zero-width space":         ".g\u200bit/hooks/x",
		"backslashes":              `'sub\.git\hooks\x'`,
		"absolute":                 f.root + "/x",
		"absolute outside":         "/tmp/x",
		"home":                     "~/x",
		"dot-dot out":              "../outside/x",
		"symlink into .git":        "hooks/pre-commit",
		"symlinked dir itself":     "hooks",
		"symlink to nested .git":   "subgit/hooks/x",
		"symlink spelled around":   "deep/hooks/x",
		"symlink chain":            "chain/x",
		"symlink climbing inside":  "updir/x",
		"symlink to .harness":      "dotlink/x",
		"symlink out of the root":  "out/x",
		"symlink then dot-dot":     "hooks/../config",
		"hard link to .git/config": "hl",
	}
	var cases []refusal
	for _, p := range slices.Sorted(maps.Keys(protected)) {
		spelled := protected[p]
		word, _ := Tokenize(spelled) // the word PlanCommand sees
		w := word[0]
		cases = append(cases,
			refusal{"go build -o " + spelled + " ./cmd/x", w, nil},
			refusal{"go build -o=" + spelled + " ./cmd/x", "-o=" + w, nil},
			refusal{"go build --o " + spelled, w, nil},
			refusal{"go build --o=" + spelled, "--o=" + w, nil},
			refusal{`go build "-o" ` + spelled, w, nil},
			refusal{"go test -c -o " + spelled, w, nil},
			refusal{"go test -coverprofile=" + spelled + " ./...", "-coverprofile=" + w, nil},
			refusal{"go test -test.cpuprofile " + spelled, w, nil},
			refusal{"go test ./... -args -test.trace=" + spelled, "-test.trace=" + w, nil},
			refusal{"go build -pkgdir " + spelled, w, nil},
			refusal{"go build -debug-trace=" + spelled, "-debug-trace=" + w, nil},
			refusal{"touch " + spelled, w, nil},
			refusal{"make " + spelled, w, nil},
		)
		if p != "hard link to .git/config" { // -f reads; a hard link is refused for writes
			cases = append(cases, refusal{"make -f " + spelled, w, nil})
		}
	}
	cases = append(cases, []refusal{
		// go: a profile whose directory is another option's
		{"go test -outputdir=sub -coverprofile=../.git/c.out ./...", "-coverprofile=../.git/c.out", []string{".git"}},
		{"go test -coverprofile=.git/c.out -outputdir sub ./...", "-coverprofile=.git/c.out", nil},
		{"go test -test.outputdir=src -test.memprofile=../sub/.git/m", "-test.memprofile=../sub/.git/m", nil},
		{"go test -outputdir=.git -cpuprofile=c.out", "-outputdir=.git", nil},
		{"go build -modfile=.git/go.mod", "-modfile=.git/go.mod", nil},
		{"go build -modfile=alt.txt", "-modfile=alt.txt", []string{".mod"}},
		{"go build -pgo=.git/default.pgo", "-pgo=.git/default.pgo", nil},
		{"go build -pgo " + f.outside + "/p.pgo", f.outside + "/p.pgo", nil},
		// go: values passed to the linker
		{`go build "-ldflags=-extld=./x.sh" .`, "-ldflags=-extld=./x.sh", []string{"-extld"}},
		{"go build -ldflags '-extld=./x.sh' .", "-extld=./x.sh", []string{"-extld"}},
		{"go build -ldflags=all=-extld=./x.sh .", "-ldflags=all=-extld=./x.sh", []string{"-extld"}},
		{"go build -ldflags='cmd/...=-extld=./x.sh' .", "-ldflags=cmd/...=-extld=./x.sh", []string{"-extld"}},
		{`go build -ldflags "-X a=b -extld x" .`, "-X a=b -extld x", []string{"-extld"}},
		{`go build -ldflags " -s  -w	-extld=x" .`, " -s  -w\t-extld=x", []string{"-extld"}},
		{`go build --ldflags=-linkmode=external\ --extld=./x.sh`, "--ldflags=-linkmode=external --extld=./x.sh", []string{"-extld"}},
		{`go build -ldflags="-s '-extld' ./x.sh"`, "-ldflags=-s '-extld' ./x.sh", []string{"-extld"}},
		{`go build -ldflags="'-extld' ./x.sh"`, "-ldflags='-extld' ./x.sh", []string{"quote"}},
		{`go build -ldflags="all='-extld' ./x.sh"`, "-ldflags=all='-extld' ./x.sh", []string{"-extld"}},
		{`go build -ldflags "-s -extldflags=-fuse-ld=./ld"`, "-s -extldflags=-fuse-ld=./ld", []string{"-extldflags"}},
		{`go build -ldflags '-extldflags "-B ./x"'`, `-extldflags "-B ./x"`, []string{"-extldflags"}},
		{"go build -ldflags=-extar=./ar", "-ldflags=-extar=./ar", []string{"-extar"}},
		{"go build -ldflags=-tmpdir=.git/t", "-ldflags=-tmpdir=.git/t", []string{"-tmpdir"}},
		{"go build -ldflags=-o=x", "-ldflags=-o=x", []string{"-o"}},
		{"go build -ldflags=-linkmode=bogus", "-ldflags=-linkmode=bogus", []string{"bogus"}},
		{"go build -ldflags=@flags.txt", "-ldflags=@flags.txt", nil},
		{"go build -ldflags=all=@flags.txt", "-ldflags=all=@flags.txt", []string{"@flags.txt"}},
		{"go build -gcflags=-m\\ @flags.txt", "-gcflags=-m @flags.txt", []string{"@flags.txt"}},
		{`go build -ldflags "-X @flags.txt"`, "-X @flags.txt", []string{"@flags.txt"}},
		{`go build -ldflags "-s ./x.o"`, "-s ./x.o", []string{"./x.o"}},
		{`go build -ldflags "-s -- -extld=x"`, "-s -- -extld=x", nil},
		{`go build -ldflags "'-extld=x"`, "'-extld=x", []string{"quote"}},
		{"go test -ldflags=-extld=./x.sh ./...", "-ldflags=-extld=./x.sh", nil},
		{"go vet -ldflags=-extld=./x.sh ./...", "-ldflags=-extld=./x.sh", nil},
		{"go list -export -ldflags=-extld=./x.sh ./...", "-ldflags=-extld=./x.sh", nil},
		// go: values passed to the compiler and assembler
		{"go build -gcflags=-d=ssa/check/on", "-gcflags=-d=ssa/check/on", []string{"-d"}},
		{"go build -gcflags 'all=-json=0,file://x'", "all=-json=0,file://x", []string{"-json"}},
		{"go build -gcflags=-importcfg=x", "-gcflags=-importcfg=x", []string{"-importcfg"}},
		{"go build -gcflags=-env=GOFLAGS=x", "-gcflags=-env=GOFLAGS=x", []string{"-env"}},
		{"go build -gcflags '-N -l -cpuprofile c.out'", "-N -l -cpuprofile c.out", []string{"-cpuprofile"}},
		{"go build -asmflags=-o=x", "-asmflags=-o=x", []string{"-o"}},
		{"go build -asmflags '-I src'", "-I src", []string{"-I"}},
		{"go build -gccgoflags=-x", "-gccgoflags=-x", []string{"gccgo"}},
		// go: options that run programs, read code from elsewhere, or leave
		{"go build -toolexec=./x.sh .", "-toolexec=./x.sh", nil},
		{"go build -toolexec ./x.sh .", "-toolexec", nil},
		{"go build --toolexec=./x.sh .", "--toolexec=./x.sh", nil},
		{"go test -exec=./x.sh ./...", "-exec=./x.sh", nil},
		{"go test -exec ./x.sh ./...", "-exec", nil},
		{"go vet -vettool=./x .", "-vettool=./x", nil},
		{"go vet --vettool ./x .", "--vettool", nil},
		{"go build -overlay=o.json .", "-overlay=o.json", nil},
		{"go build -C sub .", "-C", nil},
		{"go -C sub build .", "-C", nil},
		{"go build -compiler=gccgo .", "-compiler=gccgo", nil},
		{"go build -buildmode=shared .", "-buildmode=shared", nil},
		{"go build -foo .", "-foo", nil},
		{"go build -ox .", "-ox", nil},
		{"go build ---o=x .", "---o=x", nil},
		{"go test -test.testlogfile=x ./...", "-test.testlogfile=x", nil},
		{"go vet -fix ./...", "-fix", nil},
		{"go env -w GOFLAGS=-x", "-w", nil},
		{"go env --u GOFLAGS", "--u", nil},
		// make: files, directories, evaluation, variables, targets
		{"make -C sub", "-C", nil},
		{"make -Csub", "-Csub", nil},
		{"make -kC sub", "-kC", nil},
		{"make --directory=sub", "--directory=sub", nil},
		{"make --dir=sub", "--dir=sub", nil},
		{"make --eval=x", "--eval=x", nil},
		{"make --ev x", "--ev", nil},
		{"make -E x", "-E", nil},
		{"make -sE x", "-sE", nil},
		{"make -t", "-t", nil},
		{"make --to", "--to", nil},
		{"make --jobserver-auth=3,4", "--jobserver-auth=3,4", nil},
		{"make --s", "--s", []string{"ambiguous"}},
		{"make -f.git/Makefile", "-f.git/Makefile", nil},
		{"make -sf.git/Makefile", "-sf.git/Makefile", nil},
		{"make -sf .git/Makefile", ".git/Makefile", nil},
		{"make --file=.git/x", "--file=.git/x", nil},
		{"make --fi=sub/.git/x", "--fi=sub/.git/x", nil},
		{"make --makefile hooks/x", "hooks/x", nil},
		{"make -I .git", ".git", nil},
		{"make -I.harness", "-I.harness", nil},
		{"make --include-dir=subgit", "--include-dir=subgit", nil},
		{"make -f ../outside/Makefile", "../outside/Makefile", nil},
		{"make -X", "-X", nil},
		{"make --no-such-option", "--no-such-option", nil},
		{"make SHELL=./x.sh", "SHELL=./x.sh", []string{"SHELL"}},
		{"make 'SHELL:=./x.sh'", "SHELL:=./x.sh", nil},
		{"make .SHELLFLAGS=-c", ".SHELLFLAGS=-c", nil},
		{"make MAKEFLAGS+=-Csub", "MAKEFLAGS+=-Csub", nil},
		{"make MAKE=./x.sh test", "MAKE=./x.sh", nil},
		{"make GOFLAGS=-toolexec=./x.sh test", "GOFLAGS=-toolexec=./x.sh", []string{"GOFLAGS"}},
		{"make test GOFLAGS=-toolexec=./x.sh", "GOFLAGS=-toolexec=./x.sh", nil},
		{"make LD_PRELOAD=./x.so test", "LD_PRELOAD=./x.so", nil},
		{"make CC=./x.sh", "CC=./x.sh", nil},
		{"make GIT_EXTERNAL_DIFF=./x.sh", "GIT_EXTERNAL_DIFF=./x.sh", nil},
		{"make 'X!=./x.sh'", "X!=./x.sh", []string{"!="}},
		{"make 'V!=./x.sh'", "V!=./x.sh", []string{"!="}},
		{"make RUN=-exec=./x.sh test", "RUN=-exec=./x.sh", nil},
		{"make 'RUN=a -exec=x' test", "RUN=a -exec=x", nil},
		{"make PKG=../outside", "PKG=../outside", nil},
		{"make -- SHELL=./x.sh", "SHELL=./x.sh", nil},
		// git: drivers, pagers, other repositories, files written
		{"git -c core.pager=./x.sh log", "-c", nil},
		{"git --exec-path=. log", "--exec-path=.", nil},
		{"git -C sub log", "-C", nil},
		{"git --git-dir=sub/.git log", "--git-dir=sub/.git", nil},
		{"git --work-tree=.. status", "--work-tree=..", nil},
		{"git diff --output=x", "--output=x", nil},
		{"git diff --out=.git/x", "--out=.git/x", nil},
		{"git diff --ext-diff", "--ext-diff", nil},
		{"git log -p --textconv", "--textconv", nil},
		{"git log --show-signature", "--show-signature", nil},
		{"git grep --open-files-in-pager=x foo", "--open-files-in-pager=x", nil},
		{"git grep -O foo", "-O", nil},
		{"git log --paginate", "--paginate", nil},
		// the value of an option that takes the next word, when it looks
		// like an option
		{"git branch --list --contains -d x", "-d", nil},
		{"git branch --list --sort --delete x", "--delete", nil},
		// rg: preprocessors, decompressors, host name programs
		{"rg --pre ./x.sh foo", "--pre", nil},
		{"rg --pre=./x.sh foo", "--pre=./x.sh", nil},
		{"rg --pre-glob '*' foo", "--pre-glob", nil},
		{"rg -z foo", "-z", nil},
		{"rg -iz foo", "-iz", nil},
		{"rg --search-zip foo", "--search-zip", nil},
		{"rg --hostname-bin=./x foo", "--hostname-bin=./x", nil},
		{"rg -L foo", "-L", nil},
	}...)
	for _, tc := range cases {
		t.Run(tc.command, func(t *testing.T) {
			_, err := f.w.PlanCommand(tc.command)
			assertRefusedWord(t, tc.command, err, tc.word, tc.mention...)
		})
	}
}

// TestDoubleDashDoesNotEndTheChecks: a "--" can be the value of the
// option before it (rg -e -- --pre=./x.sh searches for "--" and runs
// ./x.sh on every file; git rev-parse --prefix -- --git-dir does the
// same), and the denylist rules of rg, ls and git do not know which of
// their options take one. So every word that is refused on its own is
// refused after "--" too, whichever option (taking a value or not) comes
// before it, and a refusal as an option says why the word was read as one.
// Allowlist rules (make) know every value, so their "--" ends the
// options; a word after it is still checked for paths in every reading.
func TestDoubleDashDoesNotEndTheChecks(t *testing.T) {
	f := newArgFixture(t)
	families := []struct {
		command string
		before  []string // options before the "--", most of them taking a value
		refused []string // words refused on their own
	}{
		{"rg", []string{"-e", "--regexp", "-g", "--glob", "-t", "-m", "-i", "-e foo"},
			[]string{"--pre=./x.sh", "--pre", "--pr=./x.sh", "--pre-glob=*", "-z", "-iz", "--search-zip",
				"--hostname-bin=./x", "--follow", "-L", "-f/etc/passwd", "-f../outside/p", "--file=/etc/passwd", "-0/"}},
		{"ls", []string{"-I", "--hide", "--ignore", "-T", "-w", "-l"},
			[]string{"-L", "-lL", "--dereference", "--deref", "-0/", "-I../outside", "--hide=/etc"}},
		{"git log", []string{"--grep", "--author", "-S", "-G", "-n", "--oneline"},
			[]string{"--output=x", "--out=.git/x", "--ext-diff", "--textconv", "--paginate", "--show-signature"}},
		{"git rev-parse", []string{"--prefix", "--short"},
			[]string{"--output=x", "--paginate"}},
		{"cat", []string{"-n", "-s"}, []string{"-0/", "-n../outside/x"}},
	}
	for _, fam := range families {
		for _, word := range fam.refused {
			alone := fam.command + " " + word + " x"
			_, err := f.w.PlanCommand(alone)
			assertRefusedWord(t, alone, err, word)
			for _, before := range append([]string{""}, fam.before...) {
				command := strings.Join(strings.Fields(fam.command+" "+before+" -- "+word+" x"), " ")
				t.Run(command, func(t *testing.T) {
					_, err := f.w.PlanCommand(command)
					assertRefusedWord(t, command, err, word)
					// A word refused for a path that any reading of it
					// names needs no word on "--"; one refused as an
					// option does.
					if msg := err.Error(); !strings.Contains(msg, "path") && !strings.Contains(msg, "root") &&
						!strings.Contains(msg, `after "--"`) {
						t.Errorf("%s: %q does not say why a word after \"--\" was read as an option", command, msg)
					}
				})
			}
		}
	}
	for _, command := range []string{"make -- -C/tmp", "make -- -f../outside/Makefile", "make -- -I/etc"} {
		t.Run(command, func(t *testing.T) {
			_, err := f.w.PlanCommand(command)
			word := strings.Fields(command)[2]
			assertRefusedWord(t, command, err, word)
		})
	}
}

// TestOptionValueThatLooksLikeAnOption: make's rule knows which options
// take the next word as their value (make -f -0/ reads a makefile named
// "-0/"), but a value that looks like an option group is still checked
// in every reading as a path, as a word anywhere else is: make's options
// that take a file, short and long, each followed by such words.
func TestOptionValueThatLooksLikeAnOption(t *testing.T) {
	f := newArgFixture(t)
	for _, opt := range []string{"-f", "--file", "--makefile", "-I", "--include-dir", "-o", "--old-file", "-W", "--what-if", "--new-file"} {
		for _, word := range []string{"-0/", "-C/tmp", "-x../outside", "--x=/etc", "-s/etc/passwd"} {
			command := "make " + opt + " " + word
			t.Run(command, func(t *testing.T) {
				_, err := f.w.PlanCommand(command)
				assertRefusedWord(t, command, err, word)
			})
		}
		// A plain value of the same shape, inside the root, still passes.
		command := "make " + opt + " -src"
		if _, err := f.w.PlanCommand(command); err != nil {
			t.Errorf("%s: %v", command, err)
		}
	}
}

// TestArgumentRulesAllowBenign: what an agent runs every day passes, with
// the argv it gave.
func TestArgumentRulesAllowBenign(t *testing.T) {
	f := newArgFixture(t)
	for _, command := range []string{
		"pwd", "ls", "ls -la", "ls -la src",
		"go test ./...", "go test -run TestX -count=1 ./...", "go test -race -cover ./...",
		"go test -v -run '^TestA' ./...",
		"go test -coverprofile=cover.out ./...", "go test -outputdir=bin -coverprofile=c.out -cpuprofile cpu.out ./...",
		"go test -c -o bin/x.test ./cmd/x", "go test ./... -args -v -update",
		"go test -test.v -test.run=X ./...", "go test -json -shuffle=on -timeout 30s ./...",
		"go test -fuzz=FuzzX -fuzztime=10s ./cmd/x", "go test -bench . -benchmem -run NONE ./...",
		"go build ./...", "go build -o bin/x ./cmd/x", "go build -o=bin/ ./...", "go build -o x ./cmd/x",
		"go build -trimpath -buildvcs=false ./cmd/x", "go build -race -tags 'netgo osusergo' ./...",
		`go build -ldflags "-s -w -X main.version=1.2.3" ./cmd/x`, "go build -ldflags=all=-s ./cmd/x",
		"go build -ldflags '-X main.version=1.2.3 -linkmode=internal' ./cmd/x",
		"go build -gcflags 'all=-N -l' ./cmd/x", "go build -gcflags=-m=2 ./cmd/x",
		"go build -asmflags=-S ./cmd/x", "go build -pgo=off ./cmd/x", "go build -mod=readonly ./...",
		"go build -modfile=alt.mod ./...",
		"go vet", "go vet ./...", "go vet -printf.funcs=Logf ./...", "go vet -unusedresult -json ./...",
		"go list ./...", "go list -f '{{.Dir}}' ./...", "go list -m -json all", "go list -json=Dir,ImportPath ./...",
		"go env GOROOT", "go env -json", "go version", "go version -m bin/x",
		"make", "make test", "make -j4 test", "make -j 4 test", "make -kj4 test", "make -k -s test",
		"make -f Makefile test", "make --file=Makefile test", "make -sfMakefile test", "make V=1 test",
		"make RUN=TestX test", "make --no-print-directory test", "make -n", "make --dry test",
		"make -O test", "make --output-sync=target test", "make -l 2.5 test", "make --debug=b test",
		"make -- test",
		"git status", "git status --short", "git log --oneline -5", "git log --format=%H%n%s -3",
		"git log -C --oneline", "git log --pretty=format:%h%x09%an%x09%s", "git diff HEAD",
		"git branch --list", "git show HEAD:go.mod", "git log -g --format=%gd",
		"rg -n foo", "rg -n -e foo -g '*.go' .", "rg --json foo", "rg -i --type go foo src",
		"touch newfile", "touch bin/newfile", "cat go.mod",
		"rg -e foo -- src", "rg -- foo src", "rg -n -- -foo src", "ls -- src", "ls -la -- src",
		"git log -- src", "git log --oneline -5 -- src go.mod", "git diff HEAD -- src", "cat -- go.mod",
		"make -- test", "make -k -- test",
	} {
		t.Run(command, func(t *testing.T) {
			plan, err := f.w.PlanCommand(command)
			if action.CodeOf(err) == action.CodeNotFound {
				t.Skipf("%s is not installed", strings.Fields(command)[0])
			}
			if err != nil {
				t.Fatalf("PlanCommand(%q): %v", command, err)
			}
			words, _ := Tokenize(command)
			for _, w := range words[1:] {
				if !slices.Contains(plan.ExecArgv, w) {
					t.Fatalf("exec argv %q lost the word %q", plan.ExecArgv, w)
				}
			}
		})
	}
}

func TestProtectedName(t *testing.T) {
	for name, want := range map[string]bool{
		".git": true, ".GIT": true, ".Git": true, ".git.": true, ".git ": true, ".git. .": true,
		".g\u200bit": true, ".gi\u200dt": true, "\ufeff.git": true, ".git\ufe0f": true,
		"GIT~1": true, "git~12": true, ".harness": true, ".HARNESS": true, "HARNES~1": true,
		"git": false, ".gitignore": false, ".github": false, "x.git": false, ".git-x": false,
		"GIT~": false, "GIT~X": false, "harness": false, ".harnes": false, "": false, ".": false, "..": false,
	} {
		if got := protectedName(name); got != want {
			t.Errorf("protectedName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestSplitQuotedFields pins the splitting the go command applies to
// -gcflags and -ldflags values (cmd/internal/quoted.Split).
func TestSplitQuotedFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"", nil, true},
		{"  -s\t-w\n", []string{"-s", "-w"}, true},
		{"-X 'main.v=a b' -s", []string{"-X", "main.v=a b", "-s"}, true},
		{`"-extld" x`, []string{"-extld", "x"}, true},
		{`a'b c'`, []string{"a'b", "c'"}, true},
		{`'a'b`, []string{"a", "b"}, true},
		{`"" x`, []string{"", "x"}, true},
		{`'unterminated`, nil, false},
		{`x "y`, nil, false},
	} {
		got, ok := splitQuotedFields(tc.in)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("splitQuotedFields(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestGoFlagTablesMatchTheGoCommand asks the installed go command (and its
// compiler, linker and assembler) whether each flag of the allowlists
// takes a value, since a wrong arity would let a value pass for something
// else: a value flag given last answers "flag needs an argument", a bool
// flag does not, and a flag the program does not know says so.
func TestGoFlagTablesMatchTheGoCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command once per flag")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not installed")
	}
	dir := t.TempDir()
	env := append(os.Environ(), "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off", "GO111MODULE=on")
	probe := func(args ...string) string {
		cmd := exec.Command(goBin, args...)
		cmd.Dir, cmd.Env = dir, env
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	check := func(what string, spec optSpec, out string) {
		t.Helper()
		if spec.kind == optRefused {
			return
		}
		switch needs := strings.Contains(out, "flag needs an argument"); {
		case strings.Contains(out, "provided but not defined"):
			t.Errorf("%s: the program does not know it", what)
		case spec.kind == optBool && needs:
			t.Errorf("%s: listed as a bool flag but takes a value", what)
		case spec.kind != optBool && spec.kind != optRest && !needs:
			t.Errorf("%s: listed as taking a value but is a bool flag: %s", what, out)
		}
	}
	for _, sub := range []string{"build", "test", "vet", "list", "version", "env"} {
		for name, spec := range goRule.subcommands[sub].opts {
			if name == "args" || sub == "vet" && name == "V" || name == "v" && sub == "vet" {
				continue // -args ends the go flags; vet -V prints and exits
			}
			check("go "+sub+" -"+name, spec, probe(sub, "-"+name))
		}
	}
	for tool, flags := range map[string]map[string]optSpec{"compile": compileFlags, "link": linkFlags, "asm": asmFlags} {
		for name, spec := range flags {
			if name == "V" {
				continue // prints the version and exits
			}
			check("go tool "+tool+" -"+name, spec, probe("tool", tool, "-"+name))
		}
	}
}

// TestMakeTableKnowsEveryOption: every option the installed make lists in
// its help is in the table (so abbreviations resolve as make resolves
// them), with the same arity for short options.
func TestMakeTableKnowsEveryOption(t *testing.T) {
	out, err := exec.Command("make", "--help").Output()
	if err != nil {
		t.Skipf("make --help: %v", err)
	}
	for _, m := range regexp.MustCompile(`--([a-z][a-z-]+)`).FindAllStringSubmatch(string(out), -1) {
		if _, ok := makeLong[m[1]]; !ok {
			t.Errorf("make --%s is not in makeLong", m[1])
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^  -([A-Za-z])( \[[A-Z]+\]|\[[A-Z]+\]| [A-Z]+)?`).FindAllStringSubmatch(string(out), -1) {
		spec, ok := makeShort[m[1][0]]
		switch {
		case !ok:
			t.Errorf("make -%s is not in makeShort", m[1])
		case spec.kind == optRefused:
		case m[2] == "" && spec.kind != optBool:
			t.Errorf("make -%s takes no value, but the table says kind %d", m[1], spec.kind)
		case strings.HasPrefix(m[2], "[") && spec.kind != optOptional:
			t.Errorf("make -%s takes an optional attached value, but the table says kind %d", m[1], spec.kind)
		case strings.HasPrefix(m[2], " [") && (spec.kind != optOptional || !spec.numericNext):
			t.Errorf("make -%s takes an optional value, also as the next word, but the table says kind %d", m[1], spec.kind)
		case strings.HasPrefix(m[2], " ") && !strings.HasPrefix(m[2], " [") && (spec.kind == optBool || spec.kind == optOptional):
			t.Errorf("make -%s takes a value, but the table says kind %d", m[1], spec.kind)
		}
	}
}

// FuzzPlanCommand: no input panics, every refusal carries a code, an
// accepted command has no word that, read as a path in any of the ways
// the rules consider, leaves the root, nor one that, read as an option
// wherever it stands, is one its rule refuses, and an accepted touch (whose every
// word is a write target) names nothing beneath .git/ or .harness/, as
// spelled or where its symlinks lead.
func FuzzPlanCommand(f *testing.F) {
	for _, s := range []string{
		"ls -la src", "git log --oneline -5", "git diff HEAD~1..HEAD -- src", "go test ./...",
		"make -f Makefile all", "rg -n foo src", "cat ../x", "ls -I../x", "git show HEAD:a/../../b",
		"go build -o=bin/x", "make -sfMakefile", "ls link", "ls link/x", "git branch --list x",
		"ls a=b:c,../d", "ls '-la' \"src\"", "touch .git/x", "ls --hide=~root",
		"go build -o hooks/x ./...", "go build -ldflags '-s -w -X a=b' .", "go build -ldflags=all=-extld=x",
		"go test -outputdir=src -coverprofile=../.git/c ./...", "go test ./... -args -test.v",
		"make -j 4 V=1 test", "make --dry -kj4", "make 'X!=id'", "touch SUB/.GIT/x", "touch hooks/../y",
		"go build -gcflags 'all=-N -l'", "make -sf.git/x", "go vet -printf.funcs=a,b ./...",
		"rg -e -- src", "rg --pre=x foo", "ls -I -- x", "git log --grep -- src", "git branch --list --contains x",
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
	if err := os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(".git/hooks", filepath.Join(root, "hooks")); err != nil {
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
		if word, letter := refusedOptionReading(plan.Argv); word != "" {
			t.Fatalf("PlanCommand(%q) accepted %q, which reads as the refused option %s", s, word, letter)
		}
		for _, word := range plan.Argv[1:] {
			for _, p := range pathReadings(word, groups) {
				if escapesRoot(root, p) {
					t.Fatalf("PlanCommand(%q) accepted %q, which reads as %q outside the root", s, word, p)
				}
				if plan.Argv[0] == "touch" && writesProtected(root, p) {
					t.Fatalf("PlanCommand(%q) accepted %q, which writes %q beneath .git or .harness", s, word, p)
				}
			}
		}
	})
}

// refusedOptionReading is an oracle that reads argv independently of the
// rules' parse: for a denylist rule, every word that starts with a dash,
// wherever it stands (after "--", or where it may be the value of the
// option before it), is read as an option, and none may name one the
// rule's tables refuse. It returns the first such word and the option.
func refusedOptionReading(argv []string) (string, string) {
	rule := commandRules[argv[0]]
	if rule == nil {
		return "", ""
	}
	words := argv[1:]
	if rule.subcommands != nil {
		i := slices.IndexFunc(words, func(w string) bool { return !strings.HasPrefix(w, "-") })
		if i < 0 {
			return "", ""
		}
		rule, words = rule.subcommands[words[i]], words[i+1:]
	}
	if rule == nil || rule.opts != nil || rule.short != nil {
		return "", ""
	}
	for _, w := range words {
		if w == "-" || w == "--" || !strings.HasPrefix(w, "-") {
			continue
		}
		if strings.HasPrefix(w, "--") {
			name, _, _ := strings.Cut(w[2:], "=")
			if ref := rule.refusedLongMatch(name); ref != "" {
				return w, "--" + ref
			}
			continue
		}
		for _, l := range w[1:] {
			if strings.ContainsRune(rule.refusedShort, l) {
				return w, "-" + string(l)
			}
		}
	}
	return "", ""
}

// writesProtected is an oracle independent of the rules: p, or where the
// existing part of it leads, has a component that is .git or .harness in
// any letter case.
func writesProtected(root, p string) bool {
	protected := func(rel string) bool {
		for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
			if l := strings.ToLower(part); l == ".git" || l == ".harness" {
				return true
			}
		}
		return false
	}
	if protected(p) {
		return true
	}
	full := filepath.Join(root, p)
	for cur, rest := full, ""; strings.HasPrefix(cur, root); cur, rest = filepath.Dir(cur), filepath.Join(filepath.Base(cur), rest) {
		if _, err := os.Lstat(cur); err == nil {
			resolved, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return false
			}
			rel, err := filepath.Rel(root, filepath.Join(resolved, rest))
			return err == nil && protected(rel)
		}
		if cur == root {
			break
		}
	}
	return false
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
