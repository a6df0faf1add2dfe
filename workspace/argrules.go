package workspace

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/harness-runtime/harness/action"
)

// optStyle says how a program spells its options.
type optStyle int

const (
	// styleGetopt: short options group (-abc), a short option's value may
	// be attached (-fFILE), long options are --name[=value] and may be
	// abbreviated to any unambiguous prefix (GNU getopt_long, git).
	styleGetopt optStyle = iota
	// styleGoFlag: Go's flag package: -name or --name, value as -name=value
	// or the next word; no grouping, no abbreviation.
	styleGoFlag
)

// argRule is the argument policy of one command or subcommand. Rules are
// data: adding a command or tightening one is an edit of commandRules, not
// of the checking code.
//
// Every word that is not a refused option is also checked as a possible
// path (see checkWordPaths), whatever the rule says; the rule only adds
// refusals.
type argRule struct {
	style optStyle
	// globalOpts are the only options allowed before the subcommand.
	globalOpts []string
	// subcommands, when non-nil, makes the first non-option word a
	// subcommand that must be listed here (and, for git, configured).
	subcommands map[string]*argRule
	// refusedShort lists refused single-letter options (getopt style);
	// they are refused anywhere in a group, even where the letter may be
	// part of an attached value: over-refusing is safe, under-refusing not.
	refusedShort string
	// refusedLong lists refused long options without dashes. In getopt
	// style every prefix of one is refused too, since abbreviations work.
	refusedLong []string
	// valueLong lists long options that take the next word as their value
	// when no =value is attached (used to tell values from positionals).
	valueLong []string
	// writeLong lists options whose value names a file the program writes:
	// it must stay inside the root and outside .git/ and .harness/.
	writeLong []string
	// positionalNeeds, when non-empty, allows positional words only when
	// one of these options is present (git branch creates a branch from a
	// bare name; it only lists with --list).
	positionalNeeds []string
	// protectAll treats every word as a possible write target (commands
	// whose semantics the table does not know).
	protectAll bool
	// refusedVars are NAME=value words (make's command-line variables) that
	// are refused: MAKEFLAGS would smuggle in refused options such as -C.
	refusedVars []string
	// inject is inserted right after the subcommand to switch off program
	// execution the repository could configure (external diff, textconv).
	inject []string
}

// gitAlways are refused for every git subcommand: they run programs, write
// files, pick another repository or work tree, or start a pager or browser.
var gitAlways = []string{
	"output", "ext-diff", "textconv", "exec-path", "git-dir", "work-tree",
	"upload-pack", "receive-pack", "exec", "open-files-in-pager",
	"show-signature", "help", "config-env", "namespace", "super-prefix",
	"paginate", "web",
}

func gitSub(extra ...func(*argRule)) *argRule {
	r := &argRule{style: styleGetopt, refusedLong: gitAlways}
	for _, f := range extra {
		f(r)
	}
	return r
}

func refuseLong(names ...string) func(*argRule) {
	return func(r *argRule) { r.refusedLong = append(slices.Clip(r.refusedLong), names...) }
}

func refuseShort(letters string) func(*argRule) {
	return func(r *argRule) { r.refusedShort += letters }
}

func injectArgs(args ...string) func(*argRule) {
	return func(r *argRule) { r.inject = args }
}

var noExternalDiff = injectArgs("--no-ext-diff", "--no-textconv")

// goWrites are the go command's options (and test binary flags) whose value
// is a file or directory the toolchain writes.
var goWrites = []string{
	"o", "modfile", "pkgdir", "coverprofile", "cpuprofile", "memprofile",
	"blockprofile", "mutexprofile", "trace", "outputdir", "fuzzcachedir",
	"debug-actiongraph", "debug-trace", "debug-runtime-trace",
	"test.coverprofile", "test.cpuprofile", "test.memprofile",
	"test.blockprofile", "test.mutexprofile", "test.trace",
	"test.outputdir", "test.gocoverdir", "test.testlogfile", "test.fuzzcachedir",
}

func goSub(extra ...string) *argRule {
	return &argRule{
		style:       styleGoFlag,
		refusedLong: append([]string{"toolexec", "exec", "C", "vettool"}, extra...),
		writeLong:   goWrites,
	}
}

