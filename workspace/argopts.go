package workspace

import (
	"slices"
	"strings"
)

// optKind says what an allowed option takes and how its value is checked.
type optKind int

const (
	// optRead: a value naming a file or directory the program reads; it
	// must stay inside the root (checkWordPaths). Also the default for
	// positional words.
	optRead optKind = iota
	// optBool: no value. Go's bool flags may still be spelled -name=false.
	optBool
	// optValue: a value that is data (a number, a pattern, a name), checked
	// by values or check when set, and as a possible path like any word.
	optValue
	// optOptional: getopt only, a value only when attached (-j4, --jobs=4);
	// with numericNext a following number is taken too, as make does.
	optOptional
	// optCode: a file or directory the program reads as code or
	// configuration: inside the root and not beneath .git/ or .harness/.
	optCode
	// optWrite: a file or directory the program writes: every component
	// checked (checkTarget).
	optWrite
	// optRefused: a known option that is refused; why says what it does.
	optRefused
	// optRest: everything after it goes to another program (go test
	// -args): every later word is checked as a possible write target.
	optRest
)

// optSpec is one allowed (or known and refused) option.
type optSpec struct {
	kind optKind
	// values, when non-nil, are the only values allowed.
	values []string
	// check, when set, checks the value further. word is the argument that
	// holds the value (the option itself when attached), for the payload.
	check func(c argChecker, word, val string) error
	// numericNext: an optOptional option takes the next word when it is a
	// number (make's -j 4 and -l 2.5).
	numericNext bool
	why         string
}

func refused(why string) optSpec { return optSpec{kind: optRefused, why: why} }

// seenOpt is an option an allowlist rule accepted, with its value, for the
// rule's after check.
type seenOpt struct {
	name, word, val string
}

// checkAllowed checks args against an allowlist rule: every option must be
// listed in rule.opts or rule.short, and its value passes the check of its
// kind. Every word, option or not, is also checked as a possible path
// (checkWordPaths), as in denylist rules.
func (c argChecker) checkAllowed(rule *argRule, args []string) error {
	var seen []seenOpt
	afterDashDash, rest := false, false
	for i := 0; i < len(args); i++ {
		word := args[i]
		switch {
		case rest:
			if err := c.checkWordPaths(word, word, true); err != nil {
				return err
			}
			continue
		case afterDashDash || !looksLikeOption(word):
			if err := c.checkPositional(rule, word); err != nil {
				return err
			}
			// This rule knows every value its options take, so this "--"
			// ends the options.
			if err := c.checkOptionLikePaths(word); err != nil {
				return err
			}
			continue
		case word == "--" && rule.style == styleGetopt:
			// Go's flag terminator is not honoured: go test hands what
			// follows it to the test binary, so options are still checked.
			afterDashDash = true
			continue
		}
		var (
			name, val, valWord string
			spec               optSpec
			hasVal             bool
			err                error
		)
		if rule.style == styleGoFlag || strings.HasPrefix(word, "--") {
			body := strings.TrimPrefix(word, "-")
			if rule.style == styleGetopt || strings.HasPrefix(body, "-") {
				body = body[1:]
			}
			name, val, hasVal = strings.Cut(body, "=")
			valWord = word
			if name, spec, err = c.lookupLong(rule, word, name); err != nil {
				return err
			}
			if spec.kind == optRest {
				rest = true
				continue
			}
			if !hasVal && spec.kind != optBool && spec.kind != optOptional && i+1 < len(args) {
				i++
				val, valWord, hasVal = args[i], args[i], true
			}
			if !hasVal && spec.numericNext && i+1 < len(args) && isNumber(args[i+1]) {
				i++
				val, valWord, hasVal = args[i], args[i], true
			}
		} else {
			if err := c.checkShortGroupPaths(word, false); err != nil {
				return err
			}
			for j := 1; j < len(word); j++ {
				letter := word[j]
				s, ok := rule.short[letter]
				switch {
				case !ok:
					return refuseWord(word, "%s: option -%c (in %q) is not one of the options allowed for %s", c.cmd, letter, word, c.cmd)
				case s.kind == optRefused:
					return refuseWord(word, "%s: option -%c (in %q) is not allowed: %s", c.cmd, letter, word, s.why)
				case s.kind == optBool:
					continue
				}
				name, spec = "-"+string(letter), s
				switch {
				case j+1 < len(word):
					val, valWord, hasVal = word[j+1:], word, true
				case s.kind != optOptional && i+1 < len(args):
					i++
					val, valWord, hasVal = args[i], args[i], true
				case s.numericNext && i+1 < len(args) && isNumber(args[i+1]):
					i++
					val, valWord, hasVal = args[i], args[i], true
				}
				break
			}
			if name == "" { // a group of flags only
				continue
			}
		}
		if hasVal {
			// A value taken from the next word is what this rule says it
			// is (make -f -0/ reads the makefile "-0/").
			if valWord != word && rule.style == styleGetopt {
				if err := c.checkOptionLikePaths(valWord); err != nil {
					return err
				}
			}
			if err := c.checkOptValue(name, spec, valWord, val); err != nil {
				return err
			}
			seen = append(seen, seenOpt{name: name, word: valWord, val: val})
		}
		if err := c.checkWordPaths(word, word, false); err != nil {
			return err
		}
	}
	if rule.after != nil {
		return rule.after(c, seen)
	}
	return nil
}

