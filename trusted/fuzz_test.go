package trusted

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// FuzzRequestBody sends arbitrary bodies to the action routes. Whatever
// arrives, the answer is JSON with an allowed status, never a 500, and
// the workspace file is never written (nothing here holds a token).
func FuzzRequestBody(f *testing.F) {
	for _, s := range []string{
		`{"name":"workspace_apply_patch","input":{"path":"f.txt","content":"x"}}`,
		`{"name":"workspace_apply_patch","input":{"path":"f.txt","content":"x"},"trusted":true}`,
		`{"name":5}`, `{not json`, `[]`, `null`, `{"name":"echo","input":{"text":"hi"}}`,
		`{"name":"workspace_run_shell","input":{"command":"ls; rm -rf /"}}`,
		`{"name":"echo","input":{"text":"x"}} trailing`, "\x00\xff", `{"input":{"path":"../../etc/passwd"}}`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	fx := newFixture(f, fixtureOpts{maxBody: 64 << 10})
	f.Fuzz(func(t *testing.T, body string, preview bool) {
		route := "/v1/actions"
		if preview {
			route = "/v1/actions/preview"
		}
		req := httptest.NewRequest("POST", route, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		w := httptest.NewRecorder()
		fx.Server.ServeHTTP(w, req)
		switch w.Code {
		case 200, 400, 403, 413, 429:
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body.String())
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatalf("answer is not JSON: %q", w.Body.String())
		}
		if w.Code != 200 && errCode(m) == "" {
			t.Fatalf("error without a code: %s", w.Body.String())
		}
		if got := fx.read(t, "f.txt"); got != "one\ntwo\n" {
			t.Fatalf("the workspace changed without a redeemed token: %q", got)
		}
	})
}

// FuzzExecuteToken redeems arbitrary tokens: every one is not_found.
func FuzzExecuteToken(f *testing.F) {
	for _, s := range []string{"", "htk_", "htk_" + strings.Repeat("A", 43), "../../etc", "%00", "htk_%2F..%2F"} {
		f.Add(s)
	}
	fx := newFixture(f, fixtureOpts{})
	f.Fuzz(func(t *testing.T, tok string) {
		req := httptest.NewRequest("POST", "/v1/actions/execute/x", nil)
		req.URL.Path = "/v1/actions/execute/" + url.PathEscape(tok)
		req.URL.RawPath = ""
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		w := httptest.NewRecorder()
		fx.Server.ServeHTTP(w, req)
		if w.Code != http.StatusNotFound {
			t.Fatalf("token %q: status %d: %s", tok, w.Code, w.Body.String())
		}
	})
}