// commandRules holds the per-command argument rules. A command that is
// allowed by configuration but missing here gets defaultRule.
var commandRules = map[string]*argRule{
	"pwd": {style: styleGetopt},
	// Following symlinks would read what a link inside the root points at,
	// wherever that is; path arguments are checked, directory walks not.
	"ls": {style: styleGetopt, refusedShort: "L", refusedLong: []string{"dereference"}},
	"rg": {
		style:        styleGetopt,
		refusedShort: "zL",
		refusedLong:  []string{"pre", "pre-glob", "search-zip", "hostname-bin", "follow"},
	},
	"make": {
		style:        styleGetopt,
		refusedShort: "CE",
		refusedLong:  []string{"directory", "eval"},
		refusedVars:  []string{"MAKEFLAGS", "MFLAGS", "GNUMAKEFLAGS", "MAKEFILES", "MAKEFILE_LIST", "SHELL", ".SHELLFLAGS", "MAKESHELL"},
	},
	"go": {
		style: styleGoFlag,
		subcommands: map[string]*argRule{
			"build":   goSub(),
			"test":    goSub(),
			"vet":     goSub(),
			"list":    goSub(),
			"version": goSub(),
			"env":     goSub("w", "u"),
		},
	},
	"git": {
		style: styleGetopt,
		globalOpts: []string{
			"--no-pager", "--literal-pathspecs", "--glob-pathspecs",
			"--noglob-pathspecs", "--icase-pathspecs", "--no-optional-locks",
			"--no-replace-objects",
		},
		subcommands: map[string]*argRule{
			"status":    gitSub(),
			"diff":      gitSub(noExternalDiff),
			"show":      gitSub(noExternalDiff),
			"log":       gitSub(noExternalDiff),
			"shortlog":  gitSub(),
			"rev-parse": gitSub(),
			"ls-files":  gitSub(),
			"ls-tree":   gitSub(),
			"describe":  gitSub(refuseLong("dirty", "broken")),
			"blame":     gitSub(injectArgs("--no-textconv")),
			// git grep's -O opens a pager; -o (only-matching) is refused too
			// because the issue names it, and losing it costs little.
			"grep": gitSub(refuseShort("Oo"), injectArgs("--no-textconv")),
			"branch": gitSub(
				refuseShort("dDmMcCfut"),
				refuseLong("delete", "move", "copy", "force", "set-upstream-to",
					"set-upstream", "unset-upstream", "edit-description", "track",
					"no-track", "create-reflog", "recurse-submodules"),
				func(r *argRule) {
					r.valueLong = []string{"contains", "no-contains", "merged", "no-merged", "points-at", "sort", "format"}
					r.positionalNeeds = []string{"-l", "--list"}
				},
			),
		},
	},
}

// defaultRule applies to an allowed command the table does not know: no
// option is refused, but every word is checked as a write target.
var defaultRule = &argRule{style: styleGetopt, protectAll: true}

// argChecker checks the words after the command name against a rule.
type argChecker struct {
	w    *Workspace
	cmd  string
	gitS []string // allowed git subcommands
}

// check validates args (the words after the command name) and returns the
// argv tail to execute: args with the rule's injected options inserted
// after the subcommand.
func (c argChecker) check(args []string) ([]string, error) {
	rule := commandRules[c.cmd]
	if rule == nil {
		rule = defaultRule
	}
	if rule.subcommands == nil {
		if err := c.checkWords(rule, args); err != nil {
			return nil, err
		}
		return args, nil
	}
	i := 0
	for ; i < len(args) && strings.HasPrefix(args[i], "-"); i++ {
		if !slices.Contains(rule.globalOpts, args[i]) {
			return nil, refuseWord(args[i], "%s: option %q is not allowed before the subcommand", c.cmd, args[i])
		}
	}
	if i == len(args) {
		return nil, action.Errorf(action.CodeArgumentNotAllowed, "%s needs a subcommand", c.cmd)
	}
	subName := args[i]
	sub := rule.subcommands[subName]
	if sub == nil || (c.cmd == "git" && !slices.Contains(c.gitS, subName)) {
		return nil, refuseWord(subName, "%s: subcommand %q is not allowed", c.cmd, subName)
	}
	rest := args[i+1:]
	if err := c.checkWords(sub, rest); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(args)+len(sub.inject))
	out = append(out, args[:i+1]...)
	out = append(out, sub.inject...)
	return append(out, rest...), nil
}

