package policy

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/harness-runtime/harness/action"
)

// Rules written by a deployment (harness.rules): an ordered list, each
// rule naming the actions it applies to, a condition in CEL, an outcome
// and a reason. The "rules" step of the guard evaluates them; see
// RuleSet for what each outcome means.

// Rule is one configured rule.
//
// Its condition is CEL (cel.dev/cel-go), type-checked as a bool, over
// these variables:
//
//	action     string        the action's name
//	input      map           the action's input as sent (after any modifying step)
//	path       string        input.path cleaned ("a/./b" is "a/b"), "" when absent
//	paths      list(string)  path, and for a patch every file its headers
//	                         name, as written and without its first
//	                         component (a/ b/), or at the input's strip level
//	argv       list(string)  workspace_run_shell's command as it is
//	                         tokenized to run; [] for other actions
//	risk       string        read | write | exec | network
//	tenant     string        the action's tenant, "" for none
//	principal  string        who asked ("cli", "mcp", an API key's principal)
//	phase      string        direct | preview | execute
//	session    map           id, task and agent of the action, and whatever
//	                         the deployment's counters add
//
// Helpers beside CEL's own (==, in, &&, startsWith, contains, matches for
// a regular expression, exists and all over lists, has(input.x)):
//
//	glob(path, "**/.env*")              doublestar glob (see below); a list on
//	glob(paths, ["*.pem", "id_rsa*"])   either side means "any of"
//	argv.startsWith(["git", "push"])    the command begins with these words
//
// and the string extensions of cel-go's ext.Strings (lowerAscii, split,
// replace, …). A glob pattern is relative to the workspace root: "**"
// stands for any number of directories, "*" and "?" never cross a "/",
// {a,b} are alternatives; "*.pem" matches "k.pem" but not "d/k.pem".
type Rule struct {
	// ID names the rule in decisions, audit records and messages.
	ID string
	// Actions are the action names the rule applies to; none means every
	// action.
	Actions []string
	// When is the condition (see above); empty means always.
	When string
	// Outcome is Allow, Ask or Deny.
	Outcome Outcome
	// Reason is told to the caller with a deny or an ask.
	Reason string
	// Match and NotMatch are example inputs (an action's input, as the
	// model would send it) that the rule must and must not match; they
	// are checked when the rules are compiled.
	Match, NotMatch []map[string]any
	// Unredacted exempts the observation of an action this rule decides
	// (and lets run: allow, or ask once answered) from the redaction of
	// observations (harness.redact-observations), so that a trusted read
	// of a fixture full of sample keys reaches the model as written.
	// The decision sets Request.Unredacted to the rule's id; a deny rule
	// cannot carry it. The audit log's own sanitizer is not affected.
	Unredacted bool
}

// RulesMode says how several matching rules decide.
type RulesMode string

// Modes of harness.rules-mode.
const (
	// FirstMatch: the first rule, in the file's order, whose actions and
	// condition match decides (the default).
	FirstMatch RulesMode = "first-match"
	// Strictest: every matching rule counts and the strictest outcome
	// wins, deny over ask over allow; among equals the first decides.
	Strictest RulesMode = "strictest"
)

// DefaultRuleCostLimit bounds what evaluating one rule's condition may
// cost, in CEL's cost units (about one per operation, one per ten bytes a
// string function reads): far more than a condition over paths and
// command words needs, far less than a second of work.
const DefaultRuleCostLimit = 100_000

// maxConditionBytes bounds a condition's text.
const maxConditionBytes = 4096

// RulesOptions are how CompileRules checks and evaluates the rules.
type RulesOptions struct {
	// Mode is FirstMatch (the default) or Strictest.
	Mode RulesMode
	// CostLimit bounds each condition's evaluation (default
	// DefaultRuleCostLimit); one that would cost more fails, which denies
	// or asks as its rule would (see RuleSet).
	CostLimit uint64
	// Actions maps the names of the registered actions to their risk
	// class. The examples of a rule that names no actions are tried with
	// each of them; an example's risk is the one of the action it is
	// tried with.
	Actions map[string]string
	// Session, when set, adds entries to the session variable (the
	// session's counters, for example). It is called at most once per
	// decision, and only when a condition reads session.
	Session func(req *Request) map[string]any
}

// RuleProblem is one thing wrong with one rule.
type RuleProblem struct {
	// Index is the rule's position in the list (from 0), ID its id.
	Index int
	ID    string
	// Field is the rule's key the problem is about: "id", "actions",
	// "when", "outcome", "examples.match[0]", "examples.not_match[1]".
	Field string
	Why   string
}

