package policy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cel.dev/cel-go/common/types"

	"github.com/harness-runtime/harness/action"
)

// condGen writes random conditions made only of the forms the Go
// evaluator knows, so that both evaluators can be compared on them.
type condGen struct{ r *rand.Rand }

var (
	genStrings  = []string{`""`, `"git"`, `"push"`, `".env"`, `"a/b.pem"`, `"workspace_read_file"`, `"read"`, `"acme"`, `"é"`, `"main.go"`, `"-f"`, `"a/"`, `"deep/"`, `".pem"`}
	genPatterns = []string{`"**/.env*"`, `"*.pem"`, `"**/*.pem"`, `"a/**"`, `"{a,b}/*"`, `"**"`, `"?.go"`, `"[!m]*.go"`, `".github/workflows/**"`, `"**/*.PEM"`, `"*"`, `"**/id_rsa*"`, `"a/*.go"`, `"deep/**/k.pem"`, `"**/k.pem"`}
)

func (g condGen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g condGen) boolean(depth int) string {
	if depth <= 0 {
		return g.pick([]string{"true", "false", g.str(0) + " == " + g.str(0), "glob(path, " + g.pick(genPatterns) + ")"})
	}
	d := depth - 1
	switch g.r.IntN(13) {
	case 0:
		return "(" + g.boolean(d) + " && " + g.boolean(d) + ")"
	case 1:
		return "(" + g.boolean(d) + " || " + g.boolean(d) + ")"
	case 2:
		return "!" + "(" + g.boolean(d) + ")"
	case 3:
		return g.str(d) + " == " + g.str(d)
	case 4:
		return g.str(d) + " != " + g.str(d)
	case 5:
		return g.integer(d) + g.pick([]string{" < ", " <= ", " > ", " >= ", " == ", " != "}) + g.integer(d)
	case 6:
		return g.str(d) + " in " + g.list(d)
	case 7:
		names := g.pick([]string{"path", "paths", "argv", g.str(d), g.list(d)})
		pats := g.pick(genPatterns)
		if g.r.IntN(2) == 0 {
			pats = "[" + g.pick(genPatterns) + ", " + g.pick(genPatterns) + "]"
		}
		return "glob(" + names + ", " + pats + ")"
	case 8:
		return g.str(d) + "." + g.pick([]string{"startsWith", "endsWith", "contains"}) + "(" + g.str(d) + ")"
	case 9:
		return g.list(d) + ".startsWith(" + g.list(d) + ")"
	case 10:
		return "(" + g.boolean(d) + ") == (" + g.boolean(d) + ")"
	}
	return g.boolean(0)
}

func (g condGen) str(depth int) string {
	switch g.r.IntN(4) {
	case 0:
		return g.pick(genStrings)
	case 1:
		return g.pick([]string{"action", "path", "risk", "tenant", "principal", "phase"})
	case 2:
		if depth > 0 {
			return g.pick([]string{"paths", "argv"}) + "[" + g.integer(depth-1) + "]"
		}
	}
	return g.pick([]string{"path", "action", `"git"`})
}

func (g condGen) list(int) string {
	switch g.r.IntN(4) {
	case 0:
		return "paths"
	case 1:
		return "argv"
	case 2:
		return "[]"
	}
	return "[" + g.pick(genStrings) + ", " + g.pick(genStrings) + "]"
}

func (g condGen) integer(depth int) string {
	switch g.r.IntN(5) {
	case 0, 1:
		return strconv.Itoa(g.r.IntN(5) - 1)
	case 2:
		return "size(" + g.list(depth) + ")"
	case 3:
		return g.list(depth) + ".size()"
	}
	return "size(" + g.str(0) + ")"
}

