package policy

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/harness-runtime/harness/workspace"
	"github.com/harness-runtime/harness/workspace/patch"
)

// shellAction is the action whose command argv holds.
const shellAction = "workspace_run_shell"

// Which variables a decision has computed, in ruleVars.done.
const (
	hasInput = 1 << iota
	hasPath
	hasPaths
	hasPathsVal
	hasArgv
	hasArgvVal
	hasSession
	hasPathBase
	hasSize
)

// ruleVars are a condition's variables for one request, computed when a
// condition first reads them and shared by the rules of one decision.
type ruleVars struct {
	req      *Request
	set      *RuleSet
	done     uint16
	path     string
	pathBase string
	paths    []string
	argv     []string
	input    ref.Val
	pathsV   ref.Val
	argvV    ref.Val
	session  ref.Val
	// risk replaces the schema's when riskSet (the examples have no
	// schema).
	risk    string
	riskSet bool
	// fast is the state of a condition compiled to Go.
	fast fastCtx
	// sizeV is size's result, once hasSize.
	sizeV int64
}

var adapter = types.DefaultTypeAdapter

// ResolveName implements interpreter.Activation.
func (v *ruleVars) ResolveName(name string) (any, bool) {
	r := v.req
	switch name {
	case "action":
		return types.String(r.Action.Name), true
	case "input":
		if v.done&hasInput == 0 {
			in := r.Action.Input
			if in == nil {
				in = map[string]any{}
			}
			v.input, v.done = types.NewStringInterfaceMap(adapter, in), v.done|hasInput
		}
		return v.input, true
	case "path":
		return types.String(v.getPath()), true
	case "paths":
		if v.done&hasPathsVal == 0 {
			v.pathsV, v.done = types.NewStringList(adapter, v.getPaths()), v.done|hasPathsVal
		}
		return v.pathsV, true
	case "argv":
		if v.done&hasArgvVal == 0 {
			v.argvV, v.done = types.NewStringList(adapter, v.getArgv()), v.done|hasArgvVal
		}
		return v.argvV, true
	case "risk":
		return types.String(v.getRisk()), true
	case "tenant":
		return types.String(r.Action.Tenant), true
	case "principal":
		return types.String(r.Principal), true
	case "phase":
		return types.String(v.getPhase()), true
	case "session":
		if v.done&hasSession == 0 {
			m := map[string]any{"id": r.Action.SessionID, "task": r.Action.TaskID, "agent": r.Action.AgentID}
			if v.set != nil && v.set.session != nil {
				for k, x := range v.set.session(r) {
					m[k] = x
				}
			}
			v.session, v.done = types.NewStringInterfaceMap(adapter, m), v.done|hasSession
		}
		return v.session, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (v *ruleVars) Parent() interpreter.Activation { return nil }

func (v *ruleVars) getPath() string {
	if v.done&hasPath == 0 {
		p, _ := v.req.Action.Input["path"].(string)
		v.path, v.done = cleanRulePath(p), v.done|hasPath
	}
	return v.path
}

func (v *ruleVars) getPathBase() string {
	if v.done&hasPathBase == 0 {
		v.pathBase, v.done = baseName(v.getPath()), v.done|hasPathBase
	}
	return v.pathBase
}

func (v *ruleVars) getPaths() []string {
	if v.done&hasPaths == 0 {
		v.paths, v.done = v.patchPaths(), v.done|hasPaths
	}
	return v.paths
}

func (v *ruleVars) getArgv() []string {
	if v.done&hasArgv == 0 {
		var argv []string
		if v.req.Action.Name == shellAction {
			if cmd, ok := v.req.Action.Input["command"].(string); ok {
				argv, _ = workspace.Tokenize(cmd) // one that does not tokenize will not run
			}
		}
		if argv == nil {
			argv = []string{}
		}
		v.argv, v.done = argv, v.done|hasArgv
	}
	return v.argv
}

func (v *ruleVars) getRisk() string {
	if v.riskSet {
		return v.risk
	}
	if v.req.Schema != nil {
		return string(v.req.Schema.Risk)
	}
	return ""
}

func (v *ruleVars) getPhase() string {
	if v.req.Phase == "" {
		return string(PhaseDirect)
	}
	return string(v.req.Phase)
}

// cleanRulePath cleans a path as the workspace does ("./a//b" is "a/b",
// "." and "" are ""), so that a rule sees one spelling of each file.
func cleanRulePath(p string) string {
	if p == "" {
		return ""
	}
	p = path.Clean(p)
	if p == "." {
		return ""
	}
	return p
}

// patchPaths is path and, for an input with a patch, every file name its
// headers give, as written and without its first component (or at the
// input's strip level when it gives one), as the workspace may resolve
// them.
func (v *ruleVars) patchPaths() []string {
	out := []string{}
	add := func(p string) {
		if p = cleanRulePath(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	add(v.getPath())
	text, ok := v.req.Action.Input["patch"].(string)
	if !ok || text == "" {
		return out
	}
	p, err := patch.Parse(text)
	if err != nil {
		return out
	}
	strip := -1
	if n, ok := v.req.Action.Input["strip"].(float64); ok && n >= 0 && n <= 64 {
		strip = int(n)
	} else if n, ok := v.req.Action.Input["strip"].(int); ok && n >= 0 && n <= 64 {
		strip = n
	}
	for _, f := range p.Files {
		for _, name := range []string{f.OldName, f.NewName, f.GitOldName, f.GitNewName} {
			if name == "" {
				continue
			}
			switch {
			case strip >= 0:
				add(stripComponents(name, strip))
			default:
				add(name)
				add(stripComponents(name, 1))
			}
		}
	}
	return out
}

func stripComponents(name string, n int) string {
	for range n {
		_, rest, ok := strings.Cut(name, "/")
		if !ok {
			return ""
		}
		name = rest
	}
	return name
}

// ruleEnv is the CEL environment of one RuleSet.
type ruleEnv struct {
	env *cel.Env
	set *RuleSet
}

var (
	stringList = cel.ListType(cel.StringType)
	stringMap  = cel.MapType(cel.StringType, cel.DynType)
)

// Overload ids of the helpers, for the cost tracker.
const (
	globSS      = "glob_string_string"
	globSL      = "glob_string_list"
	globLS      = "glob_list_string"
	globLL      = "glob_list_list"
	listPrefix  = "list_string_startsWith_list_string"
	globPerCost = 64 // bytes of name times pattern per cost unit
)

func newRuleEnv(s *RuleSet) (*ruleEnv, error) {
	globFn := func(name, pattern ref.Val) ref.Val { return s.glob(name, pattern) }
	env, err := cel.NewEnv(
		cel.Variable("action", cel.StringType),
		cel.Variable("input", stringMap),
		cel.Variable("path", cel.StringType),
		cel.Variable("paths", stringList),
		cel.Variable("argv", stringList),
		cel.Variable("risk", cel.StringType),
		cel.Variable("tenant", cel.StringType),
		cel.Variable("principal", cel.StringType),
		cel.Variable("phase", cel.StringType),
		cel.Variable("session", stringMap),
		cel.Function("glob",
			cel.Overload(globSS, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(globFn)),
			cel.Overload(globSL, []*cel.Type{cel.StringType, stringList}, cel.BoolType, cel.BinaryBinding(globFn)),
			cel.Overload(globLS, []*cel.Type{stringList, cel.StringType}, cel.BoolType, cel.BinaryBinding(globFn)),
			cel.Overload(globLL, []*cel.Type{stringList, stringList}, cel.BoolType, cel.BinaryBinding(globFn)),
		),
		cel.Function("startsWith",
			cel.MemberOverload(listPrefix, []*cel.Type{stringList, stringList}, cel.BoolType, cel.BinaryBinding(listStartsWith)),
		),
		ext.Strings(),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(maxConditionBytes),
	)
	if err != nil {
		return nil, err
	}
	return &ruleEnv{env: env, set: s}, nil
}

// compile parses and type-checks one condition and plans its program
// with the cost bound, and gives its checked tree; whys lists every
// problem.
func (e *ruleEnv) compile(text string, limit uint64) (cel.Program, fBool, *ast.AST, []string) {
	if len(text) > maxConditionBytes {
		return nil, nil, nil, []string{"the condition is longer than " + strconv.Itoa(maxConditionBytes) + " bytes"}
	}
	checked, iss := e.check(text)
	if iss != nil && iss.Err() != nil {
		var whys []string
		for _, ce := range iss.Errors() {
			where := ""
			if loc := ce.Location; loc != nil && loc.Line() > 0 {
				if loc.Line() > 1 {
					where = "line " + strconv.Itoa(loc.Line()) + " of the condition, "
				}
				where += "column " + strconv.Itoa(loc.Column()+1) + ": "
			}
			whys = append(whys, where+ce.Message)
		}
		return nil, nil, nil, whys
	}
	if !checked.OutputType().IsExactType(cel.BoolType) {
		return nil, nil, nil, []string{"must be a condition (true or false), not a value of type " + cel.FormatCELType(checked.OutputType()) + "; compare it, e.g. input.recursive == true"}
	}
	whys := e.checkGlobs(checked)
	if len(whys) > 0 {
		return nil, nil, nil, whys
	}
	prg, err := e.env.Program(checked,
		cel.CostLimit(limit),
		cel.CostTrackerOptions(
			cost.OverloadTracker(globSS, globCost),
			cost.OverloadTracker(globSL, globCost),
			cost.OverloadTracker(globLS, globCost),
			cost.OverloadTracker(globLL, globCost),
			cost.OverloadTracker(listPrefix, prefixCost),
		),
	)
	if err != nil {
		return nil, nil, nil, []string{err.Error()}
	}
	native := checked.NativeRep()
	return prg, compileFast(native, e.set), native, nil
}

// check parses and type-checks text: through parseSimple when it takes
// the text and the tree checks, else (and for the messages of a tree that
// does not) through CEL's parser.
func (e *ruleEnv) check(text string) (*cel.Ast, *cel.Issues) {
	if parsed, ok := parseSimple(text); ok {
		if checked, iss := e.env.Check(parsed); iss == nil || iss.Err() == nil {
			return checked, iss
		}
	}
	return compileWithParser(e.env, text)
}

// compileWithParser is cel.Env.Compile (a variable for the tests).
var compileWithParser = (*cel.Env).Compile

// checkGlobs compiles the literal patterns of glob calls once, and lists
// those that are not valid patterns.
func (e *ruleEnv) checkGlobs(checked *cel.Ast) []string {
	var whys []string
	lit := func(x ast.Expr) {
		if x.Kind() != ast.LiteralKind {
			return
		}
		p, ok := x.AsLiteral().(types.String)
		if !ok {
			return
		}
		if _, done := e.set.globs[string(p)]; done {
			return
		}
		g, err := compileGlob(string(p))
		if err != nil {
			whys = append(whys, "glob pattern "+strconv.Quote(string(p))+": "+err.Error())
			return
		}
		e.set.globs[string(p)] = g
	}
	ast.PreOrderVisit(checked.NativeRep().Expr(), ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() != ast.CallKind || x.AsCall().FunctionName() != "glob" || len(x.AsCall().Args()) != 2 {
			return
		}
		arg := x.AsCall().Args()[1]
		if arg.Kind() == ast.ListKind {
			for _, el := range arg.AsList().Elements() {
				lit(el)
			}
			return
		}
		lit(arg)
	}))
	return whys
}

// glob is the binding of every glob overload: any name matching any
// pattern.
func (s *RuleSet) glob(names, patterns ref.Val) ref.Val {
	var matched, bad ref.Val = types.False, nil
	eachString(patterns, func(p string) bool {
		g, ok := s.globs[p]
		if !ok {
			var err error
			if g, err = compileGlob(p); err != nil {
				bad = types.NewErr("glob pattern %q: %v", p, err)
				return false
			}
		}
		eachString(names, func(n string) bool {
			if g.match(n) {
				matched = types.True
			}
			return matched != types.True
		})
		return matched != types.True
	})
	if bad != nil {
		return bad
	}
	return matched
}

// eachString calls fn with a string, or with each string of a list, until
// fn returns false.
func eachString(v ref.Val, fn func(string) bool) {
	switch x := v.(type) {
	case types.String:
		fn(string(x))
	case traits.Lister:
		for it := x.Iterator(); it.HasNext() == types.True; {
			if s, ok := it.Next().(types.String); ok && !fn(string(s)) {
				return
			}
		}
	}
}

func listStartsWith(list, prefix ref.Val) ref.Val {
	l, ok1 := list.(traits.Lister)
	p, ok2 := prefix.(traits.Lister)
	if !ok1 || !ok2 {
		return types.NewErr("startsWith: want two lists of strings")
	}
	n, ok := p.Size().(types.Int)
	if !ok || l.Size().(types.Int) < n {
		return types.False
	}
	for i := types.Int(0); i < n; i++ {
		if l.Get(i).Equal(p.Get(i)) != types.True {
			return types.False
		}
	}
	return types.True
}

// globCost prices a glob call by the product of the names' and the
// patterns' lengths, which bounds the matcher's work.
func globCost(args []ref.Val, _ ref.Val) *uint64 {
	var names, patterns uint64
	eachString(args[0], func(s string) bool { names += uint64(len(s)) + 1; return true })
	eachString(args[1], func(s string) bool { patterns += uint64(len(s)) + 1; return true })
	c := 1 + names*patterns/globPerCost
	return &c
}

func prefixCost(args []ref.Val, _ ref.Val) *uint64 {
	c := uint64(1)
	if l, ok := args[1].(traits.Lister); ok {
		if n, ok := l.Size().(types.Int); ok && n > 0 {
			c += uint64(n)
		}
	}
	return &c
}
