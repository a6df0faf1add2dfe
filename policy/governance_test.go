package policy_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
)

// counterStores are the stores every governance test runs against: the
// rules are written twice (Go and Lua), so one table holds both to them.
func counterStores(t *testing.T) map[string]func(t *testing.T) policy.CounterStore {
	return map[string]func(t *testing.T) policy.CounterStore{
		"memory": func(*testing.T) policy.CounterStore { return policy.NewMemoryCounters() },
		"redis": func(t *testing.T) policy.CounterStore {
			return policy.NewRedisCounters(testkit.Redis(t), redisPrefix(t))
		},
	}
}

// redisPrefix is a prefix of keys of the test's own, deleted when it ends.
func redisPrefix(t *testing.T) string {
	var b [6]byte
	rand.Read(b[:])
	prefix := "harness:gov:test:" + hex.EncodeToString(b[:]) + ":"
	c := testkit.Redis(t)
	t.Cleanup(func() {
		ctx := context.Background()
		keys, _ := c.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			c.Del(ctx, keys...)
		}
	})
	return prefix
}

// rig drives a guard with the governance step as the dispatcher does:
// decide, answer with a scripted result, and let the governor count it.
type rig struct {
	t     *testing.T
	gov   *policy.Governor
	guard *policy.Guard
}

func newRig(t *testing.T, store policy.CounterStore, opts policy.GovernanceOptions) *rig {
	t.Helper()
	opts.Store = store
	gov, err := policy.NewGovernor(opts)
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	g := policy.NewGuard(schema.Catalog(), policy.Options{TrustedRuntime: true}, policy.Steps{Validating: []policy.Step{gov.Step()}})
	return &rig{t: t, gov: gov, guard: g}
}

// scripted is what the runtime answers: result is: "ok", "fail:<message>" (status
// error) or "exit:<stderr>" (a command that exited 1).
func scripted(a action.Action, d policy.Decision, result string) action.Observation {
	if !d.Allowed() {
		return action.Observation{Source: action.SourcePolicy, Status: d.Code.Status(), Code: d.Code, Message: d.Message}
	}
	obs := action.Observation{Source: action.SourceWorkspace, Status: action.StatusOK}
	switch {
	case strings.HasPrefix(result, "fail:"):
		obs.Status, obs.Code, obs.Message = action.StatusError, action.CodeNotFound, strings.TrimPrefix(result, "fail:")
	case strings.HasPrefix(result, "exit:"):
		obs.Payload = map[string]any{"exit_code": 1, "stderr": strings.TrimPrefix(result, "exit:"), "duration_ms": 3.5}
	case strings.HasPrefix(result, "blocked:"):
		obs.Status, obs.Code = action.StatusBlocked, action.CodeCommandNotAllowed
	}
	return obs
}

func (r *rig) do(a action.Action, phase policy.Phase, result string) (policy.Decision, *policy.Request) {
	req := &policy.Request{Action: a, Principal: "agent", Phase: phase}
	d := r.guard.Decide(context.Background(), req)
	if phase != policy.PhasePreview {
		obs := scripted(a, d, result)
		r.gov.Observe(context.Background(), req, &obs)
	}
	return d, req
}

func govRun(cmd string) action.Action {
	return action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": cmd}, SessionID: "s", Trusted: true}
}

func govRead(path string) action.Action {
	return action.Action{Name: "workspace_read_file", Input: map[string]any{"path": path}, SessionID: "s", Trusted: true}
}

func govWrite(path, content string) action.Action {
	return action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": path, "content": content}, SessionID: "s", Trusted: true}
}

// govStep is one action of a scripted session and what the guard must say.
type govStep struct {
	a      action.Action
	result string // see observe; "" is ok
	phase  policy.Phase
	sleep  time.Duration
	code   action.Code
	limit  string
}

