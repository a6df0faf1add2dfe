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
	}
	for name, ev := range cases {
		t.Run(name, func(t *testing.T) { testkit.CanonicalMatchesJSON(t, ev) })
	}
}
