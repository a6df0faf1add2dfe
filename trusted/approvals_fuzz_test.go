package trusted

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

// FuzzApprovalDecisionBody sends arbitrary bodies and wait values to the
// approval routes. Whatever arrives, the answer is JSON with an allowed
// status, never a 500; the approval changes only on a 200, and then to
// the decision the route names.
func FuzzApprovalDecisionBody(f *testing.F) {
	for _, s := range []string{
		`{"scope":"once"}`, `{"scope":"session","reason":"ok"}`, `{}`, ``, `{"reason":"no"}`,
		`{"scope":"forever"}`, `{"scope":5}`, `{not json`, `[]`, `null`, `{"scope":"once"} trailing`,
		`{"reason":"` + strings.Repeat("r", 1100) + `"}`, "\x00\xff", `{"scope":"once","extra":1}`,
	} {
		f.Add(s, true, "1")
		f.Add(s, false, "")
	}
	f.Add("", true, "-1")
	f.Add("", false, "NaN")
	f.Add("", true, "1e309")
	fx := newApprFixture(f, apprOpts{})
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, body string, approve bool, wait string) {
		ctx := runtime.WithPrincipal(context.Background(), "alice")
		// A new action each time: an earlier session-scoped approval must
		// not answer it.
		content := fmt.Sprintf("z%d\n", n.Add(1))
		obs := fx.Harness.Execute(ctx, action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": content}, SessionID: "fz"})
		if obs.Approval == nil {
			t.Fatalf("no approval: %+v", obs)
		}
		id := obs.Approval.ID
		verb, want := "deny", ApprovalDenied
		if approve {
			verb, want = "approve", ApprovalApproved
		}
		req := httptest.NewRequest("POST", "/v1/approvals/"+id+"/"+verb, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+keyApprover)
		w := httptest.NewRecorder()
		fx.Server.ServeHTTP(w, req)
		switch w.Code {
		case 200, 400, 413:
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body.String())
		}
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q", w.Body.String())
		}
		v, err := fx.Service.GetApproval(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if w.Code == 200 && v.Status != want || w.Code != 200 && v.Status != ApprovalPending {
			t.Fatalf("status %d left the approval %s", w.Code, v.Status)
		}

		// A pending approval's wait is cut short by the request's context.
		rctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		req = httptest.NewRequestWithContext(rctx, "GET", "/v1/approvals/"+id+"?wait="+url.QueryEscape(wait), nil)
		req.Header.Set("Authorization", "Bearer "+keyApprover)
		w = httptest.NewRecorder()
		fx.Server.ServeHTTP(w, req)
		switch w.Code {
		case 200, 400:
		default:
			t.Fatalf("status %d for wait %q: %s", w.Code, wait, w.Body.String())
		}
	})
}