func TestGovernanceHalts(t *testing.T) {
	lim := func(f func(l *policy.Limits)) policy.Limits {
		var l policy.Limits
		f(&l)
		return l
	}
	inTenant := func(a action.Action, tenant, session string) action.Action {
		a.Tenant, a.SessionID = tenant, session
		return a
	}
	cases := []struct {
		name    string
		limits  policy.Limits
		tenants map[string]policy.Limits
		steps   []govStep
	}{
		{"max-actions", lim(func(l *policy.Limits) { l.MaxActions = 2 }), nil, []govStep{
			{a: govRead("a")}, {a: govRun("ls")},
			{a: govRead("b"), code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
			{a: govRun("pwd"), code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
		}},
		{"max-risk counts each action's weight", lim(func(l *policy.Limits) { l.MaxRisk = 12 }), nil, []govStep{
			{a: govRead("a")}, {a: govRun("ls")}, // 1 + 10
			{a: govWrite("x", "y"), code: action.CodeBudgetExhausted, limit: policy.BudgetRisk}, // +5 > 12
			{a: govRead("b")}, // 12 fits
			{a: govRead("c"), code: action.CodeBudgetExhausted, limit: policy.BudgetRisk},
		}},
		{"configured weights", lim(func(l *policy.Limits) { l.MaxRisk = 3; l.RiskWeights = map[string]int64{"read": 0, "exec": 2} }), nil, []govStep{
			{a: govRead("a")}, {a: govRead("b")}, {a: govRun("ls")}, {a: govRead("c")},
			{a: govRun("pwd"), code: action.CodeBudgetExhausted, limit: policy.BudgetRisk},
		}},
		{"max-errors", lim(func(l *policy.Limits) { l.MaxErrors = 2 }), nil, []govStep{
			{a: govRead("a"), result: "fail:no a"}, {a: govRead("b")}, {a: govRun("ls x"), result: "exit:no x"},
			{a: govRead("c"), code: action.CodeBudgetExhausted, limit: policy.BudgetErrors},
		}},
		{"max-consecutive-errors resets on success", lim(func(l *policy.Limits) { l.MaxConsecutiveErrors = 2 }), nil, []govStep{
			{a: govRead("a"), result: "fail:x"}, {a: govRead("b")}, {a: govRead("c"), result: "fail:y"}, {a: govRead("d"), result: "fail:z"},
			{a: govRead("e"), code: action.CodeBudgetExhausted, limit: policy.BudgetConsecutiveErrors},
		}},
		{"max-wall-seconds", lim(func(l *policy.Limits) { l.MaxWall = 100 * time.Millisecond }), nil, []govStep{
			{a: govRead("a")}, {a: govRead("b")},
			{a: govRead("c"), sleep: 150 * time.Millisecond, code: action.CodeBudgetExhausted, limit: policy.BudgetWall},
		}},
		{"max-bytes-written", lim(func(l *policy.Limits) { l.MaxBytesWritten = 10 }), nil, []govStep{
			{a: govWrite("a", "12345678")}, {a: govWrite("b", "12345")}, // 13 >= 10
			{a: govRead("c"), code: action.CodeBudgetExhausted, limit: policy.BudgetBytesWritten},
		}},
		{"repeat-failing", lim(func(l *policy.Limits) { l.RepeatFailing = 3 }), nil, []govStep{
			{a: govRun("ls x"), result: "exit:no x"}, {a: govRead("a")}, {a: govRun("ls x"), result: "exit:no x"}, {a: govRun("ls x"), result: "exit:no x"},
			{a: govRun("ls x"), code: action.CodeRepeatedAction, limit: policy.RepeatFailing},
			{a: govRun("ls y"), result: "exit:no y"}, // another action still runs
		}},
		{"repeat-failing counts the same failure only", lim(func(l *policy.Limits) { l.RepeatFailing = 2 }), nil, []govStep{
			{a: govRun("make"), result: "exit:e1"}, {a: govRun("make"), result: "exit:e2"}, {a: govRun("make"), result: "exit:e2"},
			{a: govRun("make"), code: action.CodeRepeatedAction, limit: policy.RepeatFailing},
		}},
		{"repeat-failing ends when the action succeeds", lim(func(l *policy.Limits) { l.RepeatFailing = 2 }), nil, []govStep{
			{a: govRun("make"), result: "exit:e"}, {a: govRun("make")}, {a: govRun("make"), result: "exit:e"}, {a: govRun("make"), result: "exit:e"},
			{a: govRun("make"), code: action.CodeRepeatedAction, limit: policy.RepeatFailing},
		}},
		{"a runtime's refusal is a failing result", lim(func(l *policy.Limits) { l.RepeatFailing = 2 }), nil, []govStep{
			{a: govRun("rm -rf x"), result: "blocked:"}, {a: govRun("rm -rf x"), result: "blocked:"},
			{a: govRun("rm -rf x"), code: action.CodeRepeatedAction, limit: policy.RepeatFailing},
		}},
		{"repeat-identical: reads between do not break the run", lim(func(l *policy.Limits) { l.RepeatIdentical = 3 }), nil, []govStep{
			{a: govRun("go test")}, {a: govRead("a")}, {a: govRun("go test")}, {a: govRead("a")}, {a: govRun("go test")},
			{a: govRun("go test"), code: action.CodeRepeatedAction, limit: policy.RepeatIdentical},
			{a: govWrite("a", "fix")}, {a: govRun("go test")}, // a change between: the run starts again
		}},
		{"repeat-identical: reads are not counted", lim(func(l *policy.Limits) { l.RepeatIdentical = 2 }), nil, []govStep{
			{a: govRead("a")}, {a: govRead("a")}, {a: govRead("a")}, {a: govRead("a")}, {a: govRead("a")},
		}},
		{"session rate", lim(func(l *policy.Limits) { l.SessionRate = 2 }), nil, []govStep{
			{a: govRead("a")}, {a: govRead("b")},
			{a: govRead("c"), code: action.CodeRateLimited, limit: policy.RateSession},
			{a: inTenant(govRead("c"), "", "other")}, // another session has its own bucket
		}},
		{"tenant rate spans sessions", lim(func(l *policy.Limits) { l.TenantRate = 1 }), nil, []govStep{
			{a: inTenant(govRead("a"), "acme", "s1")},
			{a: inTenant(govRead("a"), "acme", "s2"), code: action.CodeRateLimited, limit: policy.RateTenant},
			{a: inTenant(govRead("a"), "other", "s2")},
		}},
		{"a preview is checked, not counted", lim(func(l *policy.Limits) { l.MaxActions = 1 }), nil, []govStep{
			{a: govRun("ls"), phase: policy.PhasePreview}, {a: govRun("ls"), phase: policy.PhasePreview},
			{a: govRun("ls"), phase: policy.PhaseExecute},
			{a: govRun("ls"), phase: policy.PhasePreview, code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
			{a: govRun("ls"), phase: policy.PhaseExecute, code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
		}},
		{"an action a later step refuses gets its reservation back", lim(func(l *policy.Limits) { l.MaxActions = 1 }), nil, []govStep{
			{a: func() action.Action { a := govRun("ls"); a.Trusted = false; return a }(), code: action.CodeTrustRequired},
			{a: govRun("ls")},
			{a: govRun("ls"), code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
		}},
		{"a tenant's own limits", lim(func(l *policy.Limits) { l.MaxActions = 3 }), map[string]policy.Limits{"acme": {MaxActions: 1}}, []govStep{
			{a: inTenant(govRead("a"), "acme", "s")},
			{a: inTenant(govRead("a"), "acme", "s"), code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
			{a: inTenant(govRead("a"), "beta", "s")}, {a: inTenant(govRead("a"), "beta", "s")}, {a: inTenant(govRead("a"), "beta", "s")},
		}},
		{"a session id is one budget per tenant", lim(func(l *policy.Limits) { l.MaxActions = 1 }), nil, []govStep{
			{a: inTenant(govRead("a"), "acme", "s")}, {a: inTenant(govRead("a"), "beta", "s")},
			{a: inTenant(govRead("a"), "acme", "s"), code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
		}},
		// Priority: budgets first (in their order), then repeats, then rates.
		{"priority: max-actions over max-risk", lim(func(l *policy.Limits) { l.MaxActions = 1; l.MaxRisk = 10 }), nil, []govStep{
			{a: govRun("ls")}, {a: govRun("ls"), code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
		}},
		{"priority: max-errors over max-consecutive-errors", lim(func(l *policy.Limits) { l.MaxErrors = 1; l.MaxConsecutiveErrors = 1 }), nil, []govStep{
			{a: govRead("a"), result: "fail:x"}, {a: govRead("b"), code: action.CodeBudgetExhausted, limit: policy.BudgetErrors},
		}},
		{"priority: a budget over a repeat", lim(func(l *policy.Limits) { l.MaxErrors = 2; l.RepeatFailing = 2 }), nil, []govStep{
			{a: govRun("make"), result: "exit:e"}, {a: govRun("make"), result: "exit:e"},
			{a: govRun("make"), code: action.CodeBudgetExhausted, limit: policy.BudgetErrors},
		}},
		{"priority: repeat-failing over repeat-identical", lim(func(l *policy.Limits) { l.RepeatFailing = 2; l.RepeatIdentical = 2 }), nil, []govStep{
			{a: govRun("make"), result: "exit:e"}, {a: govRun("make"), result: "exit:e"},
			{a: govRun("make"), code: action.CodeRepeatedAction, limit: policy.RepeatFailing},
		}},
		{"priority: a repeat over the rate", lim(func(l *policy.Limits) { l.RepeatFailing = 1; l.SessionRate = 1 }), nil, []govStep{
			{a: govRun("make"), result: "exit:e"},
			{a: govRun("make"), code: action.CodeRepeatedAction, limit: policy.RepeatFailing},
		}},
		{"priority: a budget over the rate", lim(func(l *policy.Limits) { l.MaxActions = 1; l.SessionRate = 1 }), nil, []govStep{
			{a: govRead("a")}, {a: govRead("b"), code: action.CodeBudgetExhausted, limit: policy.BudgetActions},
		}},
		{"priority: the session's rate over the tenant's", lim(func(l *policy.Limits) { l.SessionRate = 1; l.TenantRate = 1 }), nil, []govStep{
			{a: govRead("a")}, {a: govRead("b"), code: action.CodeRateLimited, limit: policy.RateSession},
		}},
	}
	for storeName, newStore := range counterStores(t) {
		t.Run(storeName, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					r := newRig(t, newStore(t), policy.GovernanceOptions{Limits: tc.limits, Tenants: tc.tenants})
					for i, s := range tc.steps {
						time.Sleep(s.sleep)
						phase := s.phase
						if phase == "" {
							phase = policy.PhaseDirect
						}
						d, req := r.do(s.a, phase, s.result)
						if d.Code != s.code || (s.limit != "" && d.Rule != s.limit) {
							t.Fatalf("step %d (%s %v): got %q rule %q (%s), want %q rule %q", i, s.a.Name, s.a.Input, d.Code, d.Rule, d.Message, s.code, s.limit)
						}
						if s.limit != "" {
							assert.Equal(t, policy.StepGovernance, d.Check)
							assert.Contains(t, d.Message, s.limit, "the reason names the limit")
							assert.Equal(t, s.code.Status(), action.StatusBlocked)
							require.False(t, req.Governance.Snapshot().IsZero(), "the refusal's audit record has no counters")
						}
						if s.code == action.CodeRateLimited {
							assert.True(t, d.RetryAfter > 0 && d.RetryAfter <= time.Second, "retry after %s", d.RetryAfter)
						}
					}
				})
			}
		})
	}
}

func TestGovernanceSnapshotAndReset(t *testing.T) {
	for storeName, newStore := range counterStores(t) {
		t.Run(storeName, func(t *testing.T) {
			r := newRig(t, newStore(t), policy.GovernanceOptions{Limits: policy.Limits{MaxActions: 3, MaxRisk: 100, MaxErrors: 5, RepeatIdentical: 9}})
			r.do(govRead("a"), policy.PhaseDirect, "")
			r.do(govRun("ls x"), policy.PhaseDirect, "exit:boom")
			_, req := r.do(govWrite("w", "hello"), policy.PhaseDirect, "")
			s := req.Governance.Snapshot()
			assert.Equal(t, "session", s.By)
			assert.True(t, s.Counted)
			assert.Equal(t, int64(3), s.Actions)
			assert.Equal(t, int64(16), s.Risk)
			assert.Equal(t, int64(1), s.Errors)
			assert.Equal(t, int64(0), s.ConsecutiveErrors, "the write succeeded after the error")
			assert.Equal(t, int64(5), s.BytesWritten)
			assert.Equal(t, int64(3), s.CommandMS)
			assert.Equal(t, map[string]int64{"max-actions": 0, "max-risk": 84, "max-errors": 4}, s.Remaining.Map())
			if storeName == "redis" {
				want, err := govWrite("w", "hello").Hash()
				require.NoError(t, err)
				assert.Equal(t, want, s.ActionHash, "shared counters compare, and records carry, the canonical hash")
			} else {
				assert.Empty(t, s.ActionHash, "counters in memory compare a keyed hash, which records do not carry")
			}

			d, _ := r.do(govRead("b"), policy.PhaseDirect, "")
			require.Equal(t, action.CodeBudgetExhausted, d.Code)
			// Another principal's session-less actions have their own budget.
			sessionless := govRead("b")
			sessionless.SessionID = ""
			d, _ = r.do(sessionless, policy.PhaseDirect, "")
			require.True(t, d.Allowed(), "%s", d.Message)

			key := policy.SessionKey{Session: "s", Principal: "whoever"}
			require.NoError(t, r.gov.Reset(context.Background(), key))
			c, err := r.gov.Counters(context.Background(), key)
			require.NoError(t, err)
			assert.Zero(t, c.Actions)
			d, _ = r.do(govRead("b"), policy.PhaseDirect, "")
			require.True(t, d.Allowed(), "after a reset: %s", d.Message)
			require.Error(t, r.gov.Reset(context.Background(), policy.SessionKey{Tenant: "acme"}))
		})
	}
}

// TestGovernanceRateRefills: a bucket refills at its rate, and the refusal
// says when.
func TestGovernanceRateRefills(t *testing.T) {
	m := policy.NewMemoryCounters()
	now := time.Unix(1_700_000_000, 0)
	m.SetClock(func() time.Time { return now })
	r := newRig(t, m, policy.GovernanceOptions{Limits: policy.Limits{SessionRate: 4}})
	for i := range 4 {
		d, _ := r.do(govRead(fmt.Sprint(i)), policy.PhaseDirect, "")
		require.True(t, d.Allowed(), "burst %d: %s", i, d.Message)
	}
	d, _ := r.do(govRead("x"), policy.PhaseDirect, "")
	require.Equal(t, action.CodeRateLimited, d.Code)
	require.Equal(t, 250*time.Millisecond, d.RetryAfter)
	now = now.Add(100 * time.Millisecond)
	d, _ = r.do(govRead("x"), policy.PhaseDirect, "")
	require.Equal(t, 150*time.Millisecond, d.RetryAfter)
	now = now.Add(150 * time.Millisecond)
	d, _ = r.do(govRead("x"), policy.PhaseDirect, "")
	require.True(t, d.Allowed(), d.Message)
}

// TestGovernanceMaxActionsExactUnderConcurrency: replicas sharing one
// store admit exactly max-actions, however many race for them: two
// governors on two Redis connections, and one in memory.
func TestGovernanceMaxActionsExactUnderConcurrency(t *testing.T) {
	const max, workers, each = 50, 16, 20
	race := func(t *testing.T, govs ...*policy.Governor) {
		var allowed, refused atomic.Int64
		var wg sync.WaitGroup
		for w := range workers {
			gov := govs[w%len(govs)]
			g := policy.NewGuard(schema.Catalog(), policy.Options{TrustedRuntime: true}, policy.Steps{Validating: []policy.Step{gov.Step()}})
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					req := &policy.Request{Action: govRead(fmt.Sprint(w, "-", i)), Phase: policy.PhaseDirect}
					d := g.Decide(context.Background(), req)
					switch {
					case d.Allowed():
						allowed.Add(1)
					case d.Code == action.CodeBudgetExhausted:
						refused.Add(1)
					default:
						t.Errorf("unexpected %s: %s", d.Code, d.Message)
					}
					obs := scripted(req.Action, d, "")
					gov.Observe(context.Background(), req, &obs)
				}
			}()
		}
		wg.Wait()
		require.Equal(t, int64(max), allowed.Load(), "admitted")
		require.Equal(t, int64(workers*each-max), refused.Load(), "refused")
		c, err := govs[0].Counters(context.Background(), policy.SessionKey{Session: "s"})
		require.NoError(t, err)
		require.Equal(t, int64(max), c.Actions)
		require.Equal(t, int64(workers*each-max), c.Refusals)
	}
	limits := policy.GovernanceOptions{Limits: policy.Limits{MaxActions: max}}
	t.Run("memory", func(t *testing.T) {
		gov, err := policy.NewGovernor(limits)
		require.NoError(t, err)
		race(t, gov)
	})
	t.Run("two replicas on one redis", func(t *testing.T) {
		prefix := redisPrefix(t)
		var govs []*policy.Governor
		for range 2 {
			opts := limits
			opts.Store = policy.NewRedisCounters(testkit.Redis(t), prefix) // a client each, as two processes have
			gov, err := policy.NewGovernor(opts)
			require.NoError(t, err)
			govs = append(govs, gov)
		}
		race(t, govs...)
	})
}

func TestGovernorRefusesNegativeLimits(t *testing.T) {
	for _, l := range []policy.Limits{{MaxActions: -1}, {SessionRate: -1}, {RiskWeights: map[string]int64{"read": -2}}} {
		_, err := policy.NewGovernor(policy.GovernanceOptions{Limits: l})
		require.Error(t, err)
	}
	_, err := policy.NewGovernor(policy.GovernanceOptions{Tenants: map[string]policy.Limits{"acme": {RepeatFailing: -3}}})
	require.ErrorContains(t, err, "acme")
}

func TestGovernanceStoreDownFailsClosed(t *testing.T) {
	c := testkit.Redis(t)
	store := policy.NewRedisCounters(c, redisPrefix(t))
	gov, err := policy.NewGovernor(policy.GovernanceOptions{Limits: policy.Limits{MaxActions: 5}, Store: store})
	require.NoError(t, err)
	g := policy.NewGuard(schema.Catalog(), policy.Options{TrustedRuntime: true}, policy.Steps{Validating: []policy.Step{gov.Step()}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the store cannot answer
	d := g.Decide(ctx, &policy.Request{Action: govRead("a")})
	require.Equal(t, action.CodeInternal, d.Code)
	require.Equal(t, policy.StepGovernance, d.Check)
}

// TestGovernanceCountsBytesRead: what reads bring back is counted per
// session, in both stores: a file's content, a search's matching lines, or
// the bytes_read a read reports; writes, commands and failed reads add
// nothing to it.
func TestGovernanceCountsBytesRead(t *testing.T) {
	for storeName, newStore := range counterStores(t) {
		t.Run(storeName, func(t *testing.T) {
			store := newStore(t)
			r := newRig(t, store, policy.GovernanceOptions{Limits: policy.Limits{MaxActions: 100}})
			observe := func(a action.Action, obs action.Observation) {
				req := &policy.Request{Action: a, Principal: "agent", Phase: policy.PhaseDirect}
				d := r.guard.Decide(context.Background(), req)
				require.True(t, d.Allowed(), "%s", d.Message)
				r.gov.Observe(context.Background(), req, &obs)
			}
			ok := func(payload map[string]any) action.Observation {
				return action.Observation{Source: action.SourceWorkspace, Status: action.StatusOK, Payload: payload}
			}
			search := action.Action{Name: "workspace_search_text", Input: map[string]any{"query": "x"}, SessionID: "s", Trusted: true}
			observe(govRead("a"), ok(map[string]any{"content": "0123456789"}))
			observe(search, ok(map[string]any{"matches": []any{map[string]any{"text": "abc"}, map[string]any{"text": "defg"}}}))
			observe(govRead("b"), ok(map[string]any{"bytes_read": 100.0, "content": "ignored"}))
			observe(govRead("c"), action.Observation{Source: action.SourceWorkspace, Status: action.StatusError, Code: action.CodeNotFound, Payload: map[string]any{"content": "zzz"}})
			observe(govWrite("w", "hello"), ok(map[string]any{"content": "not a read"}))
			observe(govRun("ls"), ok(map[string]any{"stdout": "a\nb\n", "exit_code": 0}))
			c, err := store.Get(context.Background(), policy.SessionKey{Session: "s"})
			require.NoError(t, err)
			assert.Equal(t, int64(10+3+4+100), c.BytesRead)
			assert.Equal(t, int64(5), c.BytesWritten)
			next := &policy.Request{Action: govRead("d"), Principal: "agent", Phase: policy.PhaseDirect}
			require.True(t, r.guard.Decide(context.Background(), next).Allowed())
			assert.Equal(t, int64(10+3+4+100), next.Governance.Snapshot().BytesRead, "the audit records' snapshot shows bytes read")
			require.NoError(t, r.gov.Reset(context.Background(), policy.SessionKey{Session: "s"}))
			c, err = store.Get(context.Background(), policy.SessionKey{Session: "s"})
			require.NoError(t, err)
			assert.Zero(t, c.BytesRead, "a reset forgets bytes read too")
		})
	}
}

// TestGovernanceSettlesAfterAReset: an outcome counted after an operator
// reset the session while the action ran counts in the session as reset
// (the slot Admit left is not used once stale), in both stores; and an
// action settled through its slot counts as one looked up by key does.
func TestGovernanceSettlesAfterAReset(t *testing.T) {
	ctx := context.Background()
	for storeName, newStore := range counterStores(t) {
		t.Run(storeName, func(t *testing.T) {
			store := newStore(t)
			defer store.Close()
			key := policy.SessionKey{Session: "s"}
			lim := &policy.Limits{MaxActions: 10}
			var slot policy.Slot
			_, c, err := store.Admit(ctx, key, policy.AdmitArgs{Count: true, Weight: 2, Limits: lim, Slot: &slot})
			require.NoError(t, err)
			require.Equal(t, int64(1), c.Actions)
			c, err = store.Settle(ctx, key, policy.Settlement{Counted: true, Ran: true, Weight: 2, Failed: true, Slot: &slot})
			require.NoError(t, err)
			assert.Equal(t, policy.Counters{Actions: 1, Risk: 2, Errors: 1, ConsecutiveErrors: 1, Start: c.Start, Now: c.Now}, c)

			slot = policy.Slot{}
			_, _, err = store.Admit(ctx, key, policy.AdmitArgs{Count: true, Weight: 2, Limits: lim, Slot: &slot})
			require.NoError(t, err)
			require.NoError(t, store.Reset(ctx, key))
			c, err = store.Settle(ctx, key, policy.Settlement{Counted: true, Ran: true, Weight: 2, Failed: true, Slot: &slot})
			require.NoError(t, err)
			assert.Equal(t, int64(0), c.Actions, "the reset forgot the reservation")
			assert.Equal(t, int64(1), c.Errors, "the outcome counts in the session as reset")
			got, err := store.Get(ctx, key)
			require.NoError(t, err)
			assert.Equal(t, int64(1), got.Errors, "counted where the store keeps the session, not in the one it forgot")
		})
	}
}

// TestGovernanceFillsTheRequestsRoom: a request that comes with an empty
// Admission (the dispatcher allocates one with each request) gets its
// admission there, and keeps it when decided again; a refusal before the
// governance step is counted there too; a store that cannot answer leaves
// it empty, so that its records carry no counters.
func TestGovernanceFillsTheRequestsRoom(t *testing.T) {
	ctx := context.Background()
	r := newRig(t, policy.NewMemoryCounters(), policy.GovernanceOptions{Limits: policy.Limits{MaxActions: 5}})
	room := &policy.Admission{}
	assert.True(t, room.Snapshot().IsZero(), "an empty admission records nothing")
	req := &policy.Request{Action: govRead("a"), Principal: "agent", Governance: room}
	require.True(t, r.guard.Decide(ctx, req).Allowed())
	require.Same(t, room, req.Governance)
	s := room.Snapshot()
	assert.Equal(t, "session", s.By)
	assert.True(t, s.Counted)
	assert.Equal(t, int64(1), s.Actions)
	obs := action.Observation{Source: action.SourceWorkspace, Status: action.StatusOK, Payload: map[string]any{"content": "abc"}}
	r.gov.Observe(ctx, req, &obs)
	assert.Equal(t, int64(3), room.Snapshot().BytesRead)

	// Decided again: a new admission, the first one as its records saw it.
	require.True(t, r.guard.Decide(ctx, req).Allowed())
	assert.NotSame(t, room, req.Governance)
	assert.Equal(t, int64(1), room.Snapshot().Actions)
	assert.Equal(t, int64(2), req.Governance.Snapshot().Actions)

	// Refused before the governance step: counted in the room.
	room = &policy.Admission{}
	req = &policy.Request{Action: action.Action{Name: "no_such_action", SessionID: "s"}, Principal: "agent", Governance: room}
	d := r.guard.Decide(ctx, req)
	require.Equal(t, action.CodeUnknownAction, d.Code)
	assert.True(t, room.Snapshot().IsZero())
	obs = action.Observation{Source: action.SourcePolicy, Status: d.Code.Status(), Code: d.Code}
	r.gov.Observe(ctx, req, &obs)
	require.Same(t, room, req.Governance)
	assert.Equal(t, int64(1), room.Snapshot().Refusals)
	assert.False(t, room.Snapshot().Counted)

	// The store cannot answer: refused, and the room stays empty.
	down := policy.NewRedisCounters(testkit.Redis(t), redisPrefix(t))
	gov, err := policy.NewGovernor(policy.GovernanceOptions{Limits: policy.Limits{MaxActions: 5}, Store: down})
	require.NoError(t, err)
	g := policy.NewGuard(schema.Catalog(), policy.Options{TrustedRuntime: true}, policy.Steps{Validating: []policy.Step{gov.Step()}})
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	room = &policy.Admission{}
	req = &policy.Request{Action: govRead("a"), Governance: room}
	require.Equal(t, action.CodeInternal, g.Decide(canceled, req).Code)
	require.Same(t, room, req.Governance)
	assert.True(t, room.Snapshot().IsZero())
}

// TestGovernanceLazyHashDecidesAsEager: the in-memory store hashes an
// action only when a repeat count could change, RedisCounters hashes
// every action; on random sessions of reads, writes and commands with
// random outcomes (failures, refusals, exits) both decide every step
// alike and count the same repeats.
func TestGovernanceLazyHashDecidesAsEager(t *testing.T) {
	testkit.Redis(t)
	actions := []action.Action{govRead("a"), govRead("b"), govWrite("w", "x"), govWrite("w", "y"), govRun("make"), govRun("ls")}
	results := []string{"", "", "", "fail:nope", "fail:other", "exit:boom", "blocked:"}
	for seed := int64(1); seed <= 6; seed++ {
		rng := mrand.New(mrand.NewPCG(uint64(seed), 7))
		opts := policy.GovernanceOptions{Limits: policy.Limits{RepeatFailing: 2 + rng.Int64N(2), RepeatIdentical: 2 + rng.Int64N(3)}}
		mem := newRig(t, policy.NewMemoryCounters(), opts)
		red := newRig(t, policy.NewRedisCounters(testkit.Redis(t), redisPrefix(t)), opts)
		for step := range 300 {
			// Runs of one action make repeats likely.
			a := actions[rng.IntN(len(actions))]
			if step > 0 && rng.IntN(2) == 0 {
				a = actions[(step*7)%len(actions)]
			}
			result := results[rng.IntN(len(results))]
			dm, rm := mem.do(a, policy.PhaseDirect, result)
			dr, rr := red.do(a, policy.PhaseDirect, result)
			require.Equal(t, dr.Code, dm.Code, "seed %d step %d: %s %q", seed, step, a.Name, result)
			require.Equal(t, dr.Rule, dm.Rule, "seed %d step %d", seed, step)
			sm, sr := rm.Governance.Snapshot(), rr.Governance.Snapshot()
			require.Equal(t, sr.Repeats, sm.Repeats, "seed %d step %d", seed, step)
			require.Equal(t, sr.FailingRepeats, sm.FailingRepeats, "seed %d step %d", seed, step)
			require.Equal(t, sr.Errors, sm.Errors, "seed %d step %d", seed, step)
			require.Equal(t, sr.Refusals, sm.Refusals, "seed %d step %d", seed, step)
			if sm.ActionHash != "" {
				require.Equal(t, sr.ActionHash, sm.ActionHash, "seed %d step %d: a lazy hash is the hash", seed, step)
			}
		}
	}
}
