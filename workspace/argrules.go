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
// data: adding a command or tightening one is an edit of commandRules (or
// of goRules and makeRule), not of the checking code.
//
// A rule is an allowlist when opts is set: every option must be listed
// there, and its value is checked according to its kind (see optSpec).
// Otherwise it is a denylist of the refused options. Either way, every word
// is also checked as a possible path (see checkWordPaths): the rule only
// adds refusals.
type argRule struct {
	style optStyle
	// globalOpts are the only options allowed before the subcommand.
	globalOpts []string
	// subcommands, when non-nil, makes the first non-option word a
	// subcommand that must be listed here (and, for git, configured).
	subcommands map[string]*argRule

	// opts, when non-nil, is the allowlist of long options (Go flags, or
	// getopt long names without dashes); short is the allowlist of getopt
	// short options. Options not listed are refused.
	opts  map[string]optSpec
	short map[byte]optSpec
	// positional says how words that are not options are checked in an
	// allowlist rule: as read paths (the zero value) or, for make's
	// targets, as write targets.
	positional optKind
	// assign, when set, checks positional NAME=value words (make's
	// command-line variables).
	assign func(c argChecker, word string) error
	// after, when set, checks what the options say together once every
	// word has passed on its own (go test's -outputdir and profiles).
	after func(c argChecker, seen []seenOpt) error

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
	// positionalNeeds, when non-empty, allows positional words only when
	// one of these options is present (git branch creates a branch from a
	// bare name; it only lists with --list).
	positionalNeeds []string
	// protectAll treats every word as a possible write target (commands
	// whose semantics the table does not know).
	protectAll bool
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

// commandRules holds the per-command argument rules. A command that is
// allowed by configuration but missing here gets defaultRule.
//
// go and make are allowlists: their options pass values to other programs
// (the compiler and linker, the shell) and name files they write, so only
// options known to be inert, with values checked, are allowed. git, rg and
// ls are denylists of the options that run programs, write files or leave
// the root: their read-only options number in the hundreds and none of
// the others does any of that.
var commandRules = map[string]*argRule{
	"pwd": {style: styleGetopt},
	// Following symlinks would read what a link inside the root points at,
	// wherever that is; path arguments are checked, directory walks not.
	"ls": {style: styleGetopt, refusedShort: "L", refusedLong: []string{"dereference"}},
	// rg runs programs for --pre (and --pre-glob, which only selects files
	// for it), -z/--search-zip (decompressors) and --hostname-bin; it
	// writes no file.
	"rg": {
		style:        styleGetopt,
		refusedShort: "zL",
		refusedLong:  []string{"pre", "pre-glob", "search-zip", "hostname-bin", "follow"},
	},
	"make": makeRule,
	"go":   goRule,
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

// checkWords checks args against a denylist rule, or hands an allowlist
// rule to checkAllowed.
func (c argChecker) checkWords(rule *argRule, args []string) error {
	if rule.opts != nil || rule.short != nil {
		return c.checkAllowed(rule, args)
	}
	// A denylist rule does not know which options take a value, so it
	// cannot tell a "--" that ends the options from one that is the value
	// of the option before it, as in rg -e -- --pre=sh (rg searches for
	// "--" and runs sh). So a word after "--" that looks like an option is
	// checked as one as well as a positional, and never takes the next
	// word as its value.
	afterDashDash := false
	positionals := 0
	unlocked := false // an option of positionalNeeds was seen
	for i := 0; i < len(args); i++ {
		word := args[i]
		option := looksLikeOption(word)
		if afterDashDash || !option {
			positionals++
			if err := c.checkWordPaths(word, word, rule.protectAll); err != nil {
				return err
			}
		}
		if !option {
			continue
		}
		if word == "--" && !afterDashDash {
			afterDashDash = true
			continue
		}
		if err := c.checkOption(rule, word); err != nil {
			if afterDashDash {
				return explainDashDash(err)
			}
			return err
		}
		if afterDashDash {
			continue
		}
		if slices.Contains(rule.positionalNeeds, word) {
			unlocked = true
		}
		// A long option of valueLong takes the next word as its value; one
		// that looks like an option is checked as one too.
		long := rule.style == styleGoFlag || strings.HasPrefix(word, "--")
		name, _, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(word, "-"), "-"), "=")
		if long && !hasVal && slices.Contains(rule.valueLong, name) && i+1 < len(args) {
			i++
			val := args[i]
			if err := c.checkWordPaths(val, val, rule.protectAll); err != nil {
				return err
			}
			if looksLikeOption(val) {
				if err := c.checkOption(rule, val); err != nil {
					return err
				}
			}
		}
	}
	if positionals > 0 && len(rule.positionalNeeds) > 0 && !unlocked {
		word := firstPositional(args)
		return refuseWord(word, "%s: the bare argument %q would create or change something; only listing (%s) is allowed",
			c.cmd, word, strings.Join(rule.positionalNeeds, " or "))
	}
	return nil
}

