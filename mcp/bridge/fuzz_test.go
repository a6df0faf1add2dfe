package bridge

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

// FuzzVerifyState: no request state that this process did not sign for the
// action is accepted, and none makes it panic.
func FuzzVerifyState(f *testing.F) {
	s := &Server{key: []byte("0123456789abcdef0123456789abcdef")}
	hash := strings.Repeat("ab", 32)
	// Built like signState, with a fixed nonce, so that every fuzzing
	// worker knows the one state that must verify.
	head := "v1.1700000000." + strings.Repeat("0", 32) + "." + strings.Repeat("cd", 32)
	good := head + "." + s.mac(head, hash)
	f.Add(good)
	f.Add("v1.1700000000.00.00.00")
	f.Add("")
	f.Add("....")
	f.Fuzz(func(t *testing.T, state string) {
		_, _, ok := s.verifyState(state, hash, time.Unix(1_700_000_100, 0))
		if ok && state != good {
			t.Fatalf("accepted a state it did not sign: %q", state)
		}
	})
}

// FuzzRender: rendering never panics, whatever a runtime put in a payload.
func FuzzRender(f *testing.F) {
	f.Add("matches", "path", "x")
	f.Add("entries", "type", "dir")
	f.Add("diff", "", "")
	f.Add("argv", "a", "b")
	f.Fuzz(func(t *testing.T, key, k2, v string) {
		payloads := []map[string]any{
			{key: v},
			{key: []any{map[string]any{k2: v}, v, nil}},
			{key: []map[string]any{{k2: v}}},
			{key: []string{v}, "content": v, "path": k2},
		}
		for _, p := range payloads {
			_ = Render(action.Observation{Status: action.StatusOK, Payload: p})
			_ = Render(action.Observation{Status: action.StatusError, Code: action.CodeInternal, Message: v, Payload: p})
			_ = renderPreview(p)
		}
	})
}

// FuzzStdioClassification: the line classifier never panics, and a line is
// a request only with a method, a response only without one and with a
// result or an error.
func FuzzStdioClassification(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	f.Add(`{"jsonrpc":"2.0","id":"x","result":{}}`)
	f.Add(`{"jsonrpc":"2.0","id":1,"result":{},"method":"x"}`)
	f.Fuzz(func(t *testing.T, line string) {
		m, kind := classify([]byte(line))
		if kind == kindRequest && m.Method == "" {
			t.Fatalf("a request without a method: %q", line)
		}
		if kind == kindResponse && (m.Method != "" || (m.Result == nil && m.Error == nil)) {
			t.Fatalf("a response with a method or without a result or error: %q", line)
		}
	})
}

// FuzzClassifyMatchesDecoder: the transport's scan of a line's envelope
// reads it as encoding/json does, field for field, or leaves it to
// encoding/json.
func FuzzClassifyMatchesDecoder(f *testing.F) {
	for _, c := range classifyCases {
		f.Add(c.line)
	}
	f.Fuzz(func(t *testing.T, line string) {
		gotM, gotK := classify([]byte(line))
		wantM, wantK := classifyDecoded([]byte(line))
		if gotK != wantK || !reflect.DeepEqual(gotM, wantM) {
			t.Fatalf("%q: scanned as %v %+v, decoded as %v %+v", line, gotK, gotM, wantK, wantM)
		}
	})
}
