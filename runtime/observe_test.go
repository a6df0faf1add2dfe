package runtime_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/schema"
)

const (
	plantedAWS = "AKIA2E0A8F3B244C9986"
	plantedGHP = "ghp_R8x2Lk9Qm4Tz7Vb1Nc6Yd3Wf5Hj0Ps2Ua8Ee"
)

func wholeSanitizer(t testing.TB) *sanitize.Sanitizer {
	s, err := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef0123456789abcdef"), MaxString: -1})
	require.NoError(t, err)
	return s
}

// TestRedactObservationsCountsWhatItReplaced: every secret in the payload
// (nested, in lists, under a secret-named key, as a key) and the message
// becomes a marker, counted once each; markers the output already held
// are not counted; a clean observation is left as it was.
func TestRedactObservationsCountsWhatItReplaced(t *testing.T) {
	s := wholeSanitizer(t)
	r := runtime.RedactObservations(s)
	long := strings.Repeat("x", 100_000) + " " + plantedGHP // never truncated
	already := s.Redact("old secret")
	obs := action.Observation{
		Status: action.StatusError, Message: "failed with " + plantedAWS,
		Payload: map[string]any{
			"stdout":  long,
			"nested":  map[string]any{"list": []any{"ok", plantedGHP, 3.0}, "argv": []string{"x", plantedAWS}},
			"token":   "an opaque value under a secret name",
			"earlier": "seen before: " + already,
			"clean":   "nothing here",
		},
	}
	r.Observe(context.Background(), &policy.Request{}, &obs)
	text := string(obs.JSON())
	for _, secret := range []string{plantedAWS, plantedGHP, "an opaque value"} {
		assert.NotContains(t, text, secret)
	}
	assert.Contains(t, obs.Payload["stdout"], strings.Repeat("x", 100_000), "the output was cut")
	red, ok := obs.Payload[runtime.RedactedKey].(ahp.Redaction)
	require.True(t, ok, text)
	assert.Equal(t, 5, red.Count, "stdout, the list, argv, the token, the message")
	assert.Len(t, red.Markers, 3, "the distinct markers: two secrets and the token's value")
	assert.NotContains(t, red.Markers, already, "a marker the output held was counted")
	assert.Equal(t, "seen before: "+already, obs.Payload["earlier"])

	clean := action.Observation{Status: action.StatusOK, Payload: map[string]any{"content": "package main\n"}}
	r.Observe(context.Background(), &policy.Request{}, &clean)
	assert.NotContains(t, clean.Payload, runtime.RedactedKey)
	none := action.Observation{Status: action.StatusBlocked, Message: "refused"}
	r.Observe(context.Background(), &policy.Request{}, &none)
	assert.Nil(t, none.Payload)
}

// TestRedactObservationsRedactsTypedListings: a listing's typed entries
// are sanitized in place of their type (every string: a file named after
// a secret, a directory on its path), counted, and left as they were
// when nothing in them is secret.
func TestRedactObservationsRedactsTypedListings(t *testing.T) {
	r := runtime.RedactObservations(wholeSanitizer(t))
	entries := action.Entries{
		{Path: "keys/" + plantedAWS + ".txt", Name: plantedAWS + ".txt", Type: "file"},
		{Path: plantedGHP + "/x", Name: "x", Type: "dir", Detailed: true, Size: 4, ModTime: "2026-01-01T00:00:00Z"},
		{Path: "src", Name: "src", Type: "dir"},
	}
	obs := action.Observation{Status: action.StatusOK, Payload: map[string]any{"path": ".", "entries": entries}}
	r.Observe(context.Background(), &policy.Request{}, &obs)
	got, ok := obs.Payload["entries"].(action.Entries)
	require.True(t, ok, "still typed: %T", obs.Payload["entries"])
	text := string(obs.JSON())
	for _, secret := range []string{plantedAWS, plantedGHP} {
		assert.NotContains(t, text, secret)
	}
	assert.Equal(t, entries[2], got[2])
	assert.Equal(t, int64(4), got[1].Size)
	assert.Equal(t, plantedAWS+".txt", entries[0].Name, "the runtime's own entries are not changed")
	red, ok := obs.Payload[runtime.RedactedKey].(ahp.Redaction)
	require.True(t, ok, text)
	assert.Equal(t, 3, red.Count, "the file's path and name, the directory's path")

	clean := action.Observation{Status: action.StatusOK, Payload: map[string]any{"entries": action.Entries{{Path: "a", Name: "a", Type: "file"}}}}
	r.Observe(context.Background(), &policy.Request{}, &clean)
	assert.NotContains(t, clean.Payload, runtime.RedactedKey)
}

