package sanitize

import (
	"encoding/base64"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/zricethezav/gitleaks/v8/cmd/generate/config/utils"
	"github.com/zricethezav/gitleaks/v8/config"
)

// This file reads gitleaks' rule examples. gitleaks keeps them as local
// variables of its rule constructors (cmd/generate/config/rules: each
// function builds tps and fps and hands them to utils.Validate), so they
// cannot be had by calling the package. Instead the constructors' source,
// from the module cache, is parsed and the statements that build the two
// lists are evaluated by a small interpreter: string literals and
// concatenation, slices and maps, append, range loops, fmt.Sprintf,
// base64, gitleaks' own utils (called for real) and secrets.NewSecret
// (replaced by a seeded generator of strings matching a regular
// expression, so that the corpus is the same on every run). A constructor
// using anything else is reported as not extracted.

// gitleaksModule is the module whose rule examples make the corpus; its
// version is go.mod's.
const gitleaksModule = "github.com/zricethezav/gitleaks/v8"

// ruleExamples are one gitleaks rule's examples, as its constructor hands
// them to utils.Validate (or ValidateWithPaths, which adds a file path).
type ruleExamples struct {
	family string // the rules/*.go file, without .go: "aws", "github"
	fn     string // the constructor: "AWS"
	id     string // the rule id: "aws-access-token"
	tps    []example
	fps    []example
	err    error // why the examples could not be extracted
}

type example struct {
	text string
	path string // for ValidateWithPaths rules; empty otherwise
}

// gitleaksRulesDir returns the directory of gitleaks' rule constructors in
// the module cache (go list puts the module there when it is missing).
func gitleaksRulesDir() (string, error) {
	gobin := filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return "", fmt.Errorf("no go command to locate %s: %w", gitleaksModule, err)
		}
	}
	out, err := exec.Command(gobin, "list", "-m", "-f", "{{.Dir}}", gitleaksModule).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go list -m %s: %w", gitleaksModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: module not in the cache", gitleaksModule)
	}
	return filepath.Join(dir, "cmd", "generate", "config", "rules"), nil
}

// loadGitleaksExamples parses every rule constructor in dir and evaluates
// its examples. Rules come back sorted by family, then id.
func loadGitleaksExamples(dir string, seed uint64) ([]ruleExamples, error) {
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	ev := &interp{
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		vars:  map[string]pkgDecl[ast.Expr]{},
		funcs: map[string]pkgDecl[*ast.FuncDecl]{},
		cache: map[string]any{},
	}
	type ctor struct {
		family  string
		fd      *ast.FuncDecl
		imports map[string]string
	}
	var ctors []ctor
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		family := strings.TrimSuffix(filepath.Base(name), ".go")
		imports := fileImports(f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						for i, n := range vs.Names {
							if i < len(vs.Values) {
								ev.vars[n.Name] = pkgDecl[ast.Expr]{vs.Values[i], imports}
							}
						}
					}
				}
			case *ast.FuncDecl:
				ev.funcs[d.Name.Name] = pkgDecl[*ast.FuncDecl]{d, imports}
				if d.Recv == nil && returnsRule(d) {
					ctors = append(ctors, ctor{family, d, imports})
				}
			}
		}
	}
	var out []ruleExamples
	for _, c := range ctors {
		ev.file = c.imports
		re := ruleExamples{family: c.family, fn: c.fd.Name.Name}
		re.id, re.tps, re.fps, re.err = ev.ruleExamples(c.fd)
		out = append(out, re)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].family != out[j].family {
			return out[i].family < out[j].family
		}
		return out[i].id < out[j].id
	})
	return out, nil
}

func returnsRule(fd *ast.FuncDecl) bool {
	if fd.Type.Results == nil || len(fd.Type.Results.List) != 1 {
		return false
	}
	st, ok := fd.Type.Results.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := st.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Rule"
}

// fileImports maps a file's import names to their paths.
func fileImports(f *ast.File) map[string]string {
	m := map[string]string{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		name := p[strings.LastIndexByte(p, '/')+1:]
		if im.Name != nil {
			name = im.Name.Name
		}
		m[name] = p
	}
	return m
}

