package ahp

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

// TestAppendCanonicalMatchesCanonicalValue: the audit log hashes
// action.Canonical of an event, which takes Event.AppendCanonical; its
// bytes must be exactly those of the generic values CanonicalValue builds,
// or records written before it would no longer verify. Random events set
// or leave out every optional field.
func TestAppendCanonicalMatchesCanonicalValue(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	prefix := []byte(`prefix:`)
	for i := range 3000 {
		ev := randomEvent(r)
		want, wantErr := action.Canonical(ev.CanonicalValue())
		got, err := ev.AppendCanonical(bytes.Clone(prefix))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("event %d: error %v, want %v\n%#v", i, err, wantErr, ev)
		}
		if wantErr != nil {
			continue
		}
		if !bytes.Equal(got, append(bytes.Clone(prefix), want...)) {
			t.Fatalf("event %d differs:\n got %s\nwant %s%s", i, got, prefix, want)
		}
		if via, err := action.Canonical(ev); err != nil || !bytes.Equal(via, want) {
			t.Fatalf("event %d: action.Canonical %s, %v\nwant %s", i, via, err, want)
		}
	}
}

// TestAppendCanonicalNotANumber: a number JSON cannot hold fails both
// ways, and the failed append leaves the buffer as it was.
func TestAppendCanonicalNotANumber(t *testing.T) {
	cases := map[string]*ActionPayload{
		"NaN input":          {Action: "x", Input: map[string]any{"a": []any{1, math.NaN()}}},
		"Inf modified input": {Action: "x", ModifiedInput: math.Inf(-1)},
		"NaN latency":        {Action: "x", Observation: &ObservationSummary{LatencyMS: math.NaN()}},
		"Inf latency": {Action: "x", Governance: Governance{By: "session"},
			Observation: &ObservationSummary{LatencyMS: math.Inf(1)}},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			ev := Event{EventType: PostAction, Payload: p}
			if _, err := action.Canonical(ev.CanonicalValue()); err == nil {
				t.Fatal("CanonicalValue: no error")
			}
			b := []byte("keep")
			got, err := ev.AppendCanonical(b)
			if err == nil {
				t.Fatalf("AppendCanonical: no error, wrote %s", got)
			}
			if string(got) != "keep" {
				t.Fatalf("a failed append left %q", got)
			}
		})
	}
}

