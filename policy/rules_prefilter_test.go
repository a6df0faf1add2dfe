package policy

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

// describe words a prefilter's tests for the table below.
func describe(atoms []atom) []string {
	vars := []string{"action", "path", "risk", "tenant", "principal", "phase", "paths", "argv"}
	ops := []string{"==", "startsWith", "endsWith", "contains", "first ==", "glob"}
	out := []string{}
	for _, a := range atoms {
		s := vars[a.v] + " " + ops[a.op]
		if a.op == atomGlob {
			if a.dir != "" {
				s += " dir " + a.dir
			}
			if a.last.kind != segAny {
				s += " last " + a.last.text
			}
		} else {
			s += " " + a.lit
		}
		out = append(out, s)
	}
	return out
}

// TestPrefilterTests: which tests each form of condition gives, and
// which forms give none (nil: the rule is always evaluated).
func TestPrefilterTests(t *testing.T) {
	cases := []struct {
		when string
		want []string
	}{
		{`glob(path, "vendor/**/*.secret")`, []string{"path glob dir vendor last *.secret"}},
		{`glob(path, "**/*.pem")`, []string{"path glob last *.pem"}},
		{`glob(path, "**/.env*")`, []string{"path glob last .env*"}},
		{`glob(path, "**/id_rsa")`, []string{"path glob last id_rsa"}},
		{`glob(path, ".github/workflows/**")`, []string{"path glob dir .github"}},
		{`glob(path, "docs/README.md")`, []string{"path == docs/README.md"}},
		{`glob(path, "{a,b}/x.go")`, []string{"path == a/x.go", "path == b/x.go"}},
		{`glob(paths, ["*.pem", "deploy/**"])`, []string{"paths glob last *.pem", "paths glob dir deploy"}},
		{`glob(argv, "*.PEM")`, []string{"argv glob last *.PEM"}},
		{`path == "gen/x.go" || path.startsWith("build/")`, []string{"path == gen/x.go", "path startsWith build/"}},
		{`"main" == tenant`, []string{"tenant == main"}},
		{`action in ["a", "b"]`, []string{"action == a", "action == b"}},
		{`"--force" in argv`, []string{"argv == --force"}},
		{`argv.startsWith(["git", "push"])`, []string{"argv first == git"}},
		{`path.endsWith(".go") || principal.contains("bot")`, []string{"path endsWith .go", "principal contains bot"}},
		// Of a conjunction, the narrower side; a side with an index
		// (which may fail) is no matter, the other being false.
		{`tenant == "t" && glob(path, "**/*.{pem,key}")`, []string{"tenant == t"}},
		{`argv[1] == "push" && argv[0] == "git" && path == "x"`, []string{"path == x"}},
		// Never true, never failing: passed over whatever the action.
		{`false`, []string{}},
		{`path in []`, []string{}},
		{`false || action in []`, []string{}},
		// No test: globs without a literal part, negations, indexes,
		// sizes, one side of a disjunction unknown, a prefix of [].
		{`glob(path, "**")`, nil},
		{`glob(path, "*")`, nil},
		{`glob(path, "*/*")`, nil},
		{`glob(path, "?.go")`, nil},
		{`glob(path, "**/[!m]*.go")`, nil},
		{`glob(path, ["**/*.pem", "**"])`, nil},
		{`!glob(path, "a/**")`, nil},
		{`argv[0] == "git"`, nil},
		{`size(argv) > 2`, nil},
		{`path != "x"`, nil},
		{`path == "x" || argv[1] == "push"`, nil},
		{`argv.startsWith([])`, nil},
		{`true`, nil},
		{`path == action`, nil},
		{`input.x == 1 && path == "a"`, nil}, // not in Go: cel-go prices it
	}
	for _, c := range cases {
		s, err := CompileRules([]Rule{{ID: "r", When: c.when, Outcome: Deny}}, RulesOptions{})
		if err != nil {
			t.Fatalf("%s: %v", c.when, err)
		}
		r := s.rules[0]
		var got []string
		if r.preMax > 0 {
			got = describe(r.pre)
		}
		if (got == nil) != (c.want == nil) || !slices.Equal(got, c.want) {
			t.Errorf("%s: tests %q, want %q", c.when, got, c.want)
		}
	}
}

