package policy

import (
	"slices"
	"strings"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// A decision over a few hundred rules mostly finds that none applies,
// and finds it one rule after the other. Each rule whose condition runs
// in Go (rules_fast.go) therefore also gets, at compile time, a
// prefilter: a few cheap tests of the action's strings (an equality, a
// prefix, a glob's literal first directory or last segment), one of which
// holds whenever the condition is true or fails. When none holds, the
// condition is false, without an error, and the rule is passed over
// without running it: the result is the one the condition would give.
//
// The tests are taken where that is sure:
//
//	a && b        the tests of a or of b (either must hold)
//	a || b        those of a and of b together
//	v == "s"      v equals s (v one of the string variables)
//	v in ["s"…]   v equals one of them
//	"s" in l      an element of l (paths or argv) equals s
//	v.startsWith("s"), endsWith, contains: the same on v
//	l.startsWith(["s", …])  l's first element is s
//	glob(v, p)    per alternative of each pattern: the name is the
//	              pattern (no wildcard), or its first directory and last
//	              segment are those the pattern requires
//
// and nowhere else: a negation, an index (which may fail), a comparison
// of sizes or anything of the input keeps the rule evaluated.
//
// Passing a rule over also must not hide a condition that would exceed
// its cost bound (which fails, and so applies a deny or ask rule). The
// cost of a condition in Go is at most 2+L per node, plus L times the
// patterns' length over 64 per glob, where L bounds every length the
// condition reads; a rule is passed over only when the action's strings
// are short enough that this stays within the bound.

// ruleVar names a variable a prefilter tests.
type ruleVar uint8

const (
	varAction ruleVar = iota
	varPath
	varRisk
	varTenant
	varPrincipal
	varPhase
	varPaths // lists from here on
	varArgv
)

var ruleVarOf = map[string]ruleVar{
	"action": varAction, "path": varPath, "risk": varRisk, "tenant": varTenant,
	"principal": varPrincipal, "phase": varPhase, "paths": varPaths, "argv": varArgv,
}

type atomOp uint8

const (
	atomEq       atomOp = iota // the string is lit
	atomPrefix                 // it begins with lit
	atomSuffix                 // it ends with lit
	atomContains               // it contains lit
	atomFirst                  // the list's first element is lit
	atomGlob                   // a glob alternative's literal parts (dir, last)
)

// atom is one test of a prefilter. On a list variable, other than with
// atomFirst, it holds when it holds for an element.
type atom struct {
	op  atomOp
	v   ruleVar
	lit string
	// atomGlob: the name is not empty, its first segment is dir unless
	// dir is "", and its last segment matches last unless last is segAny.
	dir  string
	last segment
}

// maxAtoms bounds a prefilter's tests: past it, the rule is evaluated.
const maxAtoms = 16

func (a *atom) holds(v *ruleVars) bool {
	switch a.v {
	case varPath:
		if a.op == atomGlob {
			return a.glob(v.getPath(), v.getPathBase())
		}
		return a.test(v.getPath())
	case varPaths, varArgv:
		l := v.getArgv
		if a.v == varPaths {
			l = v.getPaths
		}
		list := l()
		if a.op == atomFirst {
			return len(list) > 0 && list[0] == a.lit
		}
		for _, s := range list {
			if a.test(s) {
				return true
			}
		}
		return false
	}
	return a.test(v.str(a.v))
}

func (a *atom) test(s string) bool {
	switch a.op {
	case atomEq:
		return s == a.lit
	case atomPrefix:
		return strings.HasPrefix(s, a.lit)
	case atomSuffix:
		return strings.HasSuffix(s, a.lit)
	case atomContains:
		return strings.Contains(s, a.lit)
	case atomGlob:
		return a.glob(s, baseName(s))
	}
	return true // not reached: atomFirst is a list's
}

func (a *atom) glob(name, base string) bool {
	return name != "" && (a.dir == "" || hasDirPrefix(name, a.dir)) && (a.last.kind == segAny || a.last.matches(base))
}

// str is a string variable's value, as the condition reads it.
func (v *ruleVars) str(x ruleVar) string {
	switch x {
	case varAction:
		return v.req.Action.Name
	case varPath:
		return v.getPath()
	case varRisk:
		return v.getRisk()
	case varTenant:
		return v.req.Action.Tenant
	case varPrincipal:
		return v.req.Principal
	case varPhase:
		return v.getPhase()
	}
	return ""
}

// size bounds every length a condition may read of the request: a
// string's length plus one, a list's elements' lengths plus one each
// (so its count too). Lists are measured only when some prefilter's rule
// reads them (mask), so that deciding does not tokenize a command or
// parse a patch that no rule needs.
func (v *ruleVars) size(mask uint16) int64 {
	if v.done&hasSize != 0 {
		return v.sizeV
	}
	var n int
	for x := varAction; x < varPaths; x++ {
		n = max(n, len(v.str(x))+1)
	}
	for _, x := range []ruleVar{varPaths, varArgv} {
		if mask&(1<<x) == 0 {
			continue
		}
		list := v.getArgv
		if x == varPaths {
			list = v.getPaths
		}
		var sum int
		for _, s := range list() {
			sum += len(s) + 1
		}
		n = max(n, sum)
	}
	v.sizeV, v.done = int64(n), v.done|hasSize
	return v.sizeV
}

// admits reports whether r must be evaluated for the request: it has no
// prefilter (preMax 0: every request's size is at least 1), the request
// is too large for passing it over to be sure to stay within the cost
// bound, or one of its tests holds.
func (r *compiledRule) admits(v *ruleVars) bool {
	if r.preMax == 0 || v.size(v.set.sizeMask) > r.preMax {
		return true
	}
	for i := range r.pre {
		if r.pre[i].holds(v) {
			return true
		}
	}
	return false
}

// prefilterOf derives the prefilter of a condition compiled to Go, and
// the largest request size (ruleVars.size) for which it may pass the rule
// over given the cost limit; 0 when it may never. mask gets the list
// variables the condition reads.
func prefilterOf(a *ast.AST, set *RuleSet, limit uint64) (atoms []atom, maxSize int64, mask uint16) {
	e := a.Expr()
	// The cost bound's terms: nodes, the glob patterns' lengths, and the
	// largest length a literal gives.
	var nodes, pl, lit uint64
	literalPatterns := true
	ast.PreOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		nodes++
		switch x.Kind() {
		case ast.IdentKind:
			if v, ok := ruleVarOf[x.AsIdent()]; ok && v >= varPaths {
				mask |= 1 << v
			}
		case ast.LiteralKind:
			if s, ok := x.AsLiteral().(types.String); ok {
				lit = max(lit, uint64(len(s))+1)
			}
		case ast.ListKind:
			var sum uint64
			for _, el := range x.AsList().Elements() {
				sum++
				if s, ok := stringLit(el); ok {
					sum += uint64(len(s))
				}
			}
			lit = max(lit, sum)
		case ast.CallKind:
			if c := x.AsCall(); c.FunctionName() == "glob" && len(c.Args()) == 2 {
				d := deriver{set: set}
				pats := d.patterns(c.Args()[1])
				literalPatterns = literalPatterns && pats != nil
				pl += patternsLen(pats)
			}
		}
	}))
	d := deriver{set: set}
	atoms, ok := d.need(e)
	if !ok || !literalPatterns || 2*nodes >= limit {
		return nil, 0, mask
	}
	maxSize = int64(min((limit-2*nodes)*64/(64*nodes+pl), 1<<40))
	if lit > uint64(maxSize) {
		return nil, 0, mask
	}
	return atoms, maxSize, mask
}