// looksLikeOption reports whether a program may read word as an option
// (or as "--"): it starts with a dash and is not "-" (standard input).
func looksLikeOption(word string) bool {
	return word != "-" && strings.HasPrefix(word, "-")
}

// checkOption checks a word of a denylist rule that looks like an option:
// no refused long name or short letter, and no path outside the root in
// it, in its value (--opt=VALUE) or in any suffix of a short group.
func (c argChecker) checkOption(rule *argRule, word string) error {
	if rule.style == styleGoFlag || strings.HasPrefix(word, "--") {
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(word, "-"), "-"), "=")
		if refused := rule.refusedLongMatch(name); refused != "" {
			return refuseWord(word, "%s: option %q is not allowed (it runs a program, writes a file or leaves the root: %s)",
				c.cmd, word, refused)
		}
		if hasVal {
			if err := c.checkWordPaths(word, val, rule.protectAll); err != nil {
				return err
			}
		}
		return c.checkWordPaths(word, word, rule.protectAll)
	}
	for j := 1; j < len(word); j++ {
		if strings.IndexByte(rule.refusedShort, word[j]) >= 0 {
			return refuseWord(word, "%s: option -%c (in %q) is not allowed (it runs a program, writes a file or leaves the root)",
				c.cmd, word[j], word)
		}
	}
	return c.checkShortGroupPaths(word, rule.protectAll)
}

// explainDashDash adds to the refusal of a word after "--" why it was
// read as an option at all.
func explainDashDash(err error) error {
	var e *action.Error
	if errors.As(err, &e) {
		e.Message += `; a word after "--" that looks like an option is checked as one, since "--" may be the value of the option before it`
	}
	return err
}

// checkShortGroupPaths checks a short option group whose letters may take
// attached values (-fFILE, -sfFILE): any suffix may be a value, so every
// suffix that names an absolute or escaping path is refused, and the first
// one (the common -fFILE case) is resolved against the file system.
func (c argChecker) checkShortGroupPaths(word string, write bool) error {
	for j := 2; j < len(word); j++ {
		if err := lexicalPathCheck(word, word[j:]); err != nil {
			return err
		}
	}
	if len(word) > 2 {
		if err := c.checkWordPaths(word, word[2:], write); err != nil {
			return err
		}
	}
	return c.checkWordPaths(word, word, write)
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
// path: value itself and its parts split at '=', ':' and ',' (see
// pathPieces). A piece is refused if it is absolute, starts with '~',
// climbs out of the root with "..", or resolves (through symlinks) outside
// the root. When write is set, every piece must also pass checkTarget's
// write rules: no .git or .harness component anywhere, as spelled or
// where its symlinks lead, and no hard link.
//
// Pieces that do not exist are accepted: most words are not paths at all
// (revisions, patterns, package names), and a new file named by one is
// created inside the root, where the sandbox lets the program write.
func (c argChecker) checkWordPaths(word, value string, write bool) error {
	for _, p := range pathPieces(value) {
		if err := lexicalPathCheck(word, p); err != nil {
			return err
		}
		if write {
			if err := c.checkTarget(word, p, targetWrite); err != nil {
				return err
			}
			continue
		}
		if _, err := c.w.root.Stat(filepath.Clean(p)); err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return refuseWord(word, "%s: argument %q resolves outside the workspace root", c.cmd, word)
		}
	}
	return nil
}

// pathPieces returns the pieces of value a program could take as a path:
// value itself and its parts split at '=', ':' and ',', each without
// leading dashes (--opt=../x), empty pieces dropped.
func pathPieces(value string) []string {
	pieces := strings.FieldsFunc(value, func(r rune) bool { return r == '=' || r == ':' || r == ',' })
	if value != "" && !slices.Contains(pieces, value) {
		pieces = append(pieces, value)
	}
	out := pieces[:0]
	for _, p := range pieces {
		if p = strings.TrimLeft(p, "-"); p != "" {
			out = append(out, p)
		}
	}
	return out
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