// TestPrefilterPassesOverOnlyWhatIsFalse: decisions where the index must
// and must not pass a rule over, with cases, literal prefixes and
// suffixes of several lengths, and a request too large for the cost
// bound to allow passing over.
func TestPrefilterPassesOverOnlyWhatIsFalse(t *testing.T) {
	rules := []Rule{
		{ID: "pem", When: `glob(path, "**/*.pem")`, Outcome: Deny},
		{ID: "PEM", When: `glob(path, "**/*.PEM")`, Outcome: Ask},
		{ID: "env", When: `glob(paths, ["**/.env*", "secrets/**"])`, Outcome: Deny},
		{ID: "build", When: `path.startsWith("build/") || path.startsWith("b/")`, Outcome: Deny},
		{ID: "tests", When: `path.endsWith("_test.go") && tenant == "acme"`, Outcome: Ask},
		{ID: "push", Actions: []string{"workspace_run_shell"}, When: `argv.startsWith(["git", "push"]) || "--force" in argv`, Outcome: Ask},
		{ID: "star", Actions: []string{"*"}, When: `path == "x"`, Outcome: Deny},
		{ID: "make", Actions: []string{"workspace_run_shell"}, When: `argv.startsWith(["make"])`, Outcome: Ask},
		{ID: "index", When: `argv[1] == "rm"`, Outcome: Ask, Actions: []string{"workspace_run_shell"}},
		{ID: "any", When: `glob(path, "**")`, Outcome: Ask, Actions: []string{"workspace_list_files"}},
		{ID: "dir", When: `glob(path, "Docs/**")`, Outcome: Deny},
		{ID: "rsa", When: `glob(path, "**/id_rsa")`, Outcome: Deny},
	}
	for i := range minIndexed { // enough rules for the index
		rules = append(rules, Rule{ID: "filler" + strconv.Itoa(i), When: `path == "filler"`, Outcome: Deny})
	}
	s, err := CompileRules(rules, RulesOptions{CostLimit: 2000})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.rules {
		if r.id != "index" && r.id != "any" && r.preMax == 0 {
			t.Fatalf("%s has no prefilter", r.id)
		}
	}
	long := strings.Repeat("d/", 8000) + "main.go"
	cases := []struct {
		a    action.Action
		want string
	}{
		{read("k.pem"), "deny pem"},
		{read("a/b/k.pem"), "deny pem"},
		{read("a/b/k.Pem"), "allow"},
		{read("a/K.PEM"), "ask PEM"},
		{read("x/.env.local"), "deny env"},
		{read("secrets"), "deny env"},
		{read("secrets/a/b"), "deny env"},
		{read("secretsx/a"), "allow"},
		{read("build/x"), "deny build"},
		{read("b/x"), "deny build"},
		{read("buil"), "allow"},
		{read("./build//x"), "deny build"}, // path is cleaned first
		{read("x_test.go"), "allow"},
		{action.Action{Name: "workspace_read_file", Tenant: "acme", Input: map[string]any{"path": "p/x_test.go"}}, "ask tests"},
		{shell("git push"), "ask push"},
		{shell("git status --force"), "ask push"},
		{shell("git status"), "allow"},
		{shell("rm"), "ask index"}, // argv[1] fails: an ask rule applies
		{shell("ls rm"), "ask index"},
		{action.Action{Name: "*", Input: map[string]any{"path": "x"}}, "deny star"},
		{read("x"), "allow"},
		{action.Action{Name: "workspace_list_files"}, "allow"},
		{action.Action{Name: "workspace_list_files", Input: map[string]any{"path": "src"}}, "ask any"},
		{read("Docs/a"), "deny dir"},
		{read("docs/a"), "allow"},
		{read("Docs"), "deny dir"},
		{read("id_rsa"), "deny rsa"},
		{read("home/.ssh/id_rsa"), "deny rsa"},
		{read("home/.ssh/id_rsa.pub"), "allow"},
		{read(long), "deny pem"}, // "**/*.pem" over it costs past 2000: fails closed
		{shell("make"), "ask make"},
		{shell("make all"), "ask make"},
	}
	unindexed, err := CompileRules(rules, RulesOptions{CostLimit: 2000})
	if err != nil {
		t.Fatal(err)
	}
	unindexed.prefilters = nil // each rule's own tests, as for a large request
	for _, set := range []*RuleSet{s, unindexed} {
		for _, c := range cases {
			if got := outcome(set.Decide(context.Background(), &Request{Action: c.a})); got != c.want {
				t.Errorf("%s %v (indexed %v): %s, want %s", c.a.Name, c.a.Input, set == s, got, c.want)
			}
		}
	}
}

// A literal that alone costs past the bound fails the condition whatever
// the action: the rule is never passed over.
func TestPrefilterKeepsALiteralsCost(t *testing.T) {
	when := `path.contains("` + strings.Repeat("x", 4000) + `")`
	s, err := CompileRules([]Rule{{ID: "long", When: when, Outcome: Deny}}, RulesOptions{CostLimit: 300})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.Decide(context.Background(), &Request{Action: read("a")}); d.Rule != "long" || !strings.Contains(d.Message, "cost bound") {
		t.Fatalf("%+v", d)
	}
}

func read(path string) action.Action {
	return action.Action{Name: "workspace_read_file", Input: map[string]any{"path": path}}
}

func shell(cmd string) action.Action {
	return action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": cmd}}
}

func outcome(d Decision) string {
	if d.Allowed() {
		return "allow"
	}
	return string(d.Outcome) + " " + d.Rule
}