func randomRequest(r *rand.Rand) *Request {
	paths := []string{"", ".env", "a/b.pem", "main.go", "a/x", "deep/dir/k.pem", "b/é.go", "x.go", "A/K.PEM", "./a//x.go", "id_rsa.pub", "deep"}
	cmds := []string{"git push origin", "git", "ls -f", "go test ./...", "", "ls | sh"}
	var a action.Action
	switch r.IntN(3) {
	case 0:
		a = action.Action{Name: "workspace_read_file", Input: map[string]any{"path": paths[r.IntN(len(paths))]}}
	case 1:
		a = action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": cmds[r.IntN(len(cmds))]}}
	default:
		a = action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": "--- a/.env\n+++ b/.env\n@@ -1 +1 @@\n-a\n+b\n"}}
	}
	a.Tenant = []string{"", "acme"}[r.IntN(2)]
	return &Request{Action: a, Principal: []string{"", "git"}[r.IntN(2)], Phase: []Phase{"", PhasePreview}[r.IntN(2)]}
}

// evalBoth evaluates one compiled rule both ways.
func evalBoth(t *testing.T, c *compiledRule, req *Request) (fastV bool, fastErr error, celV bool, celErr error) {
	t.Helper()
	v := &ruleVars{req: req, set: nil}
	x := &fastCtx{v: v, limit: c.limit}
	fastV, fastErr = c.fast(x)
	out, _, err := c.prg.Eval(&ruleVars{req: req})
	if err != nil {
		return fastV, fastErr, false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return fastV, fastErr, false, errors.New("not a bool")
	}
	return fastV, fastErr, bool(b), nil
}

// The Go evaluator gives what cel-go gives, value or failure, on random
// conditions of its forms and random actions.
func TestFastEvaluatorAgreesWithCEL(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	g := condGen{r}
	compared := 0
	for i := 0; i < 1000; i++ {
		when := g.boolean(1 + r.IntN(3))
		s, err := CompileRules([]Rule{{ID: "r", When: when, Outcome: Deny}}, RulesOptions{CostLimit: 1 << 40})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		c := s.rules[0]
		if c.fast == nil {
			t.Fatalf("%s: not compiled to Go", when)
		}
		for j := 0; j < 10; j++ {
			req := randomRequest(r)
			fv, ferr, cv, cerr := evalBoth(t, c, req)
			if (ferr != nil) != (cerr != nil) || (ferr == nil && fv != cv) {
				t.Fatalf("%s on %s %v: Go %v %v, cel-go %v %v", when, req.Action.Name, req.Action.Input, fv, ferr, cv, cerr)
			}
			compared++
		}
	}
	t.Logf("%d evaluations compared", compared)
}

// Conditions with forms the Go evaluator does not know run in cel-go.
func TestFastEvaluatorLeavesTheRestToCEL(t *testing.T) {
	for _, when := range []string{
		`input.x == 1`, `paths.exists(p, p == "a")`, `session.id == ""`, `path.matches("^a")`,
		`path + "x" == "ax"`, `size(argv) - 1 > 0`, `path.lowerAscii() == "a"`, `1.0 < 2.0`,
	} {
		s, err := CompileRules([]Rule{{ID: "r", When: when, Outcome: Deny}}, RulesOptions{})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if s.rules[0].fast != nil {
			t.Errorf("%s was compiled to Go", when)
		}
	}
}