func (p RuleProblem) Error() string {
	id := p.ID
	if id == "" {
		id = "#" + strconv.Itoa(p.Index)
	}
	return "rule " + id + ": " + p.Field + ": " + p.Why
}

// RulesError lists every problem CompileRules found, in the rules' order.
type RulesError struct {
	Problems []RuleProblem
}

func (e *RulesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) in the rules:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.Error())
	}
	return b.String()
}

// RuleSet is a list of rules compiled and checked: every condition
// type-checked as a bool, every literal glob pattern valid, every example
// matching as its author said. It is immutable and safe for concurrent
// use.
//
// What each outcome means:
//   - deny refuses the action with code rule_denied; nothing runs.
//   - ask answers needs_confirmation (code approval_required): a person
//     must approve the action. In the execute phase (a preview's token or
//     an approval being redeemed) an ask is taken as answered and lets the
//     action through, as allow does: the person was asked when the action
//     was previewed.
//   - allow ends the rules' evaluation (first-match) and lets the action go
//     on to the guard's remaining steps. It grants nothing: an action that
//     needs trust still needs it, a disabled action stays disabled. Its
//     only effect is that later rules are not consulted.
//
// A condition that cannot be evaluated for an action (a key its input
// lacks, an index past the end of argv, a comparison of values of
// different types, the cost bound exceeded) fails closed: a deny or ask
// rule applies, with the failure in its reason, and an allow rule does
// not. Guard a condition with has(input.x) or size(argv) > 1 where an
// action may lack what it reads.
//
// Rules see the action as it was sent, path cleaned: they are lexical. A
// symbolic link inside the root is read under its own name, and a command
// reads whatever files its program opens (make and go test run the
// workspace's code), which no rule over argv can see; the sandbox, not
// the rules, is the boundary there.
type RuleSet struct {
	mode  RulesMode
	rules []*compiledRule
	// byAction lists, per action named by some rule, the rules that apply
	// to it in order; every other action gets anyAction.
	byAction  map[string][]*compiledRule
	anyAction []*compiledRule
	session   func(*Request) map[string]any
	globs     map[string]globPattern // the literal patterns, compiled once
	// sizeMask: the list variables (1<<varPaths, 1<<varArgv) some rule
	// with a prefilter reads, which ruleVars.size measures.
	sizeMask uint16
	// prefilters indexes the rules' prefilters; nil when none has one.
	prefilters *ruleIndex
}

type compiledRule struct {
	id      string
	index   int
	outcome Outcome
	reason  string
	// unredacted: the rule exempts what it lets run from redaction.
	unredacted bool
	prg        cel.Program // nil: no condition
	fast       fBool       // the condition in Go, when it has only forms known there
	limit      uint64
	// pre are the prefilter's tests (rules_prefilter.go), used for
	// requests whose size is at most preMax; 0: the rule has none.
	pre    []atom
	preMax int64
}

// rank orders outcomes for Strictest.
func rank(o Outcome) int {
	switch o {
	case Deny:
		return 3
	case Ask:
		return 2
	}
	return 1
}