// withoutPrefilters compiles rules with every rule evaluated.
func withoutPrefilters(t testing.TB, rules []Rule, opts RulesOptions) *RuleSet {
	t.Helper()
	s, err := CompileRules(rules, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s.rules {
		r.pre, r.preMax = nil, 0
	}
	s.prefilters = nil
	return s
}

// sameDecision decides req by both sets and reports a difference.
func sameDecision(a, b *RuleSet, req Request) (string, bool) {
	ra, rb := req, req
	da, db := a.Decide(context.Background(), &ra), b.Decide(context.Background(), &rb)
	ga := outcome(da) + " " + da.Message + " " + ra.Unredacted
	gb := outcome(db) + " " + db.Message + " " + rb.Unredacted
	return ga + " | without prefilters: " + gb, ga == gb
}

// TestPrefilterDecidesAsEveryRuleEvaluated: random sets of random rules
// (every form the prefilters know, action lists absent, named or "*",
// both modes, cost limits small enough for the size guard to matter)
// decide random actions as they do with every rule evaluated.
func TestPrefilterDecidesAsEveryRuleEvaluated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := condGen{r}
	actionLists := [][]string{nil, {"*"}, {"workspace_read_file"}, {"workspace_run_shell", "workspace_apply_patch"}}
	compared, passed := 0, 0
	for i := 0; i < 300; i++ {
		var rules []Rule
		for j := range 1 + r.IntN(3*minIndexed) {
			when := g.boolean(1 + r.IntN(3))
			if r.IntN(8) == 0 {
				when = `input.x == 1 || ` + when // cel-go
			}
			rules = append(rules, Rule{
				ID: "r" + strconv.Itoa(j), Actions: actionLists[r.IntN(len(actionLists))], When: when,
				Outcome: []Outcome{Allow, Ask, Deny}[r.IntN(3)], Unredacted: r.IntN(4) == 0,
			})
			if rules[j].Outcome == Deny {
				rules[j].Unredacted = false
			}
		}
		opts := RulesOptions{Mode: []RulesMode{FirstMatch, Strictest}[r.IntN(2)], CostLimit: []uint64{0, 40, 300, 5000}[r.IntN(4)]}
		with, err := CompileRules(rules, opts)
		if err != nil {
			t.Fatal(err)
		}
		without := withoutPrefilters(t, rules, opts)
		unindexed, err := CompileRules(rules, opts) // each rule's tests tried in turn
		if err != nil {
			t.Fatal(err)
		}
		unindexed.prefilters = nil
		for range 20 {
			req := randomRequest(r)
			if r.IntN(4) == 0 {
				req.Action.Name = "*"
			}
			if r.IntN(6) == 0 {
				req.Action.Input["path"] = strings.Repeat("a/", 50+r.IntN(500)) + "k.pem"
			}
			got, ok := sameDecision(with, without, *req)
			if got2, ok2 := sameDecision(unindexed, without, *req); !ok2 {
				got, ok = "without the index: "+got2, false
			}
			if !ok {
				var whens []string
				for _, rl := range rules {
					whens = append(whens, rl.ID+": "+rl.When)
				}
				t.Fatalf("%s %v (%s, cost limit %d):\n%s\n%s", req.Action.Name, req.Action.Input, opts.Mode, opts.CostLimit, got, strings.Join(whens, "\n"))
			}
			compared++
		}
		for _, rl := range with.rules {
			if rl.preMax > 0 {
				passed++
			}
		}
	}
	t.Logf("%d decisions compared, %d rules with a prefilter", compared, passed)
}

// TestPrefilterAgreesWithCEL: where a rule's prefilter passes it over,
// cel-go finds its condition false, without an error.
func TestPrefilterAgreesWithCEL(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	g := condGen{r}
	skipped := 0
	for i := 0; i < 2000; i++ {
		when := g.boolean(1 + r.IntN(3))
		limit := []uint64{30, 200, DefaultRuleCostLimit}[r.IntN(3)]
		s, err := CompileRules([]Rule{{ID: "r", When: when, Outcome: Deny}}, RulesOptions{CostLimit: limit})
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		c := s.rules[0]
		for range 10 {
			req := randomRequest(r)
			if r.IntN(5) == 0 {
				req.Action.Input["path"] = strings.Repeat("ab/", r.IntN(200)) + "k.pem"
			}
			// Passed over by the index, or by the rule's own tests (as
			// a request too large for the index is decided).
			v := &ruleVars{req: req, set: s}
			bits := []uint64{1}
			if s.prefilters != nil && v.size(s.sizeMask) <= s.prefilters.maxSize {
				bits[0] = 0
				s.prefilters.candidates(v, bits)
			}
			if bits[0]&1 != 0 && c.admits(v) {
				continue
			}
			skipped++
			out, _, err := c.prg.Eval(&ruleVars{req: req})
			if err != nil || out.Value() != false {
				t.Fatalf("%s (limit %d) on %s %v: passed over, but cel-go gives %v %v", when, limit, req.Action.Name, req.Action.Input, out, err)
			}
		}
	}
	if skipped == 0 {
		t.Fatal("no rule was passed over")
	}
	t.Logf("%d evaluations passed over", skipped)
}