// interp evaluates the subset of Go the rule constructors use to build
// their examples. Values are string, int, bool, []any and map[string]any.
type interp struct {
	rng   *rand.Rand
	vars  map[string]pkgDecl[ast.Expr] // package-level variables and constants
	funcs map[string]pkgDecl[*ast.FuncDecl]
	cache map[string]any
	file  map[string]string // imports of the file being evaluated
	depth int
}

// pkgDecl is a package-level declaration with the imports of its file.
type pkgDecl[T any] struct {
	decl    T
	imports map[string]string
}

type scope struct {
	vars   map[string]any
	parent *scope
}

func (s *scope) lookup(name string) (any, bool) {
	for ; s != nil; s = s.parent {
		if v, ok := s.vars[name]; ok {
			return v, true
		}
	}
	return nil, false
}

func (s *scope) set(name string, v any, define bool) {
	if !define {
		for p := s; p != nil; p = p.parent {
			if _, ok := p.vars[name]; ok {
				p.vars[name] = v
				return
			}
		}
	}
	s.vars[name] = v
}

// errValue is a variable whose value could not be computed: an error only
// when the examples use it (rule definitions hold regular expressions,
// structs and other things the interpreter does not need).
type errValue struct{ err error }

// validateCall is what a constructor's return statement passes on.
type validateCall struct{ tps, fps any }

func (ev *interp) ruleExamples(fd *ast.FuncDecl) (id string, tps, fps []example, err error) {
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		if kv, ok := n.(*ast.KeyValueExpr); ok && id == "" {
			if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "RuleID" {
				if v, err := ev.expr(&scope{vars: map[string]any{}}, kv.Value); err == nil {
					id, _ = v.(string)
				}
			}
		}
		return true
	})
	if id == "" {
		return "", nil, nil, errors.New("no RuleID")
	}
	sc := &scope{vars: map[string]any{}}
	call, err := ev.block(sc, fd.Body.List)
	if err != nil {
		return id, nil, nil, err
	}
	if call == nil {
		return id, nil, nil, errors.New("no utils.Validate call")
	}
	if tps, err = examples(call.tps); err != nil {
		return id, nil, nil, fmt.Errorf("tps: %w", err)
	}
	if fps, err = examples(call.fps); err != nil {
		return id, nil, nil, fmt.Errorf("fps: %w", err)
	}
	return id, tps, fps, nil
}

func examples(v any) ([]example, error) {
	switch t := v.(type) {
	case nil:
		return nil, nil
	case errValue:
		return nil, t.err
	case []any:
		out := make([]example, 0, len(t))
		for _, e := range t {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %T", e)
			}
			out = append(out, example{text: s})
		}
		return out, nil
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]example, 0, len(t))
		for _, k := range keys {
			s, ok := t[k].(string)
			if !ok {
				return nil, fmt.Errorf("element %T", t[k])
			}
			out = append(out, example{text: s, path: k})
		}
		return out, nil
	}
	return nil, fmt.Errorf("examples of type %T", v)
}

// block runs statements; a return of utils.Validate(r, tps, fps) ends it.
func (ev *interp) block(sc *scope, list []ast.Stmt) (*validateCall, error) {
	for _, st := range list {
		call, err := ev.stmt(sc, st)
		if err != nil || call != nil {
			return call, err
		}
	}
	return nil, nil
}