// governedHarness is a dispatcher with a noop builtin and, when gov is
// set, the governance step and observer; events go to a discarding sink
// (so the audit snapshot is built, as it is with an audit log).
func governedHarness(t testing.TB, gov *policy.Governor, observer runtime.Observer, risk schema.Risk) *runtime.Harness {
	s, err := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef0123456789abcdef")})
	require.NoError(t, err)
	reg := schema.Catalog()
	var steps policy.Steps
	if gov != nil {
		steps.Validating = []policy.Step{gov.Step()}
	}
	h, err := runtime.New(runtime.Options{Registry: reg, Guard: policy.NewGuard(reg, policy.Options{}, steps), Sanitizer: s, Observer: observer})
	require.NoError(t, err)
	h.Subscribe(ahp.Discard)
	require.NoError(t, h.Register(runtime.Spec{Name: "noop", Risk: risk, Input: json.RawMessage(`{"properties":{"text":{"type":"string"},"n":{"type":"integer"}}}`)},
		func(context.Context, map[string]any) (map[string]any, error) { return map[string]any{"ok": true}, nil }))
	return h
}

// BenchmarkGovernanceAddedCost measures what governance adds to one action
// in Harness.Execute with counters in memory (target: <= 1 µs): the same
// action through a dispatcher without and with governance (the default
// repeat checks and a max-actions budget, so the action is admitted,
// counted and snapshotted for its two events), alternating in batches,
// and reports the difference as added-ns/op (wall) and added-cpu-ns/op
// (the process's CPU time, which a loaded machine inflates less). "read"
// is an action that reads (never hashed while it succeeds), "write" one
// that changes something (hashed for the repeat checks every time).
func BenchmarkGovernanceAddedCost(b *testing.B) {
	for _, risk := range []schema.Risk{schema.RiskRead, schema.RiskWrite} {
		b.Run(string(risk), func(b *testing.B) { benchGovernanceAddedCost(b, risk) })
	}
}

func benchGovernanceAddedCost(b *testing.B, risk schema.Risk) {
	gov, err := policy.NewGovernor(policy.GovernanceOptions{Limits: policy.Limits{
		MaxActions: 1 << 60, RepeatFailing: policy.DefaultRepeatFailing, RepeatIdentical: 1 << 60,
	}})
	require.NoError(b, err)
	plain := governedHarness(b, nil, nil, risk)
	governed := governedHarness(b, gov, gov, risk)
	a := action.Action{Name: "noop", SessionID: "s", Input: map[string]any{"text": "hello", "n": 3}}
	ctx := context.Background()
	if obs := governed.Execute(ctx, a); !obs.OK() {
		b.Fatal(string(obs.JSON()))
	}
	const batch = 1000
	var tPlain, tGov, cPlain, cGov time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		t0, c0 := time.Now(), processCPU()
		for range n {
			plain.Execute(ctx, a)
		}
		t1, c1 := time.Now(), processCPU()
		for range n {
			if obs := governed.Execute(ctx, a); !obs.OK() {
				b.Fatal(string(obs.JSON()))
			}
		}
		tPlain, cPlain = tPlain+t1.Sub(t0), cPlain+c1-c0
		tGov, cGov = tGov+time.Since(t1), cGov+processCPU()-c1
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N) }
	b.ReportMetric(per(tPlain), "plain-ns/op")
	b.ReportMetric(per(tGov), "governed-ns/op")
	b.ReportMetric(per(tGov-tPlain), "added-ns/op")
	if cPlain > 0 {
		b.ReportMetric(per(cGov-cPlain), "added-cpu-ns/op")
	}
}

