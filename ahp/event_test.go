package ahp

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/harness-runtime/harness/internal/testkit"
)

// TestEventWireShape pins the JSON of a post_action event, field names and
// order, against a recorded event: external harnesses and audit readers
// parse exactly this.
func TestEventWireShape(t *testing.T) {
	want, err := os.ReadFile("testdata/post_action.json")
	if err != nil {
		t.Fatal(err)
	}
	ev := Event{
		Version: Version, EventID: "act-1.post_action", EventType: PostAction, SessionID: "s-1", AgentID: "agent-7",
		Timestamp: time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC), Depth: 1,
		Payload: &ActionPayload{
			ActionID: "act-1", Action: "workspace_read_file", Tenant: "acme", TaskID: "t-1", StepID: "3",
			Principal: "alice", Trusted: true,
			Observation: &ObservationSummary{Source: "workspace", Status: "ok", LatencyMS: 0.4, PayloadKeys: []string{"content", "sha256"}},
		},
	}
	got, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimSpace(want)) {
		t.Fatalf("event JSON changed:\n got %s\nwant %s", got, want)
	}
	var back Event
	if err := json.Unmarshal(want, &back); err != nil {
		t.Fatal(err)
	}
	if back.Payload.Observation.PayloadKeys[1] != "sha256" || back.Depth != 1 || back.EventType != PostAction {
		t.Fatalf("round trip: %+v", back)
	}
}

// TestCanonicalValueMatchesJSON: the audit log hashes action.Canonical of
// an event; the fast CanonicalValue path must give exactly the bytes the
// JSON round trip gives.
func TestCanonicalValueMatchesJSON(t *testing.T) {
	ts := time.Date(2026, 11, 21, 23, 0, 0, 123456789, time.UTC)
	cases := map[string]Event{
		"empty":      {},
		"no payload": {Version: Version, EventID: "e", EventType: PreAction, Timestamp: ts},
		"full": {Version: Version, EventID: "act-1.post_action", EventType: PostAction, SessionID: "s", AgentID: "a", Timestamp: ts, Depth: 2,
			Payload: &ActionPayload{ActionID: "act-1", Action: "x", Tenant: "t", TaskID: "k", StepID: "3", Principal: "p", Trusted: true,
				Input:       map[string]any{"n": json.Number("1.50"), "f": 0.1, "s": "é\u2028<\x00>", "l": []any{true, nil, "x"}, "tags": []string{"b", "a"}},
				Observation: &ObservationSummary{Source: "workspace", Status: "error", Code: "timeout", LatencyMS: 12.345, Message: "m", PayloadKeys: []string{"stdout"}}}},
		"sparse": {EventType: Error, Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
			Payload: &ActionPayload{Action: "y", Observation: &ObservationSummary{PayloadKeys: []string{}}}},
		"bad utf8": {EventID: "\xff\xfe", Payload: &ActionPayload{Input: map[string]any{"\xff": "a\xffb"}}},
		"governed and redacted": {EventType: PostAction, Timestamp: ts, Payload: &ActionPayload{Action: "z",
			Observation: &ObservationSummary{Status: "ok", Redacted: &Redaction{Count: 3, Markers: []string{"hmac-sha256:00", "hmac-sha256:ff"}}},
			Governance: Governance{By: "session", ActionHash: "ab", Counted: true, Actions: 9, Errors: 2, ConsecutiveErrors: 1,
				Refusals: 4, ConsecutiveRefusals: 0, Risk: 1 << 40, WallMS: 1234, BytesWritten: 5, CommandMS: 6, Repeats: 2, FailingRepeats: 1,
				Remaining: remaining(map[string]int64{"max-actions": 0, "max-risk": 7, "max-bytes-written": 1 << 50})}}},
		"governance, no budgets": {Payload: &ActionPayload{Governance: Governance{By: "principal"}, Observation: &ObservationSummary{Redacted: &Redaction{}}}},
	}
	for name, ev := range cases {
		t.Run(name, func(t *testing.T) { testkit.CanonicalMatchesJSON(t, ev) })
	}
}

func remaining(m map[string]int64) Remaining {
	var r Remaining
	for k, v := range m {
		r.Set(k, v)
	}
	return r
}

func TestRemainingRoundTrips(t *testing.T) {
	r := remaining(map[string]int64{"max-actions": 0, "max-wall-seconds": 30, "unknown": 5})
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != `{"max-actions":0,"max-wall-seconds":30}` {
		t.Fatalf("JSON %s", data)
	}
	var back Remaining
	if err := json.Unmarshal(data, &back); err != nil || back != r {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if v, ok := back.Get("max-actions"); !ok || v != 0 {
		t.Fatal("an exhausted budget reads as unset")
	}
	if _, ok := back.Get("max-risk"); ok {
		t.Fatal("an unset budget reads as set")
	}
	ev, _ := json.Marshal(Event{Payload: &ActionPayload{}})
	if bytes.Contains(ev, []byte("governance")) {
		t.Fatalf("an event without governance records it: %s", ev)
	}
}
