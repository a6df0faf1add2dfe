package ahp

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
	"time"
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