// redactionText is about n bytes of what commands print (code, logs,
// JSON, test results, listings, git, compiler errors) with a secret every
// 256 KiB.
func redactionText(n int) string {
	lines := []string{
		`func (s *Server) handle(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }`,
		`2026-01-02T03:04:05Z INFO request method=GET path=/v1/schemas status=200 duration_ms=0.41`,
		`{"name": "workspace_read_file", "input": {"path": "src/main.go"}, "session_id": "s-1"}`,
		`--- PASS: TestGuardDecisions/trust_required (0.00s)`,
		`-rw-r--r-- 1 dev dev  4210 Jan  2 03:04 policy/governance_store.go`,
		`commit 2ec7d7c4b1f0a9e8d7c6b5a4f3e2d1c0b9a8f7e6 (HEAD -> main)`,
		`./runtime/harness.go:212:14: undefined: observe`,
	}
	secrets := []string{plantedAWS, plantedGHP, "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLEKEZ", "password=hunter2hunter2"}
	var b strings.Builder
	next := 0
	for i := 0; b.Len() < n; i++ {
		if next < len(secrets) && b.Len() >= next*(256<<10)+128<<10 {
			b.WriteString(secrets[next] + "\n")
			next++
		}
		b.WriteString(lines[i%len(lines)] + "\n")
	}
	return b.String()[:n]
}