// FuzzRuleCondition: whatever a condition says and whatever the action
// holds, deciding never panics and never works past the cost bound: an
// evaluation either finishes within it or stops with the cost error. The
// rule's prefilter never changes the decision.
func FuzzRuleCondition(f *testing.F) {
	f.Add(`glob(path, "**/.env*")`, ".env", "git push")
	f.Add(`argv[0] == "git" && argv[1] == "push"`, "a", "git")
	f.Add(`input.path.split("/").all(a, input.path.split("/").all(b, a == b))`, strings.Repeat("a/", 300), "ls")
	f.Add(`[1,2,3].map(x, [1,2,3].map(y, x * y)).size() > 0`, "", "")
	f.Add(`path.matches("(a+)+$")`, strings.Repeat("a", 100)+"!", "")
	f.Add(`glob(argv, ["**/*.pem", "{a,b}/**"])`, "x", "ls a/k.pem")
	f.Add(`path.startsWith("build/") || glob(paths, ["**/.env*", "deploy/**"])`, "deploy", "")
	f.Add(`tenant == "" && "-f" in argv && path.endsWith(".PEM")`, "a/K.PEM", "rm -f x")
	const limit = 5_000
	f.Fuzz(func(t *testing.T, when, path, command string) {
		if len(when) > maxConditionBytes || len(path) > 1<<16 || len(command) > 1<<16 {
			return
		}
		s, err := CompileRules([]Rule{{ID: "r", When: when, Outcome: Deny}}, RulesOptions{CostLimit: limit})
		if err != nil {
			return
		}
		c := s.rules[0]
		plain := withoutPrefilters(t, []Rule{{ID: "r", When: when, Outcome: Deny}}, RulesOptions{CostLimit: limit})
		for _, a := range []action.Action{
			{Name: "workspace_read_file", Input: map[string]any{"path": path}},
			{Name: "workspace_run_shell", Input: map[string]any{"command": command, "path": path}},
		} {
			if got, ok := sameDecision(s, plain, Request{Action: a}); !ok {
				t.Fatalf("with the prefilter: %s", got)
			}
			req := &Request{Action: a}
			d := s.Decide(context.Background(), req) // must not panic
			if !d.Allowed() && d.Rule != "r" {
				t.Fatalf("decided by %q", d.Rule)
			}
			v := &ruleVars{req: req}
			if c.fast != nil {
				x := &fastCtx{v: v, limit: limit}
				if _, err := c.fast(x); err == nil && x.cost > limit {
					t.Fatalf("Go evaluator: cost %d past %d without failing", x.cost, limit)
				}
				continue
			}
			_, det, err := c.prg.Eval(v)
			if det == nil || det.ActualCost() == nil {
				t.Fatal("no cost tracked")
			}
			if err == nil && *det.ActualCost() > limit {
				t.Fatalf("cel-go: cost %d past %d without failing", *det.ActualCost(), limit)
			}
		}
	})
}

// benchRules are 200 rules of the usual shapes, none of which matches the
// benchmark's action, so that every one is evaluated.
func benchRules() []Rule {
	var rules []Rule
	for i := range 200 {
		var when string
		switch i % 5 {
		case 0:
			when = fmt.Sprintf(`glob(path, "vendor%d/**/*.secret")`, i)
		case 1:
			when = fmt.Sprintf(`glob(paths, ["**/cert%d.pem", "**/.env%d*", "deploy%d/**"])`, i, i, i)
		case 2:
			when = fmt.Sprintf(`path == "gen/%d.go" || path.startsWith("build%d/")`, i, i)
		case 3:
			when = fmt.Sprintf(`argv.startsWith(["tool%d", "push"]) || "--force%d" in argv`, i, i)
		case 4:
			when = fmt.Sprintf(`tenant == "t%d" && glob(path, "**/*.{pem%d,key%d}")`, i, i, i)
		}
		rules = append(rules, Rule{ID: "r" + strconv.Itoa(i), When: when, Outcome: []Outcome{Deny, Ask}[i%2]})
	}
	return rules
}

// BenchmarkRules200: one decision over 200 rules that all apply to the
// action and none matches (the target is 5 µs).
func BenchmarkRules200(b *testing.B) {
	s, err := CompileRules(benchRules(), RulesOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range s.rules {
		if r.fast == nil {
			b.Fatalf("%s runs in cel-go", r.id)
		}
	}
	benchDecide(b, s)
}

// BenchmarkRules200CEL is the same decision with every condition run by
// cel-go's interpreter, for comparison (conditions outside the Go
// evaluator's forms cost this much).
func BenchmarkRules200CEL(b *testing.B) {
	s, err := CompileRules(benchRules(), RulesOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range s.rules {
		r.fast = nil
	}
	benchDecide(b, s)
}

func benchDecide(b *testing.B, s *RuleSet) {
	req := &Request{Action: action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "src/pkg/main.go"}, Tenant: "acme"}}
	if d := s.Decide(context.Background(), req); !d.Allowed() {
		b.Fatalf("%+v", d)
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		s.Decide(context.Background(), req)
	}
	// The machine is often shared: the process's own CPU time per
	// decision says what the rules cost when the wall clock is crowded.
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