// BenchmarkEventCanonical is the audit log's cost of the canonical form
// of a post_action event: written directly (direct) and through the maps
// CanonicalValue builds (maps).
func BenchmarkEventCanonical(b *testing.B) {
	ev := Event{
		Version: Version, EventID: "act-1f3a.post_action", EventType: PostAction, SessionID: "sess-42", AgentID: "agent-7",
		Timestamp: time.Date(2026, 11, 21, 23, 0, 0, 123456789, time.UTC), Depth: 1,
		Payload: &ActionPayload{
			ActionID: "act-1f3a", Action: "workspace_read_file", Tenant: "acme", TaskID: "t-1", StepID: "3",
			Principal: "alice", Phase: "direct",
			Input: map[string]any{"path": "src/main.go", "offset": json.Number("0"), "limit": json.Number("200")},
			Observation: &ObservationSummary{Source: "workspace", Status: "ok", LatencyMS: 0.412,
				PayloadKeys: []string{"content", "sha256", "size"}},
			Governance: Governance{By: "session", Counted: true, Actions: 12, Errors: 1, Risk: 3, WallMS: 48210,
				BytesRead: 183040, CommandMS: 912, Repeats: 1,
				Remaining: remaining(map[string]int64{"max-actions": 188, "max-risk": 97, "max-wall-seconds": 3551})},
		},
	}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := action.Canonical(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("maps", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := action.Canonical(ev.CanonicalValue()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Fragments of random strings: what JSON escapes (quotes, backslashes,
// control characters, U+2028, invalid UTF-8), HTML characters it must not
// escape, multi-byte runes, and runs long enough for AppendJSONString's
// eight bytes at a time.
var stringParts = []string{
	"a", "key", "é", "日本", "🙂", "<>&", `"`, `\`, "\n\t\r", "\x00", "\x1f", "\x7f",
	"\u2028", "\u2029", "\xff", "\xed\xa0\x80", "\xe2\x80", "long ascii run of text", "/",
}

func randomString(r *rand.Rand) string {
	if r.IntN(4) == 0 {
		return ""
	}
	var sb strings.Builder
	for range 1 + r.IntN(4) {
		sb.WriteString(stringParts[r.IntN(len(stringParts))])
	}
	return sb.String()
}

// maybe returns a random string or, half the time, "".
func maybe(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return ""
	}
	return randomString(r)
}

var numbers = []string{"0", "-0", "1", "1.50", "1e3", "-2.5e-7", "0.1", "9007199254740993", "-9007199254740992", "12345678901234567890", "1E4"}

func randomFloat(r *rand.Rand) float64 {
	switch r.IntN(6) {
	case 0:
		return 0
	case 1:
		return float64(r.IntN(1000))
	case 2:
		return r.Float64() * 100
	case 3:
		return math.Ldexp(r.Float64(), r.IntN(200)-100)
	case 4:
		return -float64(int64(1)<<60) - 1
	default:
		return 1e21
	}
}

func randomInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return int64(r.IntN(1000))
	case 2:
		return int64(r.Uint64()) // often beyond 2^53: written as a float
	default:
		return []int64{1 << 53, 1<<53 + 1, -(1 << 53), -(1 << 53) - 1, math.MinInt64, math.MaxInt64}[r.IntN(6)]
	}
}

// randomValue is a JSON-like value of the kinds an input holds.
func randomValue(r *rand.Rand, depth int) any {
	n := 13
	if depth > 3 {
		n = 9 // no more containers
	}
	switch r.IntN(n) {
	case 0:
		return nil
	case 1:
		return r.IntN(2) == 0
	case 2:
		return randomString(r)
	case 3:
		return json.Number(numbers[r.IntN(len(numbers))])
	case 4:
		return int(randomInt(r))
	case 5:
		return randomFloat(r)
	case 6:
		return uint64(r.Uint64())
	case 7:
		return float32(randomFloat(r))
	case 8:
		return json.RawMessage(`{"z":[1.0,"\u00e9"],"a":{"y":null}}`)
	case 9, 10:
		m := map[string]any{}
		size := r.IntN(5)
		if r.IntN(8) == 0 {
			size = 20 // beyond a small object
		}
		for range size {
			m[randomString(r)] = randomValue(r, depth+1)
		}
		return m
	case 11:
		l := make([]any, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return l
	default:
		l := make([]string, r.IntN(3))
		for i := range l {
			l[i] = randomString(r)
		}
		return l
	}
}

func randomInput(r *rand.Rand) any {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return map[string]any(nil) // a typed nil: present, and {}
	default:
		return randomValue(r, 0)
	}
}

func randomStrings(r *rand.Rand) []string {
	switch r.IntN(3) {
	case 0:
		return nil
	case 1:
		return []string{}
	default:
		l := make([]string, 1+r.IntN(3))
		for i := range l {
			l[i] = randomString(r)
		}
		return l
	}
}

var zones = []*time.Location{time.UTC, time.FixedZone("", 0), time.FixedZone("CET", 3600), time.FixedZone("x", -(9*3600 + 30*60)), time.FixedZone("odd", 3601)}

func randomTime(r *rand.Rand) time.Time {
	switch r.IntN(5) {
	case 0:
		return time.Time{}
	case 1:
		return time.Date(-r.IntN(3000), 1, 2, 3, 4, 5, r.IntN(2)*7, zones[r.IntN(len(zones))])
	case 2:
		return time.Date(10000+r.IntN(100000), 12, 31, 23, 59, 59, 999999999, zones[r.IntN(len(zones))])
	default:
		ns := 0
		if r.IntN(2) == 0 {
			ns = r.IntN(1e9)
		}
		return time.Unix(int64(r.IntN(4e9)), int64(ns)).In(zones[r.IntN(len(zones))])
	}
}

func randomGovernance(r *rand.Rand) Governance {
	if r.IntN(3) == 0 {
		return Governance{}
	}
	g := Governance{
		ActionHash: maybe(r), Counted: r.IntN(2) == 0,
		Actions: randomInt(r), Errors: randomInt(r), ConsecutiveErrors: randomInt(r),
		Refusals: randomInt(r), ConsecutiveRefusals: randomInt(r), Risk: randomInt(r), WallMS: randomInt(r),
		BytesWritten: randomInt(r), BytesRead: randomInt(r), CommandMS: randomInt(r),
		Repeats: randomInt(r), FailingRepeats: randomInt(r),
	}
	if r.IntN(5) > 0 {
		g.By = []string{"session", "principal", "\xff<"}[r.IntN(3)] // else set but zero: left out
	}
	for i := range Budgets {
		if r.IntN(2) == 0 {
			g.Remaining.SetIndex(i, randomInt(r))
		}
	}
	return g
}

func randomEvent(r *rand.Rand) Event {
	ev := Event{
		Version: maybe(r), EventID: maybe(r), EventType: EventType(maybe(r)), SessionID: maybe(r), AgentID: maybe(r),
		Timestamp: randomTime(r), Depth: int(randomInt(r)),
	}
	if r.IntN(5) == 0 {
		return ev
	}
	p := &ActionPayload{
		ActionID: maybe(r), Action: maybe(r), Tenant: maybe(r), TaskID: maybe(r), StepID: maybe(r),
		Principal: maybe(r), Trusted: r.IntN(2) == 0, Phase: maybe(r), ApprovalID: maybe(r),
		Input: randomInput(r), ModifiedInput: randomInput(r), Governance: randomGovernance(r),
	}
	if r.IntN(2) == 0 {
		p.Decision = &action.Decision{Step: maybe(r), Rule: maybe(r), Outcome: maybe(r), Reason: maybe(r)}
	}
	if r.IntN(3) > 0 {
		o := &ObservationSummary{Source: maybe(r), Status: maybe(r), Code: maybe(r), LatencyMS: randomFloat(r),
			Message: maybe(r), PayloadKeys: randomStrings(r)}
		if r.IntN(2) == 0 {
			o.Redacted = &Redaction{Count: int(randomInt(r)), Markers: randomStrings(r)}
		}
		p.Observation = o
	}
	ev.Payload = p
	return ev
}