// BenchmarkRedactObservation1MiB: the cost of redact-observations per MiB
// of command output (target: >= 300 MB/s), and of the sanitizer's scan
// alone on the same payload, which bounds it (the observer adds the walk
// and the count of markers).
func BenchmarkRedactObservation1MiB(b *testing.B) {
	s := wholeSanitizer(b)
	r := runtime.RedactObservations(s)
	out := redactionText(1 << 20)
	probe := action.Observation{Payload: map[string]any{"stdout": out}}
	r.Observe(context.Background(), &policy.Request{}, &probe)
	if red, _ := probe.Payload[runtime.RedactedKey].(ahp.Redaction); red.Count < 3 {
		b.Fatalf("planted secrets not redacted: %+v", red)
	}
	payload := func() map[string]any { return map[string]any{"stdout": out, "stderr": "", "exit_code": 0} }
	bench := func(b *testing.B, body func()) {
		b.SetBytes(int64(len(out)))
		b.ReportAllocs()
		start := processCPU()
		for b.Loop() {
			body()
		}
		if cpu := processCPU() - start; cpu > 0 {
			b.ReportMetric(float64(len(out))*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
		}
	}
	b.Run("observer", func(b *testing.B) {
		bench(b, func() {
			obs := action.Observation{Status: action.StatusOK, Payload: payload()}
			r.Observe(context.Background(), &policy.Request{}, &obs)
		})
	})
	b.Run("sanitizer-alone", func(b *testing.B) {
		bench(b, func() { s.Value(payload(), nil) })
	})
}

// TestRedactObservationsSkipsAnUnredactedRule: the observation of an
// action decided by a rule with redact: false reaches the model as
// written; the same observation without the rule is redacted.
func TestRedactObservationsSkipsAnUnredactedRule(t *testing.T) {
	r := runtime.RedactObservations(wholeSanitizer(t))
	fresh := func() action.Observation {
		return action.Observation{Status: action.StatusOK, Payload: map[string]any{"content": "aws_key = " + plantedAWS}}
	}
	obs := fresh()
	r.Observe(context.Background(), &policy.Request{Unredacted: "fixtures-as-written"}, &obs)
	assert.Equal(t, "aws_key = "+plantedAWS, obs.Payload["content"])
	assert.NotContains(t, obs.Payload, runtime.RedactedKey)

	obs = fresh()
	r.Observe(context.Background(), &policy.Request{}, &obs)
	assert.NotContains(t, obs.Payload["content"], plantedAWS)
	assert.Contains(t, obs.Payload, runtime.RedactedKey)
}

// auditLog is a Recorder that keeps every record.
type auditLog struct{ events []ahp.Event }

func (l *auditLog) Record(_ context.Context, ev ahp.Event, _ bool) error {
	l.events = append(l.events, ev)
	return nil
}

// TestEveryAuditRecordCarriesTheGovernanceSnapshot: with an audit log and
// no subscriber, each record of a governed action (pre_action as decided,
// post_action and error as counted) carries the session's counters and
// what remains of its budgets, and the action's canonical hash when its
// failure counted or it was refused as repeated (counters in memory
// compare a keyed hash, which records do not carry); an action the guard
// refuses before the governance step is recorded without counters as
// decided and with its refusal counted; a dispatcher without governance
// records none.
func TestEveryAuditRecordCarriesTheGovernanceSnapshot(t *testing.T) {
	gov, err := policy.NewGovernor(policy.GovernanceOptions{Limits: policy.Limits{
		MaxActions: 3, RepeatFailing: policy.DefaultRepeatFailing, RepeatIdentical: policy.DefaultRepeatIdentical,
	}})
	require.NoError(t, err)
	build := func(gov *policy.Governor) (*runtime.Harness, *auditLog) {
		s := wholeSanitizer(t)
		reg := schema.Catalog()
		var steps policy.Steps
		var obs runtime.Observer
		if gov != nil {
			steps.Validating, obs = []policy.Step{gov.Step()}, gov
		}
		log := &auditLog{}
		h, err := runtime.New(runtime.Options{Registry: reg, Guard: policy.NewGuard(reg, policy.Options{}, steps), Sanitizer: s, Recorder: log, Observer: obs})
		require.NoError(t, err)
		require.NoError(t, h.Register(runtime.Spec{Name: "noop", Input: json.RawMessage(`{"properties":{"n":{"type":"integer"}}}`)}, func(context.Context, map[string]any) (map[string]any, error) { return map[string]any{"ok": true}, nil }))
		require.NoError(t, h.Register(runtime.Spec{Name: "poke", Risk: schema.RiskWrite, Input: json.RawMessage(`{"properties":{"n":{"type":"integer"}}}`)}, func(context.Context, map[string]any) (map[string]any, error) { return map[string]any{"ok": true}, nil }))
		require.NoError(t, h.Register(runtime.Spec{Name: "broken"}, func(context.Context, map[string]any) (map[string]any, error) {
			return nil, action.Errorf(action.CodeNotFound, "nothing there")
		}))
		return h, log
	}
	ctx := context.Background()
	h, log := build(gov)
	records := func(obs action.Observation) map[ahp.EventType]ahp.Governance {
		out := map[ahp.EventType]ahp.Governance{}
		for _, ev := range log.events {
			if ev.Payload.ActionID == obs.ActionID {
				out[ev.EventType] = ev.Payload.Governance
			}
		}
		return out
	}

	noop := action.Action{Name: "noop", SessionID: "s", Input: map[string]any{"n": 1}}
	for i := int64(1); i <= 2; i++ {
		obs := h.Execute(ctx, noop)
		require.True(t, obs.OK(), string(obs.JSON()))
		got := records(obs)
		require.Len(t, got, 2, "pre_action and post_action")
		for _, typ := range []ahp.EventType{ahp.PreAction, ahp.PostAction} {
			g := got[typ]
			assert.Equal(t, "session", g.By, typ)
			assert.True(t, g.Counted, typ)
			assert.Empty(t, g.ActionHash, "a read that succeeded in a clean session is not hashed: %s", typ)
			assert.Equal(t, i, g.Actions, typ)
			left, ok := g.Remaining.Get(policy.BudgetActions)
			assert.True(t, ok, typ)
			assert.Equal(t, 3-i, left, typ)
		}
	}

	broken := action.Action{Name: "broken", SessionID: "s"}
	brokenHash, err := broken.Hash()
	require.NoError(t, err)
	obs := h.Execute(ctx, broken)
	require.Equal(t, action.StatusError, obs.Status, string(obs.JSON()))
	got := records(obs)
	require.Len(t, got, 3, "pre_action, post_action and error")
	assert.Equal(t, int64(0), got[ahp.PreAction].Errors, "as decided")
	assert.Empty(t, got[ahp.PreAction].ActionHash, "a read is hashed when its failure is counted, not before")
	for _, typ := range []ahp.EventType{ahp.PostAction, ahp.Error} {
		assert.Equal(t, brokenHash, got[typ].ActionHash, typ)
		assert.Equal(t, int64(3), got[typ].Actions, typ)
		assert.Equal(t, int64(1), got[typ].Errors, "as counted: %s", typ)
		assert.Equal(t, int64(1), got[typ].ConsecutiveErrors, typ)
	}

	obs = h.Execute(ctx, noop)
	require.Equal(t, action.CodeBudgetExhausted, obs.Code, string(obs.JSON()))
	got = records(obs)
	assert.Empty(t, got[ahp.PostAction].ActionHash, "a read refused by a budget never ran, so no repeat check compared it")
	assert.False(t, got[ahp.PreAction].Counted)
	assert.Equal(t, int64(3), got[ahp.PreAction].Actions)
	left, _ := got[ahp.PreAction].Remaining.Get(policy.BudgetActions)
	assert.Equal(t, int64(0), left)
	assert.Equal(t, int64(1), got[ahp.PostAction].Refusals, "the refusal is counted")

	obs = h.Execute(ctx, action.Action{Name: "no_such_action", SessionID: "s"})
	require.Equal(t, action.CodeUnknownAction, obs.Code, string(obs.JSON()))
	got = records(obs)
	assert.True(t, got[ahp.PreAction].IsZero(), "refused before the governance step: nothing admitted")
	assert.Equal(t, "session", got[ahp.PostAction].By)
	assert.False(t, got[ahp.PostAction].Counted)
	assert.Equal(t, int64(2), got[ahp.PostAction].Refusals, "its refusal is counted")

	// Counters in memory compare a keyed hash, not the canonical one: a
	// write that succeeds, and a read while a failing streak is open, are
	// compared but their records carry no hash. A failure's records and a
	// repeated_action halt's records carry it.
	gov2, err := policy.NewGovernor(policy.GovernanceOptions{Limits: policy.Limits{
		MaxActions: 20, RepeatFailing: policy.DefaultRepeatFailing, RepeatIdentical: policy.DefaultRepeatIdentical,
	}})
	require.NoError(t, err)
	h2, log2 := build(gov2)
	log = log2
	poke := action.Action{Name: "poke", SessionID: "t", Input: map[string]any{"n": 2}}
	pokeHash, err := poke.Hash()
	require.NoError(t, err)
	for i := int64(1); i <= policy.DefaultRepeatIdentical; i++ {
		obs = h2.Execute(ctx, poke)
		require.True(t, obs.OK(), string(obs.JSON()))
		got = records(obs)
		require.Len(t, got, 2)
		assert.Empty(t, got[ahp.PreAction].ActionHash, "a write that succeeds")
		assert.Empty(t, got[ahp.PostAction].ActionHash, "a write that succeeds")
		assert.Equal(t, i, got[ahp.PostAction].Repeats, "compared all the same")
	}
	obs = h2.Execute(ctx, poke)
	require.Equal(t, action.CodeRepeatedAction, obs.Code, string(obs.JSON()))
	got = records(obs)
	for _, typ := range []ahp.EventType{ahp.PreAction, ahp.PostAction} {
		assert.Equal(t, pokeHash, got[typ].ActionHash, "a repeated_action halt: %s", typ)
	}
	require.Equal(t, action.StatusError, h2.Execute(ctx, action.Action{Name: "broken", SessionID: "t"}).Status)
	read := action.Action{Name: "noop", SessionID: "t", Input: map[string]any{"n": 3}}
	obs = h2.Execute(ctx, read)
	require.True(t, obs.OK(), string(obs.JSON()))
	got = records(obs)
	assert.Empty(t, got[ahp.PostAction].ActionHash, "a read settled while a failing streak is open")

	plain, plainLog := build(nil)
	obs = plain.Execute(ctx, noop)
	require.True(t, obs.OK(), string(obs.JSON()))
	require.NotEmpty(t, plainLog.events)
	for _, ev := range plainLog.events {
		assert.True(t, ev.Payload.Governance.IsZero(), "a dispatcher without governance recorded counters")
	}
}
