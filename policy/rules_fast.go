package policy

import (
	"errors"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// Most rules are comparisons of the action's strings, glob and
// startsWith: a decision over a few hundred of them must take
// microseconds, which cel-go's interpreter with its cost tracker does not
// give (about 250 ns a condition). A condition made only of the forms
// below is therefore also compiled into Go closures with the same meaning
// (same results, same failures: an index past the end, the cost bound),
// and evaluated that way; any other condition runs in cel-go. Equality of
// the two on random conditions and inputs is tested.
//
//	literals: strings, ints, bools, lists of strings
//	variables: action path risk tenant principal phase paths argv
//	&& || ! == != < <= > >= (ints) in (a string in a list)
//	list[int] size() startsWith endsWith contains glob
//
// The cost is counted as cel-go counts it, near enough to bound the
// work: one unit a node, and glob priced as the cost tracker prices it;
// past the limit the evaluation fails as cel-go's does.

type fastCtx struct {
	v     *ruleVars
	cost  uint64
	limit uint64
}

var (
	errFastIndex = errors.New("index out of range")
	errFastCost  = errors.New("operation cancelled: actual cost limit exceeded")
)

func (c *fastCtx) spend(n uint64) error {
	c.cost += n
	if c.cost > c.limit {
		return errFastCost
	}
	return nil
}

type (
	fBool func(*fastCtx) (bool, error)
	fStr  func(*fastCtx) (string, error)
	fList func(*fastCtx) ([]string, error)
	fInt  func(*fastCtx) (int64, error)
)

// fastCompiler turns a checked condition into closures, or gives up (nil)
// at the first form it does not know.
type fastCompiler struct {
	a   *ast.AST
	set *RuleSet
}

func compileFast(a *ast.AST, set *RuleSet) fBool {
	c := fastCompiler{a: a, set: set}
	return c.boolean(a.Expr())
}

func (c *fastCompiler) kind(e ast.Expr) types.Kind {
	if e.Kind() == ast.ListKind {
		// A literal list of strings, the empty one (list(dyn)) included.
		for _, el := range e.AsList().Elements() {
			if el.Kind() != ast.LiteralKind || el.AsLiteral().Type() != types.StringType {
				return types.DynKind
			}
		}
		return types.ListKind
	}
	t := c.a.GetType(e.ID())
	if t == nil {
		return types.DynKind
	}
	if t.Kind() == types.ListKind {
		if p := t.Parameters(); len(p) == 1 && p[0].Kind() == types.StringKind {
			return types.ListKind // only lists of strings are known here
		}
		return types.DynKind
	}
	return t.Kind()
}

func (c *fastCompiler) boolean(e ast.Expr) fBool {
	switch e.Kind() {
	case ast.LiteralKind:
		b, ok := e.AsLiteral().(types.Bool)
		if !ok {
			return nil
		}
		return func(x *fastCtx) (bool, error) { return bool(b), x.spend(0) }
	case ast.CallKind:
	default:
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	fn := call.FunctionName()
	if call.IsMemberFunction() {
		return c.member(fn, call.Target(), args)
	}
	switch {
	case fn == operators.LogicalAnd && len(args) == 2:
		l, r := c.boolean(args[0]), c.boolean(args[1])
		if l == nil || r == nil {
			return nil
		}
		return func(x *fastCtx) (bool, error) {
			if err := x.spend(1); err != nil {
				return false, err
			}
			lv, lerr := l(x)
			if lerr == nil && !lv {
				return false, nil
			}
			rv, rerr := r(x)
			if rerr == nil && !rv {
				return false, nil
			}
			if lerr != nil {
				return false, lerr
			}
			return rerr == nil, rerr
		}
	case fn == operators.LogicalOr && len(args) == 2:
		l, r := c.boolean(args[0]), c.boolean(args[1])
		if l == nil || r == nil {
			return nil
		}
		return func(x *fastCtx) (bool, error) {
			if err := x.spend(1); err != nil {
				return false, err
			}
			lv, lerr := l(x)
			if lerr == nil && lv {
				return true, nil
			}
			rv, rerr := r(x)
			if rerr == nil && rv {
				return true, nil
			}
			if lerr != nil {
				return false, lerr
			}
			return false, rerr
		}
	case fn == operators.LogicalNot && len(args) == 1:
		a := c.boolean(args[0])
		if a == nil {
			return nil
		}
		return func(x *fastCtx) (bool, error) {
			v, err := a(x)
			return !v && err == nil, err
		}
	case (fn == operators.Equals || fn == operators.NotEquals) && len(args) == 2:
		return c.equality(fn == operators.NotEquals, args[0], args[1])
	case (fn == operators.Less || fn == operators.LessEquals || fn == operators.Greater || fn == operators.GreaterEquals) && len(args) == 2:
		l, r := c.integer(args[0]), c.integer(args[1])
		if l == nil || r == nil {
			return nil
		}
		cmp := map[string]func(a, b int64) bool{
			operators.Less: func(a, b int64) bool { return a < b }, operators.LessEquals: func(a, b int64) bool { return a <= b },
			operators.Greater: func(a, b int64) bool { return a > b }, operators.GreaterEquals: func(a, b int64) bool { return a >= b },
		}[fn]
		return func(x *fastCtx) (bool, error) {
			lv, err := l(x)
			if err != nil {
				return false, err
			}
			rv, err := r(x)
			if err != nil {
				return false, err
			}
			return cmp(lv, rv), x.spend(1)
		}
	case fn == operators.In && len(args) == 2:
		s, l := c.str(args[0]), c.list(args[1])
		if s == nil || l == nil {
			return nil
		}
		return func(x *fastCtx) (bool, error) {
			sv, err := s(x)
			if err != nil {
				return false, err
			}
			lv, err := l(x)
			if err != nil {
				return false, err
			}
			if err := x.spend(1 + uint64(len(lv))); err != nil {
				return false, err
			}
			for _, e := range lv {
				if e == sv {
					return true, nil
				}
			}
			return false, nil
		}
	case fn == "glob" && len(args) == 2:
		return c.glob(args[0], args[1])
	}
	return nil
}

func (c *fastCompiler) equality(negate bool, le, re ast.Expr) fBool {
	lk, rk := c.kind(le), c.kind(re)
	if lk != rk {
		return nil
	}
	var eq func(x *fastCtx) (bool, error)
	switch lk {
	case types.StringKind:
		if re.Kind() != ast.LiteralKind && le.Kind() == ast.LiteralKind {
			le, re = re, le
		}
		l, r := c.str(le), c.str(re)
		if l == nil || r == nil {
			return nil
		}
		if lit, ok := re.AsLiteral().(types.String); ok && re.Kind() == ast.LiteralKind {
			// The common case, a variable against a literal, in one call.
			want := string(lit)
			eq = func(x *fastCtx) (bool, error) {
				lv, err := l(x)
				if err != nil {
					return false, err
				}
				return lv == want, x.spend(1 + uint64(min(len(lv), len(want)))/10)
			}
			break
		}
		eq = equal(l, r, func(a, b string) uint64 { return 1 + uint64(min(len(a), len(b)))/10 })
	case types.IntKind:
		l, r := c.integer(le), c.integer(re)
		if l == nil || r == nil {
			return nil
		}
		eq = equal(l, r, unitCost[int64])
	case types.BoolKind:
		l, r := c.boolean(le), c.boolean(re)
		if l == nil || r == nil {
			return nil
		}
		eq = equal(l, r, unitCost[bool])
	default:
		return nil
	}
	if !negate {
		return eq
	}
	return func(x *fastCtx) (bool, error) {
		v, err := eq(x)
		return !v && err == nil, err
	}
}

// equal compares the values of l and r, both evaluated in order (an error
// of either is the result), spending cost(l, r).
func equal[T comparable](l, r func(*fastCtx) (T, error), cost func(a, b T) uint64) fBool {
	return func(x *fastCtx) (bool, error) {
		lv, err := l(x)
		if err != nil {
			return false, err
		}
		rv, err := r(x)
		if err != nil {
			return false, err
		}
		return lv == rv, x.spend(cost(lv, rv))
	}
}

func unitCost[T any](T, T) uint64 { return 1 }

func (c *fastCompiler) member(fn string, target ast.Expr, args []ast.Expr) fBool {
	if len(args) != 1 {
		return nil
	}
	if fn == "startsWith" && c.kind(target) == types.ListKind {
		l, p := c.list(target), c.list(args[0])
		if l == nil || p == nil {
			return nil
		}
		return func(x *fastCtx) (bool, error) {
			lv, err := l(x)
			if err != nil {
				return false, err
			}
			pv, err := p(x)
			if err != nil {
				return false, err
			}
			if err := x.spend(1 + uint64(len(pv))); err != nil {
				return false, err
			}
			if len(lv) < len(pv) {
				return false, nil
			}
			for i := range pv {
				if lv[i] != pv[i] {
					return false, nil
				}
			}
			return true, nil
		}
	}
	var op func(s, t string) bool
	switch fn {
	case "startsWith":
		op = strings.HasPrefix
	case "endsWith":
		op = strings.HasSuffix
	case "contains":
		op = strings.Contains
	default:
		return nil
	}
	if c.kind(target) != types.StringKind || c.kind(args[0]) != types.StringKind {
		return nil
	}
	s, t := c.str(target), c.str(args[0])
	if s == nil || t == nil {
		return nil
	}
	return func(x *fastCtx) (bool, error) {
		sv, err := s(x)
		if err != nil {
			return false, err
		}
		tv, err := t(x)
		if err != nil {
			return false, err
		}
		if err := x.spend(1 + uint64(len(sv)+len(tv))/10); err != nil {
			return false, err
		}
		return op(sv, tv), nil
	}
}

// glob compiles any overload of glob; literal patterns are the ones
// compiled at start.
func (c *fastCompiler) glob(ne, pe ast.Expr) fBool {
	if ne.Kind() == ast.IdentKind && ne.AsIdent() == "path" {
		return c.globPath(pe) // the common case, without a slice
	}
	var names fList
	switch c.kind(ne) {
	case types.StringKind:
		if s := c.str(ne); s != nil {
			names = func(x *fastCtx) ([]string, error) {
				v, err := s(x)
				return []string{v}, err
			}
		}
	case types.ListKind:
		names = c.list(ne)
	}
	if names == nil {
		return nil
	}
	pats := c.patterns(pe)
	if pats == nil {
		return nil
	}
	pl := patternsLen(pats)
	return func(x *fastCtx) (bool, error) {
		nv, err := names(x)
		if err != nil {
			return false, err
		}
		return matchAny(x, nv, pats, pl)
	}
}

// patternsLen is what globCost counts of the patterns.
func patternsLen(pats []globEntry) uint64 {
	var pl uint64
	for _, p := range pats {
		pl += uint64(len(p.text)) + 1
	}
	return pl
}

// globPath is glob(path, patterns).
func (c *fastCompiler) globPath(pe ast.Expr) fBool {
	pats := c.patterns(pe)
	if pats == nil {
		return nil
	}
	pl := patternsLen(pats)
	return func(x *fastCtx) (bool, error) {
		p := x.v.getPath()
		if err := x.spend(2 + (uint64(len(p))+1)*pl/globPerCost); err != nil {
			return false, err
		}
		base := x.v.getPathBase()
		for i := range pats {
			if pats[i].g.matchBase(p, base) {
				return true, nil
			}
		}
		return false, nil
	}
}

// patterns returns the literal patterns of a glob call, compiled at start.
func (c *fastCompiler) patterns(pe ast.Expr) []globEntry {
	var lits []ast.Expr
	switch pe.Kind() {
	case ast.LiteralKind:
		lits = []ast.Expr{pe}
	case ast.ListKind:
		lits = pe.AsList().Elements()
	default:
		return nil
	}
	out := make([]globEntry, 0, len(lits))
	for _, l := range lits {
		if l.Kind() != ast.LiteralKind {
			return nil
		}
		s, ok := l.AsLiteral().(types.String)
		if !ok {
			return nil
		}
		g, ok := c.set.globs[string(s)]
		if !ok {
			return nil
		}
		out = append(out, globEntry{text: string(s), g: g})
	}
	return out
}

type globEntry struct {
	text string
	g    globPattern
}

// matchAny prices the call as globCost does, then matches.
func matchAny(x *fastCtx, names []string, pats []globEntry, pl uint64) (bool, error) {
	var nl uint64
	for _, n := range names {
		nl += uint64(len(n)) + 1
	}
	if err := x.spend(2 + nl*pl/globPerCost); err != nil {
		return false, err
	}
	for _, n := range names {
		base := baseName(n)
		for i := range pats {
			if pats[i].g.matchBase(n, base) {
				return true, nil
			}
		}
	}
	return false, nil
}

func (c *fastCompiler) str(e ast.Expr) fStr {
	switch e.Kind() {
	case ast.LiteralKind:
		s, ok := e.AsLiteral().(types.String)
		if !ok {
			return nil
		}
		return func(*fastCtx) (string, error) { return string(s), nil }
	case ast.IdentKind:
		var get func(v *ruleVars) string
		switch e.AsIdent() {
		case "action":
			get = func(v *ruleVars) string { return v.req.Action.Name }
		case "path":
			get = (*ruleVars).getPath
		case "risk":
			get = (*ruleVars).getRisk
		case "tenant":
			get = func(v *ruleVars) string { return v.req.Action.Tenant }
		case "principal":
			get = func(v *ruleVars) string { return v.req.Principal }
		case "phase":
			get = (*ruleVars).getPhase
		default:
			return nil
		}
		return func(x *fastCtx) (string, error) { return get(x.v), x.spend(1) }
	case ast.CallKind:
		call := e.AsCall()
		if call.FunctionName() != operators.Index || call.IsMemberFunction() || len(call.Args()) != 2 {
			return nil
		}
		l, i := c.list(call.Args()[0]), c.integer(call.Args()[1])
		if l == nil || i == nil {
			return nil
		}
		return func(x *fastCtx) (string, error) {
			lv, err := l(x)
			if err != nil {
				return "", err
			}
			iv, err := i(x)
			if err != nil {
				return "", err
			}
			if iv < 0 || iv >= int64(len(lv)) {
				return "", errFastIndex
			}
			return lv[iv], x.spend(1)
		}
	}
	return nil
}

func (c *fastCompiler) list(e ast.Expr) fList {
	switch e.Kind() {
	case ast.ListKind:
		l := e.AsList()
		if len(l.OptionalIndices()) > 0 {
			return nil
		}
		var vals []string
		for _, el := range l.Elements() {
			if el.Kind() != ast.LiteralKind {
				return nil
			}
			s, ok := el.AsLiteral().(types.String)
			if !ok {
				return nil
			}
			vals = append(vals, string(s))
		}
		return func(x *fastCtx) ([]string, error) { return vals, x.spend(1) }
	case ast.IdentKind:
		switch e.AsIdent() {
		case "paths":
			return func(x *fastCtx) ([]string, error) { return x.v.getPaths(), x.spend(1) }
		case "argv":
			return func(x *fastCtx) ([]string, error) { return x.v.getArgv(), x.spend(1) }
		}
	}
	return nil
}

func (c *fastCompiler) integer(e ast.Expr) fInt {
	switch e.Kind() {
	case ast.LiteralKind:
		n, ok := e.AsLiteral().(types.Int)
		if !ok {
			return nil
		}
		return func(*fastCtx) (int64, error) { return int64(n), nil }
	case ast.CallKind:
	default:
		return nil
	}
	call := e.AsCall()
	if call.FunctionName() != "size" {
		return nil
	}
	var arg ast.Expr
	switch {
	case call.IsMemberFunction() && len(call.Args()) == 0:
		arg = call.Target()
	case !call.IsMemberFunction() && len(call.Args()) == 1:
		arg = call.Args()[0]
	default:
		return nil
	}
	switch c.kind(arg) {
	case types.ListKind:
		l := c.list(arg)
		if l == nil {
			return nil
		}
		return func(x *fastCtx) (int64, error) {
			v, err := l(x)
			return int64(len(v)), err
		}
	case types.StringKind:
		s := c.str(arg)
		if s == nil {
			return nil
		}
		return func(x *fastCtx) (int64, error) {
			v, err := s(x)
			return int64(utf8.RuneCountInString(v)), err
		}
	}
	return nil
}