type deriver struct{ set *RuleSet }

// need returns tests one of which holds whenever e is true or fails to
// evaluate (none: e is never true and never fails), or ok false when it
// knows none (e may hold whatever the action).
func (d *deriver) need(e ast.Expr) (atoms []atom, ok bool) {
	switch e.Kind() {
	case ast.LiteralKind:
		if b, isBool := e.AsLiteral().(types.Bool); isBool && !bool(b) {
			return []atom{}, true
		}
		return nil, false
	case ast.CallKind:
	default:
		return nil, false
	}
	call := e.AsCall()
	args := call.Args()
	fn := call.FunctionName()
	if call.IsMemberFunction() {
		return d.member(fn, call.Target(), args)
	}
	switch {
	case fn == operators.LogicalAnd && len(args) == 2:
		// a && b is true only when both are, and fails only when one
		// fails and the other is not false: either's tests hold.
		l, lok := d.need(args[0])
		r, rok := d.need(args[1])
		switch {
		case lok && rok:
			if weight(r) < weight(l) {
				return r, true
			}
			return l, true
		case lok:
			return l, true
		case rok:
			return r, true
		}
	case fn == operators.LogicalOr && len(args) == 2:
		l, lok := d.need(args[0])
		r, rok := d.need(args[1])
		if lok && rok && len(l)+len(r) <= maxAtoms {
			return append(append([]atom{}, l...), r...), true
		}
	case fn == operators.Equals && len(args) == 2:
		v, vok := stringVar(args[0])
		s, sok := stringLit(args[1])
		if !vok || !sok {
			v, vok = stringVar(args[1])
			s, sok = stringLit(args[0])
		}
		if vok && sok {
			return []atom{{op: atomEq, v: v, lit: s}}, true
		}
	case fn == operators.In && len(args) == 2:
		if v, ok := stringVar(args[0]); ok {
			list, ok := stringLits(args[1])
			if !ok || len(list) > maxAtoms {
				return nil, false
			}
			atoms := []atom{}
			for _, s := range list {
				atoms = append(atoms, atom{op: atomEq, v: v, lit: s})
			}
			return atoms, true
		}
		s, sok := stringLit(args[0])
		l, lok := listVar(args[1])
		if sok && lok {
			return []atom{{op: atomEq, v: l, lit: s}}, true
		}
	case fn == "glob" && len(args) == 2:
		return d.glob(args[0], args[1])
	}
	return nil, false
}

