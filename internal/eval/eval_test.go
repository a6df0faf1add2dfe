package eval

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

// opts is the run every test shares: the binaries are built once.
var opts Options

func TestMain(m *testing.M) {
	ServeMCPIfAsked()
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "harness-eval-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if opts, err = NewOptions(ctx, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// TestEvaluation runs the table through the four entry points: every
// scenario that runs must give the same status, code and deciding step
// everywhere, and leave exactly the audit records its way of running
// implies. n/a and pending cells are skipped with their reason.
func TestEvaluation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := opts
	o.Dir = t.TempDir()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	rep.WriteTable(&table)
	t.Log("\n" + table.String())
	for _, row := range rep.Rows {
		t.Run(row.Scenario.Name, func(t *testing.T) {
			for _, c := range row.Cells {
				t.Run(string(c.Entry), func(t *testing.T) {
					switch {
					case c.Pending != "":
						t.Skip("pending: " + c.Pending)
					case c.NA != "":
						t.Skip("n/a: " + c.NA)
					}
					for _, p := range c.Problems {
						t.Error(p)
					}
				})
			}
		})
	}
}

// TestTableCoversTheGuard holds the table to its promise: a refusal by
// every step of the guard the configuration builds, and every built-in
// action run to success.
func TestTableCoversTheGuard(t *testing.T) {
	s, err := newSite(t.TempDir(), Main, opts.MCPServer, strings.Repeat("0", 64))
	if err != nil {
		t.Fatal(err)
	}
	p, err := openPipeline(context.Background(), opts, s)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	steps := map[string]bool{}
	succeeds := map[string]bool{}
	for _, sc := range Scenarios {
		if sc.Pending != "" {
			continue
		}
		steps[sc.Want.Step] = true
		if sc.Want.Status == action.StatusOK {
			succeeds[sc.Action] = true
		}
	}
	for _, step := range p.Harness.Guard().Checks() {
		if !steps[step] {
			t.Errorf("no scenario is refused by guard step %s", step)
		}
	}
	for _, sc := range p.Harness.Registry().List() {
		if !strings.HasPrefix(sc.Name, "mcp.") && !succeeds[sc.Name] {
			t.Errorf("no scenario runs %s to success", sc.Name)
		}
	}
}

func TestTableIsWellFormed(t *testing.T) {
	names := map[string]bool{}
	for _, sc := range Scenarios {
		if names[sc.Name] {
			t.Errorf("two scenarios are named %q", sc.Name)
		}
		names[sc.Name] = true
		if got := sc.Want.Code.Status(); got != sc.Want.Status {
			t.Errorf("%s: want %s, but the code table gives %s status %s", sc.Name, sc.Want, sc.Want.Code, got)
		}
		if _, err := inputOf(sc); err != nil {
			t.Error(err)
		}
		for e, why := range sc.NA {
			if !slices.Contains(Entries, e) || why == "" {
				t.Errorf("%s: n/a for %q needs a known entry point and a reason", sc.Name, e)
			}
		}
	}
}

// fakeDriver answers with a fixed answer after appending lines to the
// audit log, so that the checks of runCell can be tried on known faults.
type fakeDriver struct {
	ans   answer
	lines []string
}

func (f fakeDriver) run(_ context.Context, _ Scenario, s site) (answer, error) {
	fh, err := os.OpenFile(s.audit, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return answer{}, err
	}
	defer fh.Close()
	for _, l := range f.lines {
		fmt.Fprintln(fh, l)
	}
	return f.ans, nil
}

func (fakeDriver) close() error { return nil }

func event(id, typ string) string {
	return fmt.Sprintf(`{"seq":1,"event":{"event_type":%q,"payload":{"action_id":%q}}}`, typ, id)
}

func token(id, ev string) string {
	return fmt.Sprintf(`{"seq":1,"event":{"kind":"trusted_token","event":%q,"action_id":%q}}`, ev, id)
}

func TestRunCellFindsDifferences(t *testing.T) {
	want := refused(action.CodeTrustRequired, "trust_present")
	okDirect := []string{event("a1", "pre_action"), event("a1", "post_action")}
	tests := []struct {
		name    string
		ans     answer
		lines   []string
		problem string // "" when the cell must agree
	}{
		{"agrees", answer{Outcome: want, ActionID: "a1"}, okDirect, ""},
		{"other step", answer{Outcome: refused(action.CodeTrustRequired, "mcp_bridge"), ActionID: "a1"}, okDirect, "want blocked/trust_required@trust_present"},
		{"no step", answer{Outcome: refused(action.CodeTrustRequired, ""), ActionID: "a1"}, okDirect, "want blocked/trust_required@trust_present"},
		{"other code", answer{Outcome: refused(action.CodeInvalidInput, "trust_present"), ActionID: "a1"}, okDirect, "said blocked/invalid_input"},
		{"a record missing", answer{Outcome: want, ActionID: "a1"}, okDirect[:1], "audit records of a1: pre_action, want"},
		{"a record too many", answer{Outcome: want, ActionID: "a1"}, append(okDirect, event("a1", "error")), "audit records of a1"},
		{"a stray record", answer{Outcome: want, ActionID: "a1"}, append(okDirect, event("a2", "pre_action")), "naming another action"},
		{"no action_id", answer{Outcome: want}, okDirect, "names no action_id"},
		{"driver's own check", answer{Outcome: want, ActionID: "a1", Problems: []string{"exit 1 for status blocked"}}, okDirect, "exit 1"},
		{"refused preview is recorded", answer{Outcome: want, ActionID: "t1", Flow: previewRefused}, []string{event("t1", "pre_action"), event("t1", "post_action")}, ""},
		{"refused preview without its records", answer{Outcome: want, ActionID: "t1", Flow: previewRefused}, nil, "audit records of t1: none"},
		{"refused preview naming no action", answer{Outcome: want, Flow: previewRefused}, nil, "names no action_id"},
		{"token flow", answer{Outcome: want, ActionID: "t1", Flow: tokenFlow},
			[]string{token("t1", "minted"), event("t1", "pre_action"), event("t1", "post_action")}, ""},
		{"token flow without its token record", answer{Outcome: want, ActionID: "t1", Flow: tokenFlow}, okDirect, "audit records of t1: none, want trusted_token:minted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := site{dir: dir, audit: filepath.Join(dir, "audit.jsonl")}
			// Earlier records are not this action's.
			if err := os.WriteFile(s.audit, []byte(event("a0", "pre_action")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			c := runCell(context.Background(), fakeDriver{tc.ans, tc.lines}, Scenario{Name: "x", Want: want}, s, Cell{})
			got := strings.Join(c.Problems, "; ")
			if tc.problem == "" && got != "" || tc.problem != "" && !strings.Contains(got, tc.problem) {
				t.Errorf("problems %q, want one containing %q", got, tc.problem)
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	rep := Report{Entries: []Entry{Library, MCP}, Rows: []Row{
		{Scenario{Name: "read", Want: ok()}, []Cell{
			{Entry: Library, Got: ok(), Records: []string{"pre_action", "post_action"}},
			{Entry: MCP, NA: "no way"},
		}},
		{Scenario{Name: "refuse", Want: refused(action.CodeUnknownAction, "registered")}, []Cell{
			{Entry: Library, Got: refused(action.CodeUnknownAction, ""), Problems: []string{"said blocked/unknown_action, want blocked/unknown_action@registered"}},
			{Entry: MCP, Pending: "later"},
		}},
	}}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"ok [2]", "n/a (1)", "blocked/unknown_action [0] x", "pending (2)", "(1) no way", "(2) later",
		"refuse, library: said", "registered", "\n1 differences\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}