func (ev *interp) stmt(sc *scope, st ast.Stmt) (*validateCall, error) {
	switch s := st.(type) {
	case *ast.AssignStmt:
		if len(s.Lhs) != len(s.Rhs) {
			return nil, fmt.Errorf("assignment of %d values to %d names", len(s.Rhs), len(s.Lhs))
		}
		vals := make([]any, len(s.Rhs))
		for i, r := range s.Rhs {
			v, err := ev.expr(sc, r)
			if err != nil {
				v = errValue{err}
			}
			vals[i] = v
		}
		for i, l := range s.Lhs {
			id, ok := l.(*ast.Ident)
			if !ok {
				continue // r.Allowlists = …: the rule, not its examples
			}
			if id.Name == "_" {
				continue
			}
			v := vals[i]
			if s.Tok == token.ADD_ASSIGN {
				old, _ := sc.lookup(id.Name)
				a, ok1 := old.(string)
				b, ok2 := v.(string)
				if !ok1 || !ok2 {
					v = errValue{errors.New("+= on non-strings")}
				} else {
					v = a + b
				}
			}
			sc.set(id.Name, v, s.Tok == token.DEFINE)
		}
	case *ast.DeclStmt:
		gd, ok := s.Decl.(*ast.GenDecl)
		if !ok {
			return nil, nil
		}
		for _, sp := range gd.Specs {
			vs, ok := sp.(*ast.ValueSpec)
			if !ok {
				continue
			}
			for i, n := range vs.Names {
				var v any
				if i < len(vs.Values) {
					var err error
					if v, err = ev.expr(sc, vs.Values[i]); err != nil {
						v = errValue{err}
					}
				}
				sc.set(n.Name, v, true)
			}
		}
	case *ast.RangeStmt:
		x, err := ev.expr(sc, s.X)
		if err != nil {
			return nil, err
		}
		bind := func(k, v any) (*validateCall, error) {
			inner := &scope{vars: map[string]any{}, parent: sc}
			if id, ok := s.Key.(*ast.Ident); ok && id.Name != "_" {
				inner.set(id.Name, k, true)
			}
			if id, ok := s.Value.(*ast.Ident); ok && id.Name != "_" {
				inner.set(id.Name, v, true)
			}
			return ev.block(inner, s.Body.List)
		}
		switch t := x.(type) {
		case []any:
			for i, e := range t {
				if _, err := bind(i, e); err != nil {
					return nil, err
				}
			}
		case map[string]any:
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if _, err := bind(k, t[k]); err != nil {
					return nil, err
				}
			}
		default:
			return nil, fmt.Errorf("range over %T", x)
		}
	case *ast.BlockStmt:
		return ev.block(&scope{vars: map[string]any{}, parent: sc}, s.List)
	case *ast.ReturnStmt:
		if len(s.Results) != 1 {
			return nil, errors.New("return of several values")
		}
		if u, ok := s.Results[0].(*ast.UnaryExpr); ok && u.Op == token.AND {
			return &validateCall{}, nil // "return &r": a rule without examples
		}
		call, ok := s.Results[0].(*ast.CallExpr)
		if !ok || len(call.Args) != 3 {
			return nil, errors.New("return is not utils.Validate(r, tps, fps)")
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Validate" && sel.Sel.Name != "ValidateWithPaths") {
			return nil, errors.New("return is not utils.Validate(r, tps, fps)")
		}
		tps, err := ev.expr(sc, call.Args[1])
		if err != nil {
			return nil, err
		}
		fps, err := ev.expr(sc, call.Args[2])
		if err != nil {
			return nil, err
		}
		return &validateCall{tps: tps, fps: fps}, nil
	case *ast.ExprStmt, *ast.EmptyStmt:
	default:
		return nil, fmt.Errorf("statement %T", st)
	}
	return nil, nil
}

func (ev *interp) expr(sc *scope, e ast.Expr) (any, error) {
	v, err := ev.eval(sc, e)
	if err != nil {
		return nil, err
	}
	if ev, ok := v.(errValue); ok {
		return nil, ev.err
	}
	return v, nil
}

func (ev *interp) eval(sc *scope, e ast.Expr) (any, error) {
	switch x := e.(type) {
	case *ast.BasicLit:
		switch x.Kind {
		case token.STRING:
			return strconv.Unquote(x.Value)
		case token.INT:
			return strconv.Atoi(x.Value)
		case token.CHAR:
			r, _, _, err := strconv.UnquoteChar(x.Value[1:len(x.Value)-1], '\'')
			return string(r), err
		}
	case *ast.ParenExpr:
		return ev.expr(sc, x.X)
	case *ast.Ident:
		if v, ok := sc.lookup(x.Name); ok {
			return v, nil
		}
		switch x.Name {
		case "nil":
			return nil, nil
		case "true", "false":
			return x.Name == "true", nil
		}
		return ev.pkgVar(x.Name)
	case *ast.BinaryExpr:
		a, err := ev.expr(sc, x.X)
		if err != nil {
			return nil, err
		}
		b, err := ev.expr(sc, x.Y)
		if err != nil {
			return nil, err
		}
		as, ok1 := a.(string)
		bs, ok2 := b.(string)
		if x.Op == token.ADD && ok1 && ok2 {
			return as + bs, nil
		}
		return nil, fmt.Errorf("operator %s on %T, %T", x.Op, a, b)
	case *ast.CompositeLit:
		return ev.composite(sc, x)
	case *ast.CallExpr:
		return ev.call(sc, x)
	}
	return nil, fmt.Errorf("expression %T", e)
}