func (d *deriver) member(fn string, target ast.Expr, args []ast.Expr) ([]atom, bool) {
	if len(args) != 1 {
		return nil, false
	}
	if l, ok := listVar(target); ok && fn == "startsWith" {
		prefix, ok := stringLits(args[0])
		if !ok || len(prefix) == 0 {
			return nil, false // [] begins every list
		}
		return []atom{{op: atomFirst, v: l, lit: prefix[0]}}, true
	}
	v, vok := stringVar(target)
	s, sok := stringLit(args[0])
	if !vok || !sok {
		return nil, false
	}
	op := map[string]atomOp{"startsWith": atomPrefix, "endsWith": atomSuffix, "contains": atomContains}
	if o, ok := op[fn]; ok {
		return []atom{{op: o, v: v, lit: s}}, true
	}
	return nil, false
}

// glob's tests are one per brace-free alternative of each pattern.
func (d *deriver) glob(ne, pe ast.Expr) ([]atom, bool) {
	if ne.Kind() != ast.IdentKind {
		return nil, false
	}
	v, ok := ruleVarOf[ne.AsIdent()]
	pats := d.patterns(pe)
	if !ok || pats == nil {
		return nil, false
	}
	atoms := []atom{}
	for _, p := range pats {
		for _, alt := range p.g.alts {
			a, ok := globAtom(v, alt)
			if !ok || len(atoms) == maxAtoms {
				return nil, false
			}
			atoms = append(atoms, a)
		}
	}
	return atoms, true
}