var ruleID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]{0,63}$`)

// CompileRules checks and compiles rules. Every problem of every rule is
// listed in one *RulesError: a missing or repeated id, an unknown
// outcome, a condition that does not parse, does not type-check as a
// bool or uses a bad glob pattern, and an example the rule does not
// decide as its author said.
func CompileRules(rules []Rule, opts RulesOptions) (*RuleSet, error) {
	if opts.Mode == "" {
		opts.Mode = FirstMatch
	}
	if opts.CostLimit == 0 {
		opts.CostLimit = DefaultRuleCostLimit
	}
	s := &RuleSet{mode: opts.Mode, session: opts.Session, globs: map[string]globPattern{}, byAction: map[string][]*compiledRule{}}
	var problems []RuleProblem
	if opts.Mode != FirstMatch && opts.Mode != Strictest {
		problems = append(problems, RuleProblem{Index: -1, ID: "(all)", Field: "mode", Why: strconv.Quote(string(opts.Mode)) + " is neither first-match nor strictest"})
	}
	env, err := newRuleEnv(s)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	seen := map[string]int{}
	for i, r := range rules {
		add := func(field, why string) {
			problems = append(problems, RuleProblem{Index: i, ID: r.ID, Field: field, Why: why})
		}
		switch first, dup := seen[r.ID]; {
		case r.ID == "":
			add("id", "is required")
		case !ruleID.MatchString(r.ID):
			add("id", strconv.Quote(r.ID)+" must be a short name: letters, digits and . _ : / - (at most 64)")
		case dup:
			add("id", "the same id as rule #"+strconv.Itoa(first))
		default:
			seen[r.ID] = i
		}
		if r.Outcome != Allow && r.Outcome != Ask && r.Outcome != Deny {
			add("outcome", strconv.Quote(string(r.Outcome))+" is not one of: allow ask deny")
		}
		for j, a := range r.Actions {
			if a == "" {
				add("actions["+strconv.Itoa(j)+"]", "a name here cannot be empty")
			}
		}
		if r.Unredacted && r.Outcome == Deny {
			add("redact", "false exempts from redaction what a rule lets run, and a deny rule runs nothing: use allow or ask")
		}
		c := &compiledRule{id: r.ID, index: i, outcome: r.Outcome, reason: r.Reason, unredacted: r.Unredacted, limit: opts.CostLimit}
		if strings.TrimSpace(r.When) != "" {
			prg, fast, checked, whys := env.compile(r.When, opts.CostLimit)
			for _, why := range whys {
				add("when", why)
			}
			c.prg, c.fast = prg, fast
			if fast != nil {
				var lists uint16
				c.pre, c.preMax, lists = prefilterOf(checked, s, opts.CostLimit)
				if c.preMax > 0 {
					s.sizeMask |= lists
				}
			}
		}
		s.rules = append(s.rules, c)
	}
	// The examples of each rule that compiled, even when others did not,
	// so that one pass lists every problem.
	for i, r := range rules {
		if !slices.ContainsFunc(problems, func(p RuleProblem) bool { return p.Index == i }) {
			problems = append(problems, s.checkExamples(s.rules[i], r, opts.Actions)...)
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Index < problems[j].Index })
	if len(problems) > 0 {
		return nil, &RulesError{Problems: problems}
	}
	s.index(rules)
	s.prefilters = buildIndex(s.rules)
	return s, nil
}

// index builds byAction and anyAction.
func (s *RuleSet) index(rules []Rule) {
	named := map[string]bool{}
	for _, r := range rules {
		for _, a := range r.Actions {
			named[a] = true
		}
	}
	for name := range named {
		s.byAction[name] = nil
	}
	for i, r := range rules {
		c := s.rules[i]
		if len(r.Actions) == 0 {
			s.anyAction = append(s.anyAction, c)
			for name := range named {
				s.byAction[name] = append(s.byAction[name], c)
			}
			continue
		}
		for _, a := range slices.Compact(slices.Sorted(slices.Values(r.Actions))) {
			s.byAction[a] = append(s.byAction[a], c)
		}
	}
}

// Len returns the number of rules.
func (s *RuleSet) Len() int { return len(s.rules) }

// Mode returns how the set decides among matching rules.
func (s *RuleSet) Mode() RulesMode { return s.mode }

// StepRules is the name of the rules' step in the guard.
const StepRules = "rules"

// Step returns the guard step that applies the rules. Add it to
// Steps.Validating: it then runs after the input is validated and before
// trust is checked, so a deny or ask holds for auto-approved and trusted
// actions alike.
func (s *RuleSet) Step() Step { return Step{Name: StepRules, Fn: s.Decide} }

// Decide applies the rules to req: the zero Decision when none denies or
// asks, else a deny (code rule_denied) or an ask, naming the rule.
func (s *RuleSet) Decide(_ context.Context, req *Request) Decision {
	list, ok := s.byAction[req.Action.Name]
	if !ok {
		list = s.anyAction
	}
	if len(list) == 0 {
		return Decision{}
	}
	vars := ruleVars{req: req, set: s}
	vars.fast.v = &vars
	// The rules a prefilter does not pass over (rules_prefilter.go), a
	// bit each, from the index; or, for a few rules or a request too
	// large for the index, each rule's own prefilter tried as it comes.
	var buf [4]uint64
	var bits []uint64
	if x := s.prefilters; x != nil && len(list) >= minIndexed && vars.size(s.sizeMask) <= x.maxSize {
		if bits = buf[:]; len(s.rules) > 64*len(buf) {
			bits = make([]uint64, (len(s.rules)+63)/64)
		}
		x.candidates(&vars, bits)
	}
	var best *compiledRule
	var bestErr error
	for _, r := range list {
		if bits != nil && bits[r.index/64]&(1<<(r.index%64)) == 0 || bits == nil && !r.admits(&vars) {
			continue // its condition is false: no need to run it
		}
		var matched bool
		var err error
		if r.fast != nil {
			// eval's common case, inline: a few hundred rules are
			// decided in microseconds.
			vars.fast.cost, vars.fast.limit = 0, r.limit
			if matched, err = r.fast(&vars.fast); err != nil {
				matched = r.outcome != Allow
			}
		} else {
			matched, err = r.eval(&vars)
		}
		if !matched {
			continue
		}
		outcome := r.outcome
		if outcome == Ask && req.Phase == PhaseExecute {
			outcome = Allow // answered when it was previewed or approved
		}
		if s.mode == FirstMatch {
			return r.decide(req, outcome, err)
		}
		if best == nil || rank(outcome) > rank(effective(best.outcome, req.Phase)) {
			best, bestErr = r, err
			if outcome == Deny {
				break // nothing is stricter
			}
		}
	}
	if best == nil {
		return Decision{}
	}
	return best.decide(req, effective(best.outcome, req.Phase), bestErr)
}

// decide is the decision of r, the rule that decides req; it marks req
// unredacted when r exempts what it lets run.
func (r *compiledRule) decide(req *Request, outcome Outcome, err error) Decision {
	if r.unredacted && err == nil {
		req.Unredacted = r.id
	}
	return r.decision(outcome, err)
}

func effective(o Outcome, p Phase) Outcome {
	if o == Ask && p == PhaseExecute {
		return Allow
	}
	return o
}

// eval reports whether the rule applies to the request. A condition that
// fails applies when the rule denies or asks (err says why), never when
// it allows.
func (r *compiledRule) eval(v *ruleVars) (bool, error) {
	if r.prg == nil {
		return true, nil
	}
	var err error
	if r.fast != nil {
		x := &v.fast
		x.v, x.cost, x.limit = v, 0, r.limit
		var b bool
		if b, err = r.fast(x); err == nil {
			return b, nil
		}
	} else {
		var out ref.Val
		if out, _, err = r.prg.Eval(v); err == nil {
			if b, ok := out.(types.Bool); ok {
				return bool(b), nil
			}
			err = errors.New("the condition gave " + out.Type().TypeName() + ", not a bool")
		}
	}
	if r.outcome == Allow {
		return false, err
	}
	return true, err
}

func (r *compiledRule) decision(outcome Outcome, err error) Decision {
	if outcome == Allow {
		return Decision{}
	}
	msg := r.reason
	if msg == "" {
		msg = "the action matches rule " + r.id
	}
	msg = "rule " + r.id + ": " + msg
	if err != nil {
		msg += " (its condition could not be evaluated for this action, which counts as a match: " + conditionError(err) + ")"
	}
	var d Decision
	if outcome == Ask {
		d = AskWith(msg)
	} else {
		d = DenyWith(action.CodeRuleDenied, msg)
	}
	d.Rule = r.id
	return d
}

// conditionError words an evaluation error for people.
func conditionError(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "cost limit exceeded") {
		return "it exceeded its cost bound"
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// checkExamples evaluates a rule's examples: each match example must make
// the rule apply for at least one action it applies to, each not_match
// example for none. A condition that fails counts as it would at run
// time.
func (s *RuleSet) checkExamples(c *compiledRule, r Rule, actions map[string]string) []RuleProblem {
	candidates := r.Actions
	if len(candidates) == 0 {
		for name := range actions {
			candidates = append(candidates, name)
		}
		sort.Strings(candidates)
	}
	if len(candidates) == 0 {
		candidates = []string{""}
	}
	var problems []RuleProblem
	try := func(field string, input map[string]any, want bool) {
		var hit, miss []string
		for _, name := range candidates {
			req := &Request{Action: action.Action{Name: name, Input: input}, Phase: PhaseDirect}
			v := ruleVars{req: req, set: s, risk: actions[name], riskSet: true}
			m, err := c.eval(&v)
			label := name
			if err != nil {
				label += " (the condition failed: " + conditionError(err) + ")"
			}
			if m {
				hit = append(hit, label)
			} else {
				miss = append(miss, label)
			}
		}
		var why string
		switch {
		case want && len(hit) == 0:
			why = fmt.Sprintf("%s is an example the rule must match, but it does not", exampleText(input))
			if len(miss) == 1 && strings.Contains(miss[0], "(") {
				why += " (as " + miss[0] + ")"
			}
		case !want && len(hit) > 0:
			why = fmt.Sprintf("%s is an example the rule must not match, but it does (as %s)", exampleText(input), strings.Join(hit[:min(len(hit), 3)], ", "))
		default:
			return
		}
		problems = append(problems, RuleProblem{Index: c.index, ID: c.id, Field: field, Why: why})
	}
	for i, in := range r.Match {
		try("examples.match["+strconv.Itoa(i)+"]", in, true)
	}
	for i, in := range r.NotMatch {
		try("examples.not_match["+strconv.Itoa(i)+"]", in, false)
	}
	return problems
}

// exampleText shows an example input compactly: {path: .env}.
func exampleText(in map[string]any) string {
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %v", k, in[k])
	}
	b.WriteByte('}')
	s := b.String()
	if len(s) > 120 {
		s = s[:120] + "…}"
	}
	return s
}
