package ahp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// sameJSON reports whether a and b hold the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("bad JSON %s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("bad JSON %s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// wireTypes names the types testdata/wire/cases.json exercises.
var wireTypes = map[string]func() any{
	"Decision": func() any { return new(Decision) }, "HandshakeRequest": func() any { return new(HandshakeRequest) },
	"HandshakeResponse": func() any { return new(HandshakeResponse) }, "QueryRequest": func() any { return new(QueryRequest) },
	"QueryResponse": func() any { return new(QueryResponse) }, "BatchResponse": func() any { return new(BatchResponse) },
	"WireEvent": func() any { return new(WireEvent) }, "RunLifecyclePayload": func() any { return new(RunLifecyclePayload) },
	"TaskListPayload": func() any { return new(TaskListPayload) }, "VerificationPayload": func() any { return new(VerificationPayload) },
	"IdleDecision": func() any { return new(IdleDecision) }, "RateLimitDecision": func() any { return new(RateLimitDecision) },
	"ConfirmationDecision": func() any { return new(ConfirmationDecision) }, "ContextPerceptionDecision": func() any { return new(ContextPerceptionDecision) },
	"MemoryRecallDecision": func() any { return new(MemoryRecallDecision) }, "PlanningDecision": func() any { return new(PlanningDecision) },
	"ReasoningDecision": func() any { return new(ReasoningDecision) }, "IntentDetectionDecision": func() any { return new(IntentDetectionDecision) },
	"ContextPerceptionPayload": func() any { return new(ContextPerceptionPayload) }, "ReasoningPayload": func() any { return new(ReasoningPayload) },
	"RateLimitPayload": func() any { return new(RateLimitPayload) }, "ConfirmationPayload": func() any { return new(ConfirmationPayload) },
	"HeartbeatPayload": func() any { return new(HeartbeatPayload) },
}

// TestWireShapes decodes every case of testdata/wire/cases.json into its
// type and writes it back: the output must be the case's "out" (its "in"
// when absent), or decoding must fail with "err". The cases were checked
// by hand against the reference implementation's serde definitions.
func TestWireShapes(t *testing.T) {
	data, err := os.ReadFile("testdata/wire/cases.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name string
		Type string
		In   json.RawMessage
		Out  json.RawMessage
		Err  string
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			mk, ok := wireTypes[c.Type]
			if !ok {
				t.Fatalf("unknown type %s", c.Type)
			}
			v := mk()
			err := decodeParams(c.In, v)
			if c.Err != "" {
				if err == nil || !strings.Contains(err.Error(), c.Err) {
					t.Fatalf("decode %s: err %v, want %q", c.In, err, c.Err)
				}
				return
			}
			if err != nil {
				t.Fatalf("decode %s: %v", c.In, err)
			}
			got, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			want := c.Out
			if want == nil {
				want = c.In
			}
			if !sameJSON(t, got, want) {
				t.Fatalf("round trip:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestReadmeMessages decodes the messages of the reference's README
// (testdata/wire/readme_*.json) and writes them back unchanged (or as the
// .out.json beside them, where the reference drops an empty list too).
func TestReadmeMessages(t *testing.T) {
	files, _ := filepath.Glob("testdata/wire/readme_*.json")
	for _, f := range files {
		if strings.HasSuffix(f, ".out.json") {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := in
			if out, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".out.json"); err == nil {
				want = out
			}
			m, perr := parseMessage(in)
			var got []byte
			switch {
			case perr == nil && m.hasID():
				var ev WireEvent
				if err := json.Unmarshal(m.Params, &ev); err != nil {
					t.Fatal(err)
				}
				if err := ValidatePayload(ev.EventType, ev.Payload); err != nil {
					t.Fatal(err)
				}
				p, _ := json.Marshal(ev)
				got = appendRequest(nil, string(mustString(t, m.ID)), *m.Method, p)
			case perr == nil:
				var ev WireEvent
				if err := json.Unmarshal(m.Params, &ev); err != nil {
					t.Fatal(err)
				}
				if err := ValidatePayload(ev.EventType, ev.Payload); err != nil {
					t.Fatal(err)
				}
				if p, err := canonicalPayload(ev); err == nil {
					ev.Payload = p
				} else {
					t.Fatal(err)
				}
				p, _ := json.Marshal(ev)
				got = appendRequest(nil, "", *m.Method, p)
			default:
				var resp struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      string          `json:"id"`
					Result  json.RawMessage `json:"result"`
				}
				if err := json.Unmarshal(in, &resp); err != nil {
					t.Fatal(err)
				}
				var d Decision
				if err := json.Unmarshal(resp.Result, &d); err != nil {
					t.Fatal(err)
				}
				r, _ := json.Marshal(d)
				got = appendResult(nil, json.RawMessage(`"`+resp.ID+`"`), r)
			}
			if !sameJSON(t, got, want) {
				t.Fatalf("round trip:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func mustString(t *testing.T, raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// canonicalPayload re-encodes the payload of a contract event through its
// type, as the reference does when it re-sends one.
func canonicalPayload(ev WireEvent) (json.RawMessage, error) {
	var v any
	switch ev.EventType {
	case RunLifecycle:
		v = new(RunLifecyclePayload)
	case TaskList:
		v = new(TaskListPayload)
	case Verification:
		v = new(VerificationPayload)
	default:
		return ev.Payload, nil
	}
	if err := decodeStrict(ev.Payload, v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// TestEventTypeClasses pins which event types block, which are
// specialized and which may be batched.
func TestEventTypeClasses(t *testing.T) {
	blocking := "pre_action pre_prompt idle intent_detection context_perception memory_recall planning reasoning rate_limit confirmation handshake query"
	specialized := "idle intent_detection context_perception memory_recall planning reasoning rate_limit confirmation"
	notifications := "post_action post_response session_start session_end error heartbeat success run_lifecycle task_list verification"
	for _, name := range strings.Fields(blocking) {
		if et := EventType(name); !et.IsBlocking() || !et.Known() {
			t.Errorf("%s should block", name)
		}
	}
	for _, name := range strings.Fields(specialized) {
		if et := EventType(name); !et.IsSpecialized() || et.IsBatchable() {
			t.Errorf("%s should be specialized and not batchable", name)
		}
	}
	for _, name := range strings.Fields(notifications) {
		if et := EventType(name); et.IsBlocking() || !et.IsBatchable() {
			t.Errorf("%s should be a batchable notification", name)
		}
	}
	for _, et := range []EventType{HandshakeEvent, QueryEvent} {
		if et.IsBatchable() {
			t.Errorf("%s must not be batchable", et)
		}
	}
	if n := len(strings.Fields(blocking)) + len(strings.Fields(notifications)); n != len(eventClasses) {
		t.Errorf("%d types listed, %d known", n, len(eventClasses))
	}
	if EventType("pre_tool_use").Known() {
		t.Error("legacy v1 type known")
	}
}

func TestCompatibleVersion(t *testing.T) {
	for v, want := range map[string]bool{"2": true, "2.0": true, "2.3": true, "2.4": true, "2.4.1": true,
		"1.0": false, "3.0": false, "": false, "20": false, "v2": false} {
		if got := CompatibleVersion(v); got != want {
			t.Errorf("CompatibleVersion(%q) = %v, want %v", v, got, want)
		}
	}
}