func (c argChecker) checkWords(rule *argRule, args []string) error {
	afterDashDash := false
	positionals := 0
	unlocked := false // an option of positionalNeeds was seen
	for i := 0; i < len(args); i++ {
		word := args[i]
		if afterDashDash || word == "-" || !strings.HasPrefix(word, "-") {
			positionals++
			if name, _, ok := strings.Cut(word, "="); ok && slices.Contains(rule.refusedVars, strings.TrimRight(name, ":+?!")) {
				return refuseWord(word, "%s: %q sets %s on the command line, which is not allowed", c.cmd, word, strings.TrimRight(name, ":+?!"))
			}
			if err := c.checkWordPaths(word, word, rule.protectAll); err != nil {
				return err
			}
			continue
		}
		if word == "--" {
			afterDashDash = true
			continue
		}
		if slices.Contains(rule.positionalNeeds, word) {
			unlocked = true
		}
		long := rule.style == styleGoFlag || strings.HasPrefix(word, "--")
		if long {
			name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(word, "-"), "-"), "=")
			if refused := rule.refusedLongMatch(name); refused != "" {
				return refuseWord(word, "%s: option %q is not allowed (it runs a program, writes a file or leaves the root: %s)",
					c.cmd, word, refused)
			}
			write := rule.protectAll || slices.Contains(rule.writeLong, name)
			takesNext := write || slices.Contains(rule.valueLong, name)
			if !hasVal && takesNext && i+1 < len(args) {
				i++
				val, hasVal = args[i], true
				word = args[i]
			}
			if hasVal {
				if err := c.checkWordPaths(word, val, write); err != nil {
					return err
				}
			}
			if err := c.checkWordPaths(word, word, rule.protectAll); err != nil {
				return err
			}
			continue
		}
		for j := 1; j < len(word); j++ {
			if strings.IndexByte(rule.refusedShort, word[j]) >= 0 {
				return refuseWord(word, "%s: option -%c (in %q) is not allowed (it runs a program, writes a file or leaves the root)",
					c.cmd, word[j], word)
			}
		}
		// Any suffix may be an attached value (-fFILE, -sfFILE): refuse the
		// ones that name an absolute or escaping path, and resolve the
		// first one (the common -fFILE case) against the file system.
		for j := 2; j < len(word); j++ {
			if err := lexicalPathCheck(word, word[j:]); err != nil {
				return err
			}
		}
		if len(word) > 2 {
			if err := c.checkWordPaths(word, word[2:], rule.protectAll); err != nil {
				return err
			}
		}
		if err := c.checkWordPaths(word, word, rule.protectAll); err != nil {
			return err
		}
	}
	if positionals > 0 && len(rule.positionalNeeds) > 0 && !unlocked {
		word := firstPositional(args)
		return refuseWord(word, "%s: the bare argument %q would create or change something; only listing (%s) is allowed",
			c.cmd, word, strings.Join(rule.positionalNeeds, " or "))
	}
	return nil
}

func firstPositional(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") || a == "-" {
			return a
		}
	}
	return args[len(args)-1]
}

// refusedLongMatch returns the refused long option that name spells or
// abbreviates, or "".
func (r *argRule) refusedLongMatch(name string) string {
	for _, ref := range r.refusedLong {
		if name == ref {
			return ref
		}
		if r.style == styleGetopt && name != "" && strings.HasPrefix(ref, name) {
			return ref
		}
	}
	return ""
}

// checkWordPaths checks every piece of word that a program could take as a
// path: value itself and its parts split at '=', ':' and ','. A piece is
// refused if it is absolute, starts with '~', climbs out of the root with
// "..", or resolves (through symlinks) outside the root. When write is
// set, a piece must also not lie beneath .git/ or .harness/.
//
// Pieces that do not exist are accepted: most words are not paths at all
// (revisions, patterns, package names), and a new file named by one is
// created inside the root, where the sandbox lets the program write.
func (c argChecker) checkWordPaths(word, value string, write bool) error {
	pieces := strings.FieldsFunc(value, func(r rune) bool { return r == '=' || r == ':' || r == ',' })
	if value != "" && !slices.Contains(pieces, value) {
		pieces = append(pieces, value)
	}
	for _, p := range pieces {
		p = strings.TrimLeft(p, "-")
		if p == "" {
			continue
		}
		if err := lexicalPathCheck(word, p); err != nil {
			return err
		}
		rel := filepath.Clean(p)
		if write {
			first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
			if first == ".git" || first == ".harness" {
				return refuseWord(word, "%s: argument %q would write beneath %s/, which no workspace action may do", c.cmd, word, first)
			}
		}
		if _, err := c.w.root.Stat(rel); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return refuseWord(word, "%s: argument %q resolves outside the workspace root", c.cmd, word)
		}
	}
	return nil
}

// lexicalPathCheck refuses a piece that names a place outside the root
// without looking at the file system.
func lexicalPathCheck(word, p string) error {
	switch {
	case p == "":
		return nil
	case filepath.IsAbs(p):
		return refuseWord(word, "argument %q holds the absolute path %q; paths must be relative to the workspace root", word, p)
	case strings.HasPrefix(p, "~"):
		return refuseWord(word, "argument %q names a home directory; paths must be relative to the workspace root", word)
	case !filepath.IsLocal(p):
		return refuseWord(word, "argument %q leaves the workspace root", word)
	}
	return nil
}

// refuseWord returns an argument_not_allowed error whose payload names the
// offending word.
func refuseWord(word, format string, args ...any) *action.Error {
	e := action.Errorf(action.CodeArgumentNotAllowed, format, args...)
	e.Payload = map[string]any{"word": word}
	return e
}
