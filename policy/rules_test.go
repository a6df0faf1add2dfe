package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

func compile(t *testing.T, mode policy.RulesMode, rules ...policy.Rule) *policy.RuleSet {
	t.Helper()
	s, err := policy.CompileRules(rules, policy.RulesOptions{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func read(path string) action.Action {
	return action.Action{Name: "workspace_read_file", Input: map[string]any{"path": path}}
}

func shell(cmd string) action.Action {
	return action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": cmd}}
}

func decide(s *policy.RuleSet, a action.Action) policy.Decision {
	return s.Decide(context.Background(), &policy.Request{Action: a})
}

// outcome words a decision as the table tests expect it: allow, or the
// outcome and rule id.
func outcome(d policy.Decision) string {
	if d.Allowed() {
		return "allow"
	}
	return string(d.Outcome) + " " + d.Rule
}

func TestRulesEveryOutcome(t *testing.T) {
	s := compile(t, "",
		policy.Rule{ID: "no-pem", Actions: []string{"workspace_read_file"}, When: `glob(path, "**/*.pem")`, Outcome: policy.Deny, Reason: "keys stay put"},
		policy.Rule{ID: "ask-push", Actions: []string{"workspace_run_shell"}, When: `argv.startsWith(["git", "push"])`, Outcome: policy.Ask, Reason: "a person pushes"},
		policy.Rule{ID: "docs-ok", When: `glob(path, "docs/**")`, Outcome: policy.Allow},
		policy.Rule{ID: "no-docs-secrets", When: `path.contains("secret")`, Outcome: policy.Deny},
	)
	cases := []struct {
		name string
		a    action.Action
		want string
	}{
		{"deny", read("deep/dir/key.pem"), "deny no-pem"},
		{"ask", shell("git push origin main"), "ask ask-push"},
		{"no rule matches", read("main.go"), "allow"},
		{"other words of the same command", shell("git status"), "allow"},
		{"a rule for other actions", shell("ls key.pem"), "allow"},
		{"allow ends the evaluation", read("docs/secret.md"), "allow"},
		{"a later rule decides when the allow does not match", read("src/secret.go"), "deny no-docs-secrets"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := outcome(decide(s, c.a)); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
	d := decide(s, read("a.pem"))
	if d.Code != action.CodeRuleDenied || d.Rule != "no-pem" || !strings.Contains(d.Message, "keys stay put") || !strings.Contains(d.Message, "no-pem") {
		t.Fatalf("deny: %+v", d)
	}
	d = decide(s, shell("git push"))
	if d.Outcome != policy.Ask || d.Code != action.CodeApprovalRequired || d.Rule != "ask-push" || !strings.Contains(d.Message, "a person pushes") {
		t.Fatalf("ask: %+v", d)
	}
}

func TestRulesFirstMatchFollowsTheFilesOrder(t *testing.T) {
	allow := policy.Rule{ID: "allow-all", Outcome: policy.Allow}
	ask := policy.Rule{ID: "ask-env", When: `glob(path, "**/.env*")`, Outcome: policy.Ask}
	deny := policy.Rule{ID: "deny-env", When: `glob(path, "**/.env*")`, Outcome: policy.Deny}
	cases := []struct {
		name  string
		rules []policy.Rule
		want  string
	}{
		{"allow first", []policy.Rule{allow, deny}, "allow"},
		{"deny first", []policy.Rule{deny, allow}, "deny deny-env"},
		{"ask before deny", []policy.Rule{ask, deny}, "ask ask-env"},
		{"deny before ask", []policy.Rule{deny, ask}, "deny deny-env"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := outcome(decide(compile(t, policy.FirstMatch, c.rules...), read(".env"))); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}

func TestRulesStrictestDenyBeatsAskBeatsAllow(t *testing.T) {
	allow := policy.Rule{ID: "allow-all", Outcome: policy.Allow}
	ask1 := policy.Rule{ID: "ask-1", When: `glob(path, "**/.env*")`, Outcome: policy.Ask}
	ask2 := policy.Rule{ID: "ask-2", When: `path == ".env"`, Outcome: policy.Ask}
	deny := policy.Rule{ID: "deny-env", When: `glob(path, "**/.env*")`, Outcome: policy.Deny}
	cases := []struct {
		name  string
		rules []policy.Rule
		want  string
	}{
		{"deny after allow and ask", []policy.Rule{allow, ask1, deny}, "deny deny-env"},
		{"ask after allow", []policy.Rule{allow, ask1}, "ask ask-1"},
		{"the first of equals", []policy.Rule{allow, ask2, ask1}, "ask ask-2"},
		{"allow alone", []policy.Rule{allow}, "allow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compile(t, policy.Strictest, c.rules...)
			if s.Mode() != policy.Strictest {
				t.Fatal(s.Mode())
			}
			if got := outcome(decide(s, read(".env"))); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
			if got := outcome(decide(s, read("main.go"))); got != "allow" {
				t.Fatalf("main.go: %s", got)
			}
		})
	}
}

// Rules for named actions and rules for every action keep their relative
// order, whichever action is decided.
func TestRulesForNamedAndEveryActionKeepTheirOrder(t *testing.T) {
	s := compile(t, "",
		policy.Rule{ID: "all-ask", When: `path == "x"`, Outcome: policy.Ask},
		policy.Rule{ID: "read-deny", Actions: []string{"workspace_read_file"}, When: `path == "x"`, Outcome: policy.Deny},
		policy.Rule{ID: "list-deny", Actions: []string{"workspace_list_files"}, When: `path == "y"`, Outcome: policy.Deny},
		policy.Rule{ID: "all-deny", When: `path == "y"`, Outcome: policy.Ask},
	)
	for _, c := range []struct {
		a    action.Action
		want string
	}{
		{read("x"), "ask all-ask"},
		{read("y"), "ask all-deny"},
		{action.Action{Name: "workspace_list_files", Input: map[string]any{"path": "y"}}, "deny list-deny"},
		{action.Action{Name: "echo", Input: map[string]any{"path": "x"}}, "ask all-ask"},
	} {
		if got := outcome(decide(s, c.a)); got != c.want {
			t.Errorf("%s %v: got %s, want %s", c.a.Name, c.a.Input, got, c.want)
		}
	}
}

// An ask is answered by the preview or approval it produced: redeeming
// it (the execute phase) is not asked again. A deny holds in every phase.
func TestRulesAskIsAnsweredInTheExecutePhase(t *testing.T) {
	s := compile(t, "",
		policy.Rule{ID: "ask-env", When: `glob(path, "**/.env*")`, Outcome: policy.Ask},
		policy.Rule{ID: "deny-pem", When: `glob(path, "**/*.pem")`, Outcome: policy.Deny},
	)
	for _, phase := range []policy.Phase{policy.PhaseDirect, policy.PhasePreview, policy.PhaseExecute} {
		d := s.Decide(context.Background(), &policy.Request{Action: read(".env"), Phase: phase})
		if want := phase != policy.PhaseExecute; (d.Outcome == policy.Ask) != want {
			t.Errorf("%s: %+v", phase, d)
		}
		if d := s.Decide(context.Background(), &policy.Request{Action: read("k.pem"), Phase: phase}); d.Code != action.CodeRuleDenied {
			t.Errorf("%s: deny %+v", phase, d)
		}
	}
}

// A condition that cannot be evaluated applies a deny or ask rule and
// never an allow rule.
func TestRulesFailClosed(t *testing.T) {
	cases := []struct {
		name, when string
	}{
		{"index past the end", `argv[0] == "git" && argv[1] == "push"`},
		{"missing key", `input.branch == "main"`},
		{"wrong type", `input.command > 3`},
		{"negated", `!(input.mode == "safe")`},
	}
	for _, c := range cases {
		for _, o := range []policy.Outcome{policy.Deny, policy.Ask, policy.Allow} {
			t.Run(c.name+"/"+string(o), func(t *testing.T) {
				s := compile(t, "",
					policy.Rule{ID: "r", Actions: []string{"workspace_run_shell"}, When: c.when, Outcome: o},
					policy.Rule{ID: "after", Outcome: policy.Deny},
				)
				d := decide(s, shell("git"))
				switch o {
				case policy.Allow: // not matched: the next rule decides
					if d.Rule != "after" {
						t.Fatalf("%+v", d)
					}
				default:
					if d.Rule != "r" || d.Outcome != o || !strings.Contains(d.Message, "could not be evaluated") {
						t.Fatalf("%+v", d)
					}
				}
			})
		}
	}
}

// A condition that would cost more than its bound stops at the bound and
// fails closed, for either evaluator.
func TestRulesCostBound(t *testing.T) {
	big := make([]any, 2000)
	for i := range big {
		big[i] = "x"
	}
	heavy := action.Action{Name: "echo", Input: map[string]any{"items": big, "path": strings.Repeat("a/", 20000) + "b"}}
	for _, when := range []string{
		`input.items.all(a, input.items.all(b, a == b)) && path == "never"`, // four million comparisons
		`glob(path, "**/a/**/a/**/a/**/c")`,                                 // priced by its lengths
	} {
		t.Run(when, func(t *testing.T) {
			s, err := policy.CompileRules([]policy.Rule{{ID: "heavy", When: when, Outcome: policy.Deny}}, policy.RulesOptions{CostLimit: 10_000})
			if err != nil {
				t.Fatal(err)
			}
			d := decide(s, heavy)
			if d.Rule != "heavy" || !strings.Contains(d.Message, "cost bound") {
				t.Fatalf("%+v", d)
			}
			if d := decide(s, action.Action{Name: "echo", Input: map[string]any{"items": []any{"x"}, "path": "a/b"}}); !d.Allowed() {
				t.Fatalf("a small input: %+v", d)
			}
		})
	}
}

func TestRulesVariables(t *testing.T) {
	reg := schema.Catalog()
	patch := "--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n@@ -1 +1 @@\n-a\n+b\n"
	envelope := "*** Begin Patch\n*** Update File: deploy/.env\n@@\n-a\n+b\n*** End Patch\n"
	cases := []struct {
		when string
		req  policy.Request
		want bool
	}{
		{`action == "workspace_read_file"`, policy.Request{Action: read("a")}, true},
		{`path == "a/b"`, policy.Request{Action: read("./a//b/")}, true},
		{`path == "a/b"`, policy.Request{Action: read("a/c/../b")}, true},
		{`path == ""`, policy.Request{Action: action.Action{Name: "workspace_list_files"}}, true},
		{`path == ""`, policy.Request{Action: read(".")}, true},
		{`glob(paths, ".github/workflows/**")`, policy.Request{Action: action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": patch}}}, true},
		{`glob(paths, "**/.env")`, policy.Request{Action: action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": envelope}}}, true},
		{`".github/workflows/ci.yml" in paths`, policy.Request{Action: action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": patch, "strip": 1.0}}}, true},
		{`".github/workflows/ci.yml" in paths`, policy.Request{Action: action.Action{Name: "workspace_apply_patch", Input: map[string]any{"patch": patch, "strip": 0.0}}}, false},
		{`paths == ["x.go"]`, policy.Request{Action: action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "x.go", "content": "y"}}}, true},
		{`argv == ["git", "log", "--oneline", "a b"]`, policy.Request{Action: shell(`git log --oneline "a b"`)}, true},
		{`argv == []`, policy.Request{Action: read("a")}, true},
		{`size(argv) == 0`, policy.Request{Action: action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "ls | sh"}}}, true},
		{`risk == "exec"`, policy.Request{Action: shell("ls"), Schema: mustLookup(t, reg, "workspace_run_shell")}, true},
		{`tenant == "acme" && principal == "alice"`, policy.Request{Action: action.Action{Name: "echo", Tenant: "acme"}, Principal: "alice"}, true},
		{`phase == "direct"`, policy.Request{Action: read("a")}, true},
		{`phase == "preview"`, policy.Request{Action: read("a"), Phase: policy.PhasePreview}, true},
		{`session.id == "s-1" && session.task == "t"`, policy.Request{Action: action.Action{Name: "echo", SessionID: "s-1", TaskID: "t"}}, true},
		{`input.recursive == true`, policy.Request{Action: action.Action{Name: "workspace_list_files", Input: map[string]any{"recursive": true}}}, true},
		{`has(input.recursive)`, policy.Request{Action: action.Action{Name: "workspace_list_files", Input: map[string]any{}}}, false},
		{`input.limit > 10`, policy.Request{Action: action.Action{Name: "echo", Input: map[string]any{"limit": 20.0}}}, true},
		{`path.lowerAscii().endsWith(".pem")`, policy.Request{Action: read("K.PEM")}, true},
	}
	for _, c := range cases {
		t.Run(c.when, func(t *testing.T) {
			s := compile(t, "", policy.Rule{ID: "r", When: c.when, Outcome: policy.Deny})
			req := c.req
			if got := !s.Decide(context.Background(), &req).Allowed(); got != c.want {
				t.Fatalf("matched %v, want %v", got, c.want)
			}
		})
	}
	s, err := policy.CompileRules([]policy.Rule{{ID: "busy", When: `session.errors > 3`, Outcome: policy.Deny}},
		policy.RulesOptions{Session: func(*policy.Request) map[string]any { return map[string]any{"errors": 5} }})
	if err != nil {
		t.Fatal(err)
	}
	if d := decide(s, read("a")); d.Rule != "busy" {
		t.Fatalf("session counters: %+v", d)
	}
}

func mustLookup(t *testing.T, r *schema.Registry, name string) *schema.ActionSchema {
	s, ok := r.Lookup(name)
	if !ok {
		t.Fatal(name)
	}
	return s
}

// Every problem of every rule is listed at once, each naming its rule;
// a rule whose examples contradict it is one of them.
func TestRulesProblemsAtStart(t *testing.T) {
	actions := map[string]string{"workspace_read_file": "read", "workspace_run_shell": "exec"}
	cases := []struct {
		name  string
		rule  policy.Rule
		field string
		why   string
	}{
		{"no id", policy.Rule{Outcome: policy.Deny}, "id", "is required"},
		{"bad id", policy.Rule{ID: "two words", Outcome: policy.Deny}, "id", "short name"},
		{"bad outcome", policy.Rule{ID: "r", Outcome: "block"}, "outcome", `"block" is not one of`},
		{"does not parse", policy.Rule{ID: "r", When: `path ==`, Outcome: policy.Deny}, "when", "column"},
		{"unknown variable", policy.Rule{ID: "r", When: `pth == "a"`, Outcome: policy.Deny}, "when", "did you mean 'path'"},
		{"not a condition", policy.Rule{ID: "r", When: `path`, Outcome: policy.Deny}, "when", "must be a condition"},
		{"bad glob", policy.Rule{ID: "r", When: `glob(path, "[a-")`, Outcome: policy.Deny}, "when", `glob pattern "[a-"`},
		{"glob from the root", policy.Rule{ID: "r", When: `glob(path, "/etc/**")`, Outcome: policy.Deny}, "when", "relative to the workspace root"},
		{"too long", policy.Rule{ID: "r", When: strings.Repeat("true && ", 600) + "true", Outcome: policy.Deny}, "when", "longer than"},
		{"empty action name", policy.Rule{ID: "r", Actions: []string{""}, Outcome: policy.Deny}, "actions[0]", "cannot be empty"},
		{"a match example that does not match", policy.Rule{ID: "wrong-glob", Actions: []string{"workspace_read_file"}, When: `glob(path, "*.pem")`, Outcome: policy.Deny,
			Match: []map[string]any{{"path": "a.pem"}, {"path": "deep/dir/key.pem"}}}, "examples.match[1]", "{path: deep/dir/key.pem} is an example the rule must match, but it does not"},
		{"a not_match example that matches", policy.Rule{ID: "too-wide", When: `glob(path, "**")`, Outcome: policy.Ask,
			NotMatch: []map[string]any{{"path": "main.go"}}}, "examples.not_match[0]", "must not match, but it does (as workspace_read_file"},
		{"an example the condition fails on", policy.Rule{ID: "needs-has", When: `input.command.startsWith("git")`, Outcome: policy.Deny,
			NotMatch: []map[string]any{{"path": "main.go"}}}, "examples.not_match[0]", "no such key: command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := policy.CompileRules([]policy.Rule{c.rule}, policy.RulesOptions{Actions: actions})
			var re *policy.RulesError
			if !errors.As(err, &re) {
				t.Fatalf("err = %v", err)
			}
			if len(re.Problems) != 1 {
				t.Fatalf("%d problems: %v", len(re.Problems), err)
			}
			p := re.Problems[0]
			if p.Field != c.field || !strings.Contains(p.Why, c.why) || p.ID != c.rule.ID {
				t.Fatalf("got %+v", p)
			}
			if c.rule.ID != "" && !strings.Contains(err.Error(), "rule "+c.rule.ID) {
				t.Fatalf("the message does not name the rule: %v", err)
			}
		})
	}
	// All at once, in the rules' order, and a repeated id.
	_, err := policy.CompileRules([]policy.Rule{
		{ID: "a", When: `pth == ""`, Outcome: policy.Deny},
		{ID: "b", When: `glob(path, "*.pem")`, Outcome: policy.Deny, Match: []map[string]any{{"path": "d/k.pem"}}},
		{ID: "a", Outcome: policy.Deny},
	}, policy.RulesOptions{Mode: "loosest"})
	var re *policy.RulesError
	if !errors.As(err, &re) || len(re.Problems) != 4 {
		t.Fatalf("%v", err)
	}
	for i, want := range []string{"mode", "a when", "b examples.match[0]", "a id"} {
		p := re.Problems[i]
		if got := strings.TrimPrefix(p.ID+" "+p.Field, "(all) "); got != want {
			t.Errorf("problem %d: %s (%+v)", i, got, p)
		}
	}
}

// The rules step, in the guard, holds for auto-approved and trusted
// actions alike and records its name and the rule.
func TestRulesStepInTheGuard(t *testing.T) {
	s := compile(t, "",
		policy.Rule{ID: "ask-main", Actions: []string{"workspace_read_file"}, When: `path == "main.go"`, Outcome: policy.Ask},
		policy.Rule{ID: "no-pem", When: `glob(path, "**/*.pem")`, Outcome: policy.Deny},
	)
	g := policy.NewGuard(schema.Catalog(), policy.Options{TrustedRuntime: true, AutoApprovedActions: []string{"workspace_read_file"}},
		policy.Steps{Validating: []policy.Step{s.Step()}})
	if c := g.Checks(); c[len(c)-2] != policy.StepRules {
		t.Fatalf("steps %v", c)
	}
	for _, c := range []struct {
		a       action.Action
		outcome policy.Outcome
		rule    string
	}{
		{read("main.go"), policy.Ask, "ask-main"},
		{func() action.Action { a := read("k.pem"); a.Trusted = true; return a }(), policy.Deny, "no-pem"},
		{read("other.go"), "", ""},
	} {
		d := g.Decide(context.Background(), &policy.Request{Action: c.a})
		if d.Outcome != c.outcome || d.Rule != c.rule || (c.rule != "" && d.Check != policy.StepRules) {
			t.Errorf("%v: %+v", c.a.Input, d)
		}
	}
	if info := g.Decide(context.Background(), &policy.Request{Action: read("main.go")}).Info(); info.Step != "rules" || info.Rule != "ask-main" || info.Outcome != "ask" {
		t.Fatalf("%+v", info)
	}
}

func TestRulesAnEmptySetDecidesNothing(t *testing.T) {
	s := compile(t, "")
	if s.Len() != 0 || !decide(s, read(".env")).Allowed() {
		t.Fatal("an empty set refused")
	}
}

// One RuleSet decides for every request at once (run with -race).
func TestRulesDecideConcurrently(t *testing.T) {
	s := compile(t, "",
		policy.Rule{ID: "fast", When: `glob(paths, ["**/.env*"])`, Outcome: policy.Ask},
		policy.Rule{ID: "cel", When: `input.items.exists(i, i == "x")`, Outcome: policy.Deny},
	)
	done := make(chan string)
	for g := range 8 {
		go func() {
			var bad string
			for i := range 200 {
				a := read(".env")
				want := "ask fast"
				if (g+i)%2 == 0 {
					a = action.Action{Name: "echo", Input: map[string]any{"items": []any{"y", "x"}}}
					want = "deny cel"
				}
				if got := outcome(decide(s, a)); got != want {
					bad = got + ", want " + want
				}
			}
			done <- bad
		}()
	}
	for range 8 {
		if bad := <-done; bad != "" {
			t.Fatal(bad)
		}
	}
}

// TestRulesRedactFalseMarksTheRequest: a rule with redact: false
// (Unredacted) that decides an action marks the request with its id, in
// first-match and strictest mode alike; a rule that matches but does not
// decide, or one whose condition failed, does not; a deny rule cannot
// carry it.
func TestRulesRedactFalseMarksTheRequest(t *testing.T) {
	fixtures := policy.Rule{ID: "fixtures-as-written", Actions: []string{"workspace_read_file"}, When: `glob(path, "testdata/**")`, Outcome: policy.Allow, Unredacted: true}
	askKeys := policy.Rule{ID: "ask-keys", When: `glob(path, "**/*.pem")`, Outcome: policy.Ask}
	askFixtures := policy.Rule{ID: "ask-fixture-env", When: `glob(path, "testdata/.env")`, Outcome: policy.Ask, Unredacted: true}
	failing := policy.Rule{ID: "failing", Actions: []string{"workspace_run_shell"}, When: `argv[5] == "x"`, Outcome: policy.Ask, Unredacted: true}
	cases := []struct {
		name  string
		mode  policy.RulesMode
		rules []policy.Rule
		a     action.Action
		phase policy.Phase
		want  string // the request's Unredacted
	}{
		{"the deciding allow rule", policy.FirstMatch, []policy.Rule{fixtures, askKeys}, read("testdata/sample.txt"), policy.PhaseDirect, "fixtures-as-written"},
		{"a rule that does not match", policy.FirstMatch, []policy.Rule{fixtures, askKeys}, read("src/main.go"), policy.PhaseDirect, ""},
		{"an earlier rule decides", policy.FirstMatch, []policy.Rule{askKeys, fixtures}, read("testdata/k.pem"), policy.PhaseDirect, ""},
		{"an ask answered at execute", policy.FirstMatch, []policy.Rule{askFixtures}, read("testdata/.env"), policy.PhaseExecute, "ask-fixture-env"},
		{"strictest: the stricter rule decides", policy.Strictest, []policy.Rule{fixtures, askKeys}, read("testdata/k.pem"), policy.PhaseDirect, ""},
		{"strictest: the only matching rule", policy.Strictest, []policy.Rule{fixtures, askKeys}, read("testdata/a.txt"), policy.PhaseDirect, "fixtures-as-written"},
		{"a condition that failed", policy.FirstMatch, []policy.Rule{failing}, shell("ls"), policy.PhaseExecute, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compile(t, c.mode, c.rules...)
			req := &policy.Request{Action: c.a, Phase: c.phase}
			s.Decide(context.Background(), req)
			if req.Unredacted != c.want {
				t.Fatalf("Unredacted = %q, want %q", req.Unredacted, c.want)
			}
		})
	}
	_, err := policy.CompileRules([]policy.Rule{{ID: "deny-unredacted", Outcome: policy.Deny, Unredacted: true}}, policy.RulesOptions{})
	var re *policy.RulesError
	if !errors.As(err, &re) || len(re.Problems) != 1 || re.Problems[0].Field != "redact" || re.Problems[0].ID != "deny-unredacted" {
		t.Fatalf("a deny rule with redact: false: %v", err)
	}
}