func (ev *interp) pkgVar(name string) (any, error) {
	if v, ok := ev.cache[name]; ok {
		return v, nil
	}
	d, ok := ev.vars[name]
	if !ok {
		return nil, fmt.Errorf("unknown name %s", name)
	}
	saved := ev.file
	ev.file = d.imports
	v, err := ev.expr(&scope{vars: map[string]any{}}, d.decl)
	ev.file = saved
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ev.cache[name] = v
	return v, nil
}

func (ev *interp) composite(sc *scope, x *ast.CompositeLit) (any, error) {
	switch x.Type.(type) {
	case *ast.ArrayType, nil:
		out := make([]any, 0, len(x.Elts))
		for _, el := range x.Elts {
			if cl, ok := el.(*ast.CompositeLit); ok && cl.Type == nil {
				cl.Type = &ast.ArrayType{} // elided inner type: only slices nest here
			}
			v, err := ev.expr(sc, el)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *ast.MapType:
		out := make(map[string]any, len(x.Elts))
		for _, el := range x.Elts {
			kv, ok := el.(*ast.KeyValueExpr)
			if !ok {
				return nil, errors.New("map element without key")
			}
			k, err := ev.expr(sc, kv.Key)
			if err != nil {
				return nil, err
			}
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("map key %T", k)
			}
			if cl, ok := kv.Value.(*ast.CompositeLit); ok && cl.Type == nil {
				cl.Type = &ast.ArrayType{}
			}
			v, err := ev.expr(sc, kv.Value)
			if err != nil {
				return nil, err
			}
			out[ks] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("composite literal %T", x.Type)
}

func (ev *interp) args(sc *scope, list []ast.Expr) ([]any, error) {
	out := make([]any, len(list))
	for i, a := range list {
		v, err := ev.expr(sc, a)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func strArgs(fn string, args []any, n int) ([]string, error) {
	if n >= 0 && len(args) != n {
		return nil, fmt.Errorf("%s: %d arguments", fn, len(args))
	}
	out := make([]string, len(args))
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("%s: argument %d is %T", fn, i, a)
		}
		out[i] = s
	}
	return out, nil
}

func (ev *interp) call(sc *scope, x *ast.CallExpr) (any, error) {
	// Conversions: string(b), []byte(s).
	switch f := x.Fun.(type) {
	case *ast.ArrayType:
		return ev.expr(sc, x.Args[0])
	case *ast.Ident:
		switch f.Name {
		case "string":
			return ev.expr(sc, x.Args[0])
		case "append":
			args, err := ev.args(sc, x.Args)
			if err != nil {
				return nil, err
			}
			base, ok := args[0].([]any)
			if args[0] != nil && !ok {
				return nil, fmt.Errorf("append to %T", args[0])
			}
			out := append([]any(nil), base...)
			if x.Ellipsis.IsValid() {
				more, ok := args[1].([]any)
				if args[1] != nil && !ok {
					return nil, fmt.Errorf("append of %T...", args[1])
				}
				return append(out, more...), nil
			}
			return append(out, args[1:]...), nil
		case "newPlausibleSecret":
			// generic.go: a secret for the regex with a digit 1-9 and none
			// of gitleaks' stop words, as its constructor retries for.
			args, err := ev.args(sc, x.Args)
			if err != nil {
				return nil, err
			}
			s, err := strArgs(f.Name, args, 1)
			if err != nil {
				return nil, err
			}
			words, err := ev.pkgVar("DefaultStopWords")
			if err != nil {
				return nil, err
			}
			sw, err := strArgs("DefaultStopWords", words.([]any), -1)
			if err != nil {
				return nil, err
			}
			al := &config.Allowlist{StopWords: sw}
			for range 1000 {
				v, err := ev.genRegex(s[0])
				if err != nil {
					return nil, err
				}
				if strings.ContainsAny(v, "123456789") {
					if ok, _ := al.ContainsStopWord(v); !ok {
						return v, nil
					}
				}
			}
			return nil, errors.New("newPlausibleSecret: no plausible secret in 1000 tries")
		}
		d, ok := ev.funcs[f.Name]
		if !ok {
			return nil, fmt.Errorf("unknown function %s", f.Name)
		}
		return ev.userFunc(sc, d, x.Args)
	case *ast.SelectorExpr:
		return ev.pkgCall(sc, f, x)
	}
	return nil, fmt.Errorf("call of %T", x.Fun)
}

// userFunc runs a helper of the rules package that returns one value.
func (ev *interp) userFunc(sc *scope, d pkgDecl[*ast.FuncDecl], argExprs []ast.Expr) (any, error) {
	if ev.depth > 8 {
		return nil, errors.New("helpers nested too deep")
	}
	args, err := ev.args(sc, argExprs)
	if err != nil {
		return nil, err
	}
	fd := d.decl
	saved := ev.file
	ev.file = d.imports
	defer func() { ev.file = saved }()
	inner := &scope{vars: map[string]any{}}
	i := 0
	for _, field := range fd.Type.Params.List {
		for _, n := range field.Names {
			if i >= len(args) {
				return nil, fmt.Errorf("%s: too few arguments", fd.Name.Name)
			}
			inner.set(n.Name, args[i], true)
			i++
		}
	}
	ev.depth++
	defer func() { ev.depth-- }()
	for _, st := range fd.Body.List {
		if r, ok := st.(*ast.ReturnStmt); ok {
			if len(r.Results) != 1 {
				return nil, fmt.Errorf("%s: return of %d values", fd.Name.Name, len(r.Results))
			}
			return ev.expr(inner, r.Results[0])
		}
		if _, err := ev.stmt(inner, st); err != nil {
			return nil, fmt.Errorf("%s: %w", fd.Name.Name, err)
		}
	}
	return nil, fmt.Errorf("%s: no return", fd.Name.Name)
}

// pkgCall evaluates pkg.Func(args) and base64.Encoding.EncodeToString(x).
func (ev *interp) pkgCall(sc *scope, f *ast.SelectorExpr, x *ast.CallExpr) (any, error) {
	if inner, ok := f.X.(*ast.SelectorExpr); ok {
		pk, ok := inner.X.(*ast.Ident)
		if !ok || ev.file[pk.Name] != "encoding/base64" || f.Sel.Name != "EncodeToString" {
			return nil, errors.New("method call")
		}
		enc := map[string]*base64.Encoding{
			"StdEncoding": base64.StdEncoding, "RawStdEncoding": base64.RawStdEncoding,
			"URLEncoding": base64.URLEncoding, "RawURLEncoding": base64.RawURLEncoding,
		}[inner.Sel.Name]
		if enc == nil {
			return nil, fmt.Errorf("base64.%s", inner.Sel.Name)
		}
		args, err := ev.args(sc, x.Args)
		if err != nil {
			return nil, err
		}
		s, err := strArgs("EncodeToString", args, 1)
		if err != nil {
			return nil, err
		}
		return enc.EncodeToString([]byte(s[0])), nil
	}
	pk, ok := f.X.(*ast.Ident)
	if !ok {
		return nil, errors.New("call of a method")
	}
	path := ev.file[pk.Name]
	name := path + "." + f.Sel.Name
	args, err := ev.args(sc, x.Args)
	if err != nil {
		return nil, err
	}
	if name == "fmt.Sprintf" {
		if len(args) == 0 {
			return nil, errors.New("fmt.Sprintf without format")
		}
		format, ok := args[0].(string)
		if !ok {
			return nil, errors.New("fmt.Sprintf format")
		}
		return fmt.Sprintf(format, args[1:]...), nil
	}
	if name == "strings.Repeat" {
		if len(args) != 2 {
			return nil, errors.New("strings.Repeat arguments")
		}
		s, ok1 := args[0].(string)
		n, ok2 := args[1].(int)
		if !ok1 || !ok2 {
			return nil, errors.New("strings.Repeat arguments")
		}
		return strings.Repeat(s, n), nil
	}
	const gen = gitleaksModule + "/cmd/generate/"
	one := map[string]func(string) string{
		gen + "config/utils.AlphaNumeric":              utils.AlphaNumeric,
		gen + "config/utils.AlphaNumericExtended":      utils.AlphaNumericExtended,
		gen + "config/utils.AlphaNumericExtendedShort": utils.AlphaNumericExtendedShort,
		gen + "config/utils.AlphaNumericExtendedLong":  utils.AlphaNumericExtendedLong,
		gen + "config/utils.Hex":                       utils.Hex,
		gen + "config/utils.Numeric":                   utils.Numeric,
		"strings.ToUpper":                              strings.ToUpper,
		"strings.ToLower":                              strings.ToLower,
		"strings.TrimSpace":                            strings.TrimSpace,
	}
	if fn, ok := one[name]; ok {
		s, err := strArgs(name, args, 1)
		if err != nil {
			return nil, err
		}
		return fn(s[0]), nil
	}
	switch name {
	case gen + "secrets.NewSecret":
		s, err := strArgs(name, args, 1)
		if err != nil {
			return nil, err
		}
		return ev.genRegex(s[0])
	case gen + "config/utils.Hex8_4_4_4_12":
		return utils.Hex8_4_4_4_12(), nil
	case gen + "config/utils.GenerateSampleSecret":
		s, err := strArgs(name, args, 2)
		if err != nil {
			return nil, err
		}
		return utils.GenerateSampleSecret(s[0], s[1]), nil
	case gen + "config/utils.GenerateSampleSecrets":
		s, err := strArgs(name, args, 2)
		if err != nil {
			return nil, err
		}
		list := utils.GenerateSampleSecrets(s[0], s[1])
		sort.Strings(list) // it comes from a map: fix the order
		out := make([]any, len(list))
		for i, v := range list {
			out[i] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("call of %s", name)
}

// genRegex returns a string matching the regular expression re, drawn
// from ev's seeded generator. Unbounded repetitions repeat at most two
// more times than their minimum; classes draw printable ASCII where they
// have any.
func (ev *interp) genRegex(re string) (string, error) {
	rx, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	ev.gen(&b, rx)
	return b.String(), nil
}

func (ev *interp) gen(b *strings.Builder, rx *syntax.Regexp) {
	repeat := func(lo, hi int) {
		if hi < 0 {
			hi = lo + 2
		}
		n := lo + ev.rng.IntN(hi-lo+1)
		for range n {
			ev.gen(b, rx.Sub[0])
		}
	}
	switch rx.Op {
	case syntax.OpLiteral:
		for _, r := range rx.Rune {
			if rx.Flags&syntax.FoldCase != 0 && ev.rng.IntN(2) == 0 {
				r = unicode.SimpleFold(r)
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		b.WriteRune(ev.classRune(rx.Rune))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789"[ev.rng.IntN(36)])
	case syntax.OpCapture:
		ev.gen(b, rx.Sub[0])
	case syntax.OpStar:
		repeat(0, 2)
	case syntax.OpPlus:
		repeat(1, 3)
	case syntax.OpQuest:
		repeat(0, 1)
	case syntax.OpRepeat:
		repeat(rx.Min, rx.Max)
	case syntax.OpConcat:
		for _, s := range rx.Sub {
			ev.gen(b, s)
		}
	case syntax.OpAlternate:
		ev.gen(b, rx.Sub[ev.rng.IntN(len(rx.Sub))])
	}
}

// classRune draws a rune from a class given as ranges, preferring
// printable ASCII.
func (ev *interp) classRune(ranges []rune) rune {
	var ascii []rune
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := max(ranges[i], 0x21); r <= min(ranges[i+1], 0x7e); r++ {
			ascii = append(ascii, r)
		}
	}
	if len(ascii) > 0 {
		return ascii[ev.rng.IntN(len(ascii))]
	}
	if len(ranges) == 0 {
		return 'x'
	}
	return ranges[0]
}