// checkOptionLikePaths checks a word a getopt allowlist rule reads as a
// positional (after "--") or as the value of the option before it: when
// it looks like an option group, its suffixes are checked as paths too,
// as every other word's possible readings are.
func (c argChecker) checkOptionLikePaths(word string) error {
	if !looksLikeOption(word) {
		return nil
	}
	return c.checkShortGroupPaths(word, false)
}

// lookupLong finds the spec of a long option. Go flags must be spelled
// exactly; getopt long options may be abbreviated to a prefix that is
// unique among every option the table knows, allowed or refused (getopt
// itself refuses an ambiguous prefix).
func (c argChecker) lookupLong(rule *argRule, word, name string) (string, optSpec, error) {
	spec, ok := rule.opts[name]
	if !ok && rule.style == styleGetopt && name != "" {
		var match string
		for long := range rule.opts {
			if strings.HasPrefix(long, name) {
				if match != "" {
					return "", optSpec{}, refuseWord(word, "%s: option %q is ambiguous (--%s, --%s…)", c.cmd, word, match, long)
				}
				match = long
			}
		}
		spec, ok = rule.opts[match]
		name = match
	}
	switch {
	case !ok:
		return "", optSpec{}, refuseWord(word, "%s: option %q is not one of the options allowed for %s", c.cmd, word, c.cmd)
	case spec.kind == optRefused:
		return "", optSpec{}, refuseWord(word, "%s: option %q is not allowed: %s", c.cmd, word, spec.why)
	}
	return name, spec, nil
}

// checkOptValue checks the value of an allowed option by its kind.
func (c argChecker) checkOptValue(name string, spec optSpec, word, val string) error {
	if spec.values != nil && !slices.Contains(spec.values, val) {
		return refuseWord(word, "%s: %q is not an allowed value of %s (allowed: %s)", c.cmd, word, name, strings.Join(spec.values, ", "))
	}
	if spec.check != nil {
		if err := spec.check(c, word, val); err != nil {
			return err
		}
	}
	switch spec.kind {
	case optWrite, optCode:
		kind := targetCode
		if spec.kind == optWrite {
			kind = targetWrite
		}
		if val == "" {
			return nil
		}
		if err := c.checkTarget(word, val, kind); err != nil {
			return err
		}
	}
	return c.checkWordPaths(word, val, spec.kind == optWrite)
}

// checkPositional checks a word that is not an option in an allowlist
// rule: a NAME=value assignment when the rule has assign, else by the
// rule's positional kind.
func (c argChecker) checkPositional(rule *argRule, word string) error {
	if rule.assign != nil && strings.Contains(word, "=") {
		return rule.assign(c, word)
	}
	switch rule.positional {
	case optWrite:
		if err := c.checkTarget(word, word, targetWrite); err != nil {
			return err
		}
	case optCode:
		if err := c.checkTarget(word, word, targetCode); err != nil {
			return err
		}
	}
	return c.checkWordPaths(word, word, rule.positional == optWrite)
}

// isNumber reports whether s is a non-negative decimal number (make's -j 4,
// -l 2.5).
func isNumber(s string) bool {
	if s == "" || strings.Count(s, ".") > 1 || s == "." {
		return false
	}
	return strings.Trim(s, "0123456789.") == ""
}
