package policy

import (
	"math/rand/v2"
	"strings"
	"testing"

	"cel.dev/cel-go/cel"
	"google.golang.org/protobuf/proto"
)

// celParsed is CEL's own parse of text, as a message, or nil when CEL's
// parser refuses it.
func celParsed(t *testing.T, e *ruleEnv, text string) proto.Message {
	t.Helper()
	a, iss := e.env.Parse(text)
	if iss != nil && iss.Err() != nil {
		return nil
	}
	pe, err := cel.AstToParsedExpr(a)
	if err != nil {
		t.Fatal(err)
	}
	return pe
}

func simpleParsed(t *testing.T, text string) proto.Message {
	t.Helper()
	a, ok := parseSimple(text)
	if !ok {
		return nil
	}
	pe, err := cel.AstToParsedExpr(a)
	if err != nil {
		t.Fatal(err)
	}
	return pe
}

func TestParseSimple(t *testing.T) {
	e, err := newRuleEnv(&RuleSet{globs: map[string]globPattern{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{
		`glob(paths, ["**/.env*", "**/*.pem"])`,
		`glob(argv, ['**/.npmrc'])`,
		`  glob ( path ,[ "a" , 'b',"c/**" ] )  `,
		`glob(_x9, ["{a,b}/**"])`,
		`glob(input, ["a"])`, // parses; the checker refuses it
	} {
		want := celParsed(t, e, text)
		if want == nil {
			t.Fatalf("CEL's parser refuses %q", text)
		}
		got := simpleParsed(t, text)
		if got == nil {
			t.Errorf("parseSimple declines %q", text)
		} else if !proto.Equal(got, want) {
			t.Errorf("parseSimple(%q) =\n%v\nCEL's parser:\n%v", text, got, want)
		}
	}
	for _, text := range []string{
		``, `glob`, `glob(paths)`, `glob(paths, "a")`, `glob(paths, [])`, `glob(paths, ["a",])`,
		`glob(paths, [""])`, `glob(paths, ["""a"""])`, `glob(paths, ['a''b'])`, `glob(paths, ["a\n"])`,
		`glob(paths, ["a"]) || true`, `glob(paths, ["a"]) // comment`, "glob(paths,\n[\"a\"])", "glob(paths,\t[\"a\"])",
		`glob(paths, [r"a"])`, `glob(paths, ["é"])`, `glob(a.b, ["a"])`, `glob(in, ["a"])`, `glob(true, ["a"])`,
		`glob(while, ["a"])`, `glob(9a, ["a"])`, `globs(paths, ["a"])`, `matches(paths, ["a"])`, `glob(paths, ["a"]`,
		`glob(paths, ["a"]))`, `glob(paths, ["a", b])`, `glob(paths, [["a"]])`, `glob(paths, ["a"], ["b"])`,
	} {
		if got := simpleParsed(t, text); got != nil {
			t.Errorf("parseSimple takes %q, which it should leave to CEL's parser", text)
		}
	}
}

// Conditions of the shape parseSimple takes are checked without CEL's
// parser, to the tree the parser gives; one whose tree does not check,
// and any other condition, go through the parser, for its messages.
func TestCheckParsesSimpleConditionsItself(t *testing.T) {
	parsed := 0
	defer func(prev func(*cel.Env, string) (*cel.Ast, *cel.Issues)) { compileWithParser = prev }(compileWithParser)
	compileWithParser = func(env *cel.Env, text string) (*cel.Ast, *cel.Issues) {
		parsed++
		return env.Compile(text)
	}
	e, err := newRuleEnv(&RuleSet{globs: map[string]globPattern{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{`glob(paths, ["**/.env*", "deploy/**"])`, `glob(path, ["**/*.pem"])`, `glob(argv, ['**/.npmrc'])`} {
		got, iss := e.check(when)
		if iss != nil && iss.Err() != nil {
			t.Fatalf("%s: %v", when, iss.Err())
		}
		want, iss := e.env.Compile(when)
		if iss != nil && iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		gotTree, err := cel.AstToCheckedExpr(got)
		if err != nil {
			t.Fatal(err)
		}
		wantTree, _ := cel.AstToCheckedExpr(want)
		if !proto.Equal(gotTree, wantTree) {
			t.Errorf("%s: checked tree\n%v\nthrough CEL's parser:\n%v", when, gotTree, wantTree)
		}
	}
	if parsed != 0 {
		t.Errorf("CEL's parser ran %d times for conditions parseSimple takes", parsed)
	}

	_, err = CompileRules([]Rule{{ID: "r", When: `glob(input, ["a"])`, Outcome: Ask}}, RulesOptions{})
	if err == nil || !strings.Contains(err.Error(), "column 5: found no matching overload for 'glob'") {
		t.Errorf("a simple condition that does not check: %v, want CEL's message with its column", err)
	}
	if parsed != 1 {
		t.Errorf("CEL's parser ran %d times for a simple condition that does not check, want 1", parsed)
	}
	if _, err := CompileRules([]Rule{{ID: "r", When: `path == "a"`, Outcome: Ask}}, RulesOptions{}); err != nil {
		t.Fatal(err)
	}
	if parsed != 2 {
		t.Errorf("CEL's parser ran %d times in all, want 2 (once for a condition of another shape)", parsed)
	}
}

// Generated conditions near the shape parseSimple takes (spaces, quotes,
// names, pattern characters, a stray quote, backslash or comma): what it
// takes, CEL's parser reads as the same tree; and it takes most of them.
func TestParseSimpleOnGeneratedConditions(t *testing.T) {
	e, err := newRuleEnv(&RuleSet{globs: map[string]globPattern{}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	sp := func() string { return strings.Repeat(" ", r.IntN(3)) }
	const patternChars = "abcXYZ09_-./*?{},[]!@#$%^&()+=:;<>|~` "
	taken := 0
	const n = 3000
	for range n {
		var b strings.Builder
		b.WriteString(sp() + pick("glob", "glob", "glob", "globs", "Glob") + sp() + "(" + sp())
		b.WriteString(pick("paths", "argv", "path", "_x", "in", "null", "while", "a1", "input") + sp() + "," + sp() + "[")
		for i := range 1 + r.IntN(4) {
			if i > 0 {
				b.WriteString(sp() + "," + sp())
			}
			q := pick(`"`, `'`)
			b.WriteString(q)
			for range 1 + r.IntN(8) {
				b.WriteByte(patternChars[r.IntN(len(patternChars))])
			}
			if r.IntN(40) == 0 {
				b.WriteString(pick(`"`, `'`, `\`, "\n"))
			}
			b.WriteString(q)
		}
		if r.IntN(40) == 0 {
			b.WriteString(",")
		}
		b.WriteString(sp() + "]" + sp() + ")" + sp())
		text := b.String()
		got := simpleParsed(t, text)
		if got == nil {
			continue
		}
		taken++
		want := celParsed(t, e, text)
		if want == nil {
			t.Fatalf("parseSimple takes %q, which CEL's parser refuses", text)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("parseSimple(%q) =\n%v\nCEL's parser:\n%v", text, got, want)
		}
	}
	if taken < n/3 {
		t.Errorf("parseSimple took %d of %d generated conditions, want at least a third", taken, n)
	}
}

// FuzzParseSimple: whatever parseSimple takes, CEL's parser takes too
// and reads as the same tree, ids and positions included.
func FuzzParseSimple(f *testing.F) {
	f.Add(`glob(paths, ["**/.env*", "**/*.pem"])`)
	f.Add(`glob ( argv ,['a',"b"] ) `)
	f.Add(`glob(paths, ["a" ])`)
	f.Add(`glob(path,["a\"b"])`)
	f.Add(`glob(paths, ['it''s'])`)
	e, err := newRuleEnv(&RuleSet{globs: map[string]globPattern{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > maxConditionBytes {
			return
		}
		got := simpleParsed(t, text)
		if got == nil {
			return
		}
		want := celParsed(t, e, text)
		if want == nil {
			t.Fatalf("parseSimple takes %q, which CEL's parser refuses", text)
		}
		if !proto.Equal(got, want) {
			t.Fatalf("parseSimple(%q) =\n%v\nCEL's parser:\n%v", text, got, want)
		}
	})
}