// globAtom is the test of one alternative: the name itself when the
// pattern has no wildcard; else the literal first directory and the last
// segment's literal, prefix or suffix, which matchBase tries first too.
func globAtom(v ruleVar, alt []segment) (atom, bool) {
	literal := true
	for i := range alt {
		literal = literal && alt[i].kind == segLiteral
	}
	if literal {
		texts := make([]string, len(alt))
		for i := range alt {
			texts[i] = alt[i].text
		}
		return atom{op: atomEq, v: v, lit: strings.Join(texts, "/")}, true
	}
	a := atom{op: atomGlob, v: v, last: segment{kind: segAny}}
	if len(alt) > 1 && alt[0].kind == segLiteral {
		a.dir = alt[0].text
	}
	switch last := alt[len(alt)-1]; last.kind {
	case segLiteral, segPrefix, segSuffix:
		a.last = last
	}
	return a, a.dir != "" || a.last.kind != segAny
}

// patterns are a glob call's literal patterns, compiled at start; nil
// when any is not a literal.
func (d *deriver) patterns(pe ast.Expr) []globEntry {
	c := fastCompiler{set: d.set}
	return c.patterns(pe)
}

// weight ranks tests by how often they may hold: fewer and narrower is
// better.
func weight(atoms []atom) int {
	w := 0
	for _, a := range atoms {
		switch {
		case a.op == atomEq || a.op == atomFirst:
			w += 1
		case a.op == atomGlob && a.dir != "" && a.last.kind != segAny:
			w += 1
		case a.op == atomContains:
			w += 4
		default:
			w += 3
		}
	}
	return w
}

func stringVar(e ast.Expr) (ruleVar, bool) {
	if e.Kind() != ast.IdentKind {
		return 0, false
	}
	v, ok := ruleVarOf[e.AsIdent()]
	return v, ok && v < varPaths
}

func listVar(e ast.Expr) (ruleVar, bool) {
	if e.Kind() != ast.IdentKind {
		return 0, false
	}
	v, ok := ruleVarOf[e.AsIdent()]
	return v, ok && v >= varPaths
}

func stringLit(e ast.Expr) (string, bool) {
	if e.Kind() != ast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}

