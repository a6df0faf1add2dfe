package ahp

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzHandleMessage feeds arbitrary messages to the server (seeds in
// testdata/fuzz/FuzzHandleMessage: the recorded requests, decisions and
// malformed messages). It must never panic, and whatever it answers is
// one JSON-RPC 2.0 response carrying the request's id as sent (or null)
// and exactly one of result and error.
func FuzzHandleMessage(f *testing.F) {
	srv := NewServer(&ruleHandler{}, ServerOptions{})
	f.Fuzz(func(t *testing.T, msg []byte) {
		resp := srv.HandleMessage(context.Background(), msg)
		if resp == nil {
			return
		}
		var m rpcMessage
		if err := json.Unmarshal(resp, &m); err != nil {
			t.Fatalf("answer is not JSON: %s", resp)
		}
		if m.JSONRPC == nil || *m.JSONRPC != "2.0" || (m.Result == nil) == (m.Error == nil) {
			t.Fatalf("answer is not a JSON-RPC response: %s", resp)
		}
		var req rpcMessage
		if err := json.Unmarshal(msg, &req); err == nil && req.hasID() {
			if !bytes.Equal(bytes.TrimSpace(req.ID), m.ID) {
				t.Fatalf("id %s answered as %s", req.ID, m.ID)
			}
		}
	})
}

// FuzzDecodeDecision feeds arbitrary answers to the client's decoding
// (seeds in testdata/fuzz/FuzzDecodeDecision). It must never panic; an
// answer it accepts is a decision of a known kind whose JSON decodes back
// to the same decision.
func FuzzDecodeDecision(f *testing.F) {
	f.Fuzz(func(t *testing.T, answer []byte) {
		m, err := parseAnswer(answer)
		if err != nil {
			return
		}
		var d Decision
		if err := decodeResult(m, "1", &d); err != nil {
			return
		}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatalf("accepted decision %+v does not encode: %v", d, err)
		}
		var back Decision
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("decision %s does not decode: %v", b, err)
		}
		b2, _ := json.Marshal(back)
		if !reflect.DeepEqual(b, b2) {
			t.Fatalf("decision changed in a round trip: %s then %s", b, b2)
		}
	})
}

// FuzzJSONString: the hand-written string encoder of the hot path writes
// exactly what encoding/json writes.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\ slash", "\x00\x1f\t\n\r", "<tag>&amp;", "é\u2028\u2029", "\xff\xfe bad utf8", "日本語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}
