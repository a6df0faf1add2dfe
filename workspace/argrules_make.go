package workspace

import (
	"slices"
	"strings"
)

// GNU make's allowlist (make 4.3 and 4.4: every long option it knows is
// listed, allowed or refused, so that abbreviations resolve as make
// resolves them). Targets are write targets: a target names the file its
// rule makes.
var (
	makeBool     = optSpec{kind: optBool}
	makeCode     = optSpec{kind: optCode}
	makeRead     = optSpec{kind: optRead}
	makeJobs     = optSpec{kind: optOptional, numericNext: true}
	makeOptional = optSpec{kind: optOptional}
	makeDir      = refused("it changes the directory make runs in")
	makeEval     = refused("it evaluates its value as a makefile statement, which can run any command")
	makeTouch    = refused("it touches targets (writes files) instead of running recipes")
	makeInternal = refused("it is for make's own use between a make and its sub-makes")
)

var makeLong = map[string]optSpec{
	"always-make": makeBool, "debug": makeOptional, "environment-overrides": makeBool,
	"file": makeCode, "makefile": makeCode, "help": makeBool, "ignore-errors": makeBool,
	"include-dir": makeCode, "jobs": makeJobs, "keep-going": makeBool,
	"load-average": makeJobs, "max-load": makeJobs, "check-symlink-times": makeBool,
	"just-print": makeBool, "dry-run": makeBool, "recon": makeBool,
	"old-file": makeRead, "assume-old": makeRead, "output-sync": makeOptional,
	"print-data-base": makeBool, "question": makeBool, "no-builtin-rules": makeBool,
	"no-builtin-variables": makeBool, "shuffle": makeOptional, "silent": makeBool,
	"quiet": makeBool, "no-silent": makeBool, "no-keep-going": makeBool, "stop": makeBool,
	"trace": makeBool, "version": makeBool, "print-directory": makeBool,
	"no-print-directory": makeBool, "what-if": makeRead, "new-file": makeRead,
	"assume-new": makeRead, "warn-undefined-variables": makeBool,

	"directory": makeDir, "eval": makeEval, "touch": makeTouch,
	"jobserver-auth": makeInternal, "jobserver-fds": makeInternal,
	"jobserver-style": makeInternal, "sync-mutex": makeInternal, "temp-stdin": makeInternal,
}

var makeShort = map[byte]optSpec{
	'b': makeBool, 'm': makeBool, 'B': makeBool, 'd': makeBool, 'e': makeBool,
	'f': makeCode, 'h': makeBool, 'i': makeBool, 'I': makeCode, 'j': makeJobs,
	'k': makeBool, 'l': makeJobs, 'L': makeBool, 'n': makeBool, 'o': makeRead,
	'O': makeOptional, 'p': makeBool, 'q': makeBool, 'r': makeBool, 'R': makeBool,
	's': makeBool, 'S': makeBool, 'v': makeBool, 'w': makeBool, 'W': makeRead,
	'C': makeDir, 'E': makeEval, 't': makeTouch,
}

var makeRule = &argRule{
	style: styleGetopt, opts: makeLong, short: makeShort,
	positional: optWrite, assign: makeAssign,
}

// makeVars are the variables make may be given on its command line: names
// that Makefile conventions use for verbosity and test selection and that
// no program is known to read from its environment. Any other is refused,
// because a command-line variable both overrides the Makefile's and is
// exported to every recipe: SHELL, MAKEFLAGS or CC change what runs, and
// GOFLAGS=-toolexec=…, LD_PRELOAD=… or GIT_EXTERNAL_DIFF=… reach the
// programs the recipes start.
var makeVars = []string{"V", "VERBOSE", "Q", "RUN", "TEST", "TESTS", "PKG", "PKGS", "COUNT", "TAGS"}

// makeAssign checks a NAME=value word: an allowed name, an assignment
// operator that does not run the value as a shell command (!=), and a
// value of plain characters that no recipe can take for an option or for
// more than one word.
func makeAssign(c argChecker, word string) error {
	i := strings.IndexByte(word, '=')
	lhs, value := word[:i], word[i+1:]
	if strings.HasSuffix(lhs, "!") {
		return refuseWord(word, "%s: %q is a != assignment, which runs its value as a shell command", c.cmd, word)
	}
	name := strings.TrimRight(lhs, ":+?")
	if !slices.Contains(makeVars, name) {
		return refuseWord(word, "%s: %q sets %s on the command line, which is not allowed; only %s may be set (a command-line variable reaches every recipe's environment)",
			c.cmd, word, name, strings.Join(makeVars, ", "))
	}
	if strings.HasPrefix(value, "-") {
		return refuseWord(word, "%s: %q gives %s a value starting with '-', which a recipe would pass on as an option", c.cmd, word, name)
	}
	for _, r := range value {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.,/:+@%^=*?[]-", r)) {
			return refuseWord(word, "%s: %q gives %s the character %q; values are limited to letters, digits and _.,/:+@%%^=*?[]-", c.cmd, word, name, r)
		}
	}
	return c.checkWordPaths(word, value, false)
}