// stringLits is a literal list's strings.
func stringLits(e ast.Expr) ([]string, bool) {
	if e.Kind() != ast.ListKind || len(e.AsList().OptionalIndices()) > 0 {
		return nil, false
	}
	var out []string
	for _, el := range e.AsList().Elements() {
		s, ok := stringLit(el)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// The prefilters' tests are also indexed, so that a decision does not
// visit each rule to try them: an equality is looked up by the value the
// request has, a prefix or suffix by the request's prefixes or suffixes
// of each length some test has, a glob's first directory or last segment
// by the request's. Whatever the index finds is a superset of the rules
// one of whose tests holds; tests it cannot look up (contains) are tried
// one by one.

// minIndexed is how many rules an action must have for a decision to
// consult the index, which looks at every rule's tests, rather than try
// the tests of the action's rules in turn.
const minIndexed = 16

// keyKind is what of a variable's value an indexed test compares.
type keyKind uint8

const (
	keyEq         keyKind = iota // the value (each element of a list)
	keyFirst                     // a list's first element
	keyDir                       // the value's first segment
	keyBase                      // its last segment
	keyPrefix                    // its prefixes
	keySuffix                    // its suffixes
	keyBasePrefix                // its last segment's prefixes
	keyBaseSuffix                // its last segment's suffixes
	keyKinds
)

const varCount = int(varArgv) + 1

// slotIndex is the tests of one key kind on one variable: the rules
// (their indexes) by the literal, and for prefixes and suffixes the
// literals' lengths.
type slotIndex struct {
	rules map[string][]int
	lens  []int
}

// ruleIndex indexes the prefilters of a RuleSet.
type ruleIndex struct {
	slots  [int(keyKinds) * varCount]*slotIndex
	always []uint64 // the rules without a prefilter: a bit each
	scan   []scanRule
	// maxSize is the least preMax of the indexed rules: a larger request
	// is decided without the index.
	maxSize int64
}

type scanRule struct {
	index int
	atoms []atom
}

// key is where a test is indexed; ok false for one tried one by one.
func (a *atom) key() (k keyKind, lit string, ok bool) {
	switch a.op {
	case atomEq:
		return keyEq, a.lit, true
	case atomFirst:
		return keyFirst, a.lit, true
	case atomPrefix:
		return keyPrefix, a.lit, true
	case atomSuffix:
		return keySuffix, a.lit, true
	case atomGlob:
		if a.dir != "" {
			return keyDir, a.dir, true
		}
		switch a.last.kind {
		case segLiteral:
			return keyBase, a.last.text, true
		case segPrefix:
			return keyBasePrefix, a.last.lit, true
		case segSuffix:
			return keyBaseSuffix, a.last.lit, true
		}
	}
	return 0, "", false
}

// buildIndex indexes the rules' prefilters; nil when no rule has one.
func buildIndex(rules []*compiledRule) *ruleIndex {
	x := &ruleIndex{always: make([]uint64, (len(rules)+63)/64), maxSize: 1 << 62}
	indexed := false
	for _, r := range rules {
		if r.preMax == 0 {
			x.always[r.index/64] |= 1 << (r.index % 64)
			continue
		}
		indexed = true
		x.maxSize = min(x.maxSize, r.preMax)
		var scan []atom
		for _, a := range r.pre {
			k, lit, ok := a.key()
			if !ok {
				scan = append(scan, a)
				continue
			}
			slot := &x.slots[int(k)*varCount+int(a.v)]
			if *slot == nil {
				*slot = &slotIndex{rules: map[string][]int{}}
			}
			s := *slot
			if l := s.rules[lit]; len(l) == 0 || l[len(l)-1] != r.index {
				s.rules[lit] = append(l, r.index)
			}
			if (k == keyPrefix || k == keySuffix || k == keyBasePrefix || k == keyBaseSuffix) && !slices.Contains(s.lens, len(lit)) {
				s.lens = append(s.lens, len(lit))
				slices.Sort(s.lens)
			}
		}
		if len(scan) > 0 {
			x.scan = append(x.scan, scanRule{index: r.index, atoms: scan})
		}
	}
	if !indexed {
		return nil
	}
	return x
}

// candidates sets in bits (a bit per rule, zero on entry) the rules that
// must be evaluated for the request.
func (x *ruleIndex) candidates(v *ruleVars, bits []uint64) {
	copy(bits, x.always)
	mark := func(rules []int) {
		for _, i := range rules {
			bits[i/64] |= 1 << (i % 64)
		}
	}
	for i, s := range x.slots {
		if s == nil {
			continue
		}
		k, vr := keyKind(i/varCount), ruleVar(i%varCount)
		if vr < varPaths {
			s.lookUp(k, v.str(vr), mark)
			continue
		}
		list := v.getArgv
		if vr == varPaths {
			list = v.getPaths
		}
		l := list()
		if k == keyFirst {
			if len(l) > 0 {
				mark(s.rules[l[0]])
			}
			continue
		}
		for _, e := range l {
			s.lookUp(k, e, mark)
		}
	}
	for _, sr := range x.scan {
		if bits[sr.index/64]&(1<<(sr.index%64)) != 0 {
			continue
		}
		for i := range sr.atoms {
			if sr.atoms[i].holds(v) {
				bits[sr.index/64] |= 1 << (sr.index % 64)
				break
			}
		}
	}
}

// lookUp marks the rules of the slot's tests that value may pass.
func (s *slotIndex) lookUp(k keyKind, value string, mark func([]int)) {
	switch k {
	case keyEq, keyFirst:
		mark(s.rules[value])
	case keyDir:
		if i := strings.IndexByte(value, '/'); i >= 0 {
			value = value[:i]
		}
		mark(s.rules[value])
	case keyBase:
		mark(s.rules[baseName(value)])
	case keyBasePrefix, keyBaseSuffix:
		value = baseName(value)
		fallthrough
	case keyPrefix, keySuffix:
		for _, n := range s.lens {
			if n > len(value) {
				break
			}
			if k == keyPrefix || k == keyBasePrefix {
				mark(s.rules[value[:n]])
			} else {
				mark(s.rules[value[len(value)-n:]])
			}
		}
	}
}
