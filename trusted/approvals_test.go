package trusted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
)

// Keys of the approvals fixture.
const (
	keyAgent    = "test-key-agent-a001"    // alice: agent:execute, agent:trusted
	keyApprover = "test-key-approver-a002" // rita: agent:approve, agent:audit
	keySelf     = "test-key-self-a003"     // sam: execute, trusted and approve
	keyTenantA  = "test-key-tina-a004"     // tina, tenant t1: agent:approve
	keyExecOnly = "test-key-bob-a005"      // bob: agent:execute only
)

// askPatches is the guard step of the approvals fixture: a person
// approves every patch.
var askPatches = policy.Step{Name: "ask-patches", Fn: func(_ context.Context, req *policy.Request) policy.Decision {
	if req.Action.Name == "workspace_apply_patch" {
		return policy.AskWith("a person looks at every patch")
	}
	return policy.Decision{}
}}

type apprFixture struct {
	URL       string
	Root      string
	AuditPath string
	Service   *Service
	Server    *Server
	Harness   *runtime.Harness
	Store     ApprovalStore
	Clock     *fakeClock
}

type apprOpts struct {
	store     ApprovalStore // nil: a memory store on the fixture's clock
	tokens    TokenStore
	allowSelf bool
	root      string // shared workspace root (replicas); "" a new one
}

// newApprFixture serves a real Harness whose guard asks about every
// patch, an approvals store, a JSONL audit log and the approval routes.
func newApprFixture(t testing.TB, o apprOpts) *apprFixture {
	t.Helper()
	dir := t.TempDir()
	root := o.root
	if root == "" {
		root = filepath.Join(dir, "root")
		require.NoError(t, os.MkdirAll(root, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\ntwo\n"), 0o644))
	}
	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	cfg.Harness.Workspace.Sandbox = "off"
	cfg.Harness.Auth.Keys = []config.AuthKey{
		{Principal: "alice", SHA256: sha(keyAgent), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "rita", SHA256: sha(keyApprover), Permissions: []string{"agent:approve", "agent:audit"}},
		{Principal: "sam", SHA256: sha(keySelf), Permissions: []string{"agent:execute", "agent:trusted", "agent:approve"}},
		{Principal: "tina", Tenant: "t1", SHA256: sha(keyTenantA), Permissions: []string{"agent:approve"}},
		{Principal: "bob", SHA256: sha(keyExecOnly), Permissions: []string{"agent:execute"}},
	}
	san, err := sanitize.New(sanitize.Options{Key: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	auditPath := filepath.Join(dir, "audit.jsonl")
	alog, err := audit.OpenJSONL(auditPath)
	require.NoError(t, err)
	t.Cleanup(func() { alog.Close() })
	clock := &fakeClock{t: time.Now()}
	store := o.store
	if store == nil {
		m := NewMemoryApprovalsWith(ApprovalStoreOptions{TTL: time.Minute})
		m.now = clock.Now
		store = m
	}
	audited := AuditedApprovals(store, alog)
	logger := slog.New(slog.DiscardHandler)
	h, ws, err := runtime.Build(cfg, runtime.BuildOptions{
		Sanitizer: san, Recorder: runtime.AuditRecorder(alog), Logger: logger,
		Steps: policy.Steps{Validating: []policy.Step{askPatches}}, Approvals: audited,
	})
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	svc, err := NewService(Options{
		Harness: h, Store: o.tokens, Audit: alog, Now: clock.Now, Logger: logger,
		Approvals: audited, AllowSelfApproval: o.allowSelf,
	})
	require.NoError(t, err)
	t.Cleanup(func() { svc.Close() })
	keys, err := NewKeys(cfg.Harness.Auth.Keys)
	require.NoError(t, err)
	srv, err := NewServer(ServerOptions{Service: svc, Keys: keys, Logger: logger})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &apprFixture{URL: ts.URL, Root: root, AuditPath: auditPath, Service: svc, Server: srv, Harness: h, Store: store, Clock: clock}
}

func (f *apprFixture) read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Root, name))
	require.NoError(t, err)
	return string(b)
}

// ask posts a patch as the agent and returns the approval's id.
func (f *apprFixture) ask(t testing.TB, key, path, content, session string) string {
	t.Helper()
	a := map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": path, "content": content}, "session_id": session}
	st, obs := call(t, "POST", f.URL+"/v1/actions", key, a)
	require.Equal(t, 200, st, "%v", obs)
	require.Equal(t, "needs_confirmation", obs["status"], "%v", obs)
	require.Equal(t, "approval_required", obs["code"])
	ap, _ := obs["approval"].(map[string]any)
	id, _ := ap["id"].(string)
	require.NotEmpty(t, id)
	return id
}

// auditRecords returns the audit log's records of kind.
func auditRecords(t testing.TB, path, kind string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		ev, _ := rec["event"].(map[string]any)
		if ev == nil {
			continue
		}
		if k, _ := ev["kind"].(string); k == kind {
			out = append(out, ev)
		}
	}
	return out
}

func TestApprovalFlowAskApproveTokenRunsExactlyTheChange(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyAgent, "f.txt", "one\nTWO\n", "s1")

	// The approver sees it, newest first, with its diff.
	st, body := call(t, "GET", f.URL+"/v1/approvals?status=pending", keyApprover, nil)
	require.Equal(t, 200, st)
	list, _ := body["approvals"].([]any)
	require.Len(t, list, 1)
	item := list[0].(map[string]any)
	require.Equal(t, id, item["id"])
	require.Equal(t, "alice", item["principal"])
	require.Equal(t, "s1", item["session_id"])
	require.Contains(t, mustJSON(t, item["preview"]), "TWO")
	require.Equal(t, "ask-patches", item["decision"].(map[string]any)["step"])

	// The requester's poll: pending, no token.
	st, body = call(t, "GET", f.URL+"/v1/approvals/"+id+"?wait=0.05", keyAgent, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "pending", body["status"])
	require.Nil(t, body["token"])

	// A long poll returns as soon as the approver decides.
	type answer struct {
		st   int
		body map[string]any
	}
	polled := make(chan answer, 1)
	go func() {
		st, body := call(t, "GET", f.URL+"/v1/approvals/"+id+"?wait=30", keyAgent, nil)
		polled <- answer{st, body}
	}()
	time.Sleep(50 * time.Millisecond)
	st, body = call(t, "POST", f.URL+"/v1/approvals/"+id+"/approve", keyApprover, map[string]any{"scope": "once", "reason": "fine"})
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "approved", body["status"])
	require.Equal(t, "rita", body["decided_by"])
	require.Equal(t, "api", body["method"])
	var a answer
	select {
	case a = <-polled:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not return after the approval")
	}
	require.Equal(t, 200, a.st)
	require.Equal(t, "approved", a.body["status"])
	tok, _ := a.body["token"].(string)
	require.NotEmpty(t, tok)

	// The token is handed out once.
	st, body = call(t, "GET", f.URL+"/v1/approvals/"+id, keyAgent, nil)
	require.Equal(t, 200, st)
	require.Nil(t, body["token"])
	require.Equal(t, true, body["claimed"])

	require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"), "nothing runs before execute")
	st, obs := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAgent, nil)
	require.Equal(t, 200, st, "%v", obs)
	require.Equal(t, "ok", obs["status"])
	require.Equal(t, "one\nTWO\n", f.read(t, "f.txt"))
	st, _ = call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAgent, nil)
	require.Equal(t, 404, st)

	// The audit log: request, approval (approver, method, hash), the
	// token, and the run's events naming the approval.
	recs := auditRecords(t, f.AuditPath, "approval")
	require.Len(t, recs, 2)
	require.Equal(t, "requested", recs[0]["event"])
	require.Equal(t, "approved", recs[1]["event"])
	require.Equal(t, "rita", recs[1]["approver"])
	require.Equal(t, "api", recs[1]["method"])
	require.Equal(t, "once", recs[1]["scope"])
	require.Equal(t, id, recs[1]["approval_id"])
	require.Equal(t, item["action_hash"], recs[1]["action_hash"])
	toks := auditRecords(t, f.AuditPath, "trusted_token")
	require.Len(t, toks, 1)
	require.Equal(t, id, toks[0]["approval_id"])
	data, err := os.ReadFile(f.AuditPath)
	require.NoError(t, err)
	runID := toks[0]["action_id"].(string)
	linked := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"action_id":"`+runID+`"`) && strings.Contains(line, `"approval_id":"`+id+`"`) {
			linked++
		}
	}
	require.GreaterOrEqual(t, linked, 2, "the run's pre_action and post_action name the approval")
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestApprovalDenyIsSeenAndNothingRuns(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyAgent, "f.txt", "changed\n", "s1")
	st, body := call(t, "POST", f.URL+"/v1/approvals/"+id+"/deny", keyApprover, map[string]any{"reason": "no"})
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "denied", body["status"])
	st, body = call(t, "GET", f.URL+"/v1/approvals/"+id, keyAgent, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "denied", body["status"])
	require.Equal(t, "approval_denied", body["code"])
	require.Equal(t, "no", body["reason"])
	require.Nil(t, body["token"])
	require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"))
	// The library call answers approval_denied.
	obs, err := f.Service.AwaitApproval(context.Background(), Principal{Name: "alice"}, id)
	require.NoError(t, err)
	require.Equal(t, action.CodeApprovalDenied, obs.Code)
	require.Contains(t, obs.Message, "rita")
	recs := auditRecords(t, f.AuditPath, "approval")
	require.Equal(t, "denied", recs[len(recs)-1]["event"])
	require.Equal(t, "no", recs[len(recs)-1]["reason"])
}

func TestApprovalBadRequestsChangeNothing(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keySelf, "f.txt", "x\n", "s1")
	url := f.URL + "/v1/approvals/" + id
	cases := []struct {
		name, method, path, key string
		body                    any
		status                  int
		code                    string
	}{
		{"unauthenticated list", "GET", "/v1/approvals", "", nil, 401, "unauthorized"},
		{"unauthenticated approve", "POST", "/approve", "", map[string]any{}, 401, "unauthorized"},
		{"list without agent:approve", "GET", "/v1/approvals", keyAgent, nil, 403, "forbidden"},
		{"approve without agent:approve", "POST", "/approve", keyAgent, map[string]any{}, 403, "forbidden"},
		{"self-approval", "POST", "/approve", keySelf, map[string]any{"scope": "once"}, 403, "forbidden"},
		{"self-denial", "POST", "/deny", keySelf, map[string]any{}, 403, "forbidden"},
		{"oversized reason", "POST", "/approve", keyApprover, map[string]any{"reason": strings.Repeat("r", MaxApprovalReasonBytes+1)}, 400, "invalid_input"},
		{"unknown scope", "POST", "/approve", keyApprover, map[string]any{"scope": "forever"}, 400, "invalid_input"},
		{"a denial with a scope", "POST", "/deny", keyApprover, map[string]any{"scope": "once"}, 400, "invalid_input"},
		{"unknown field", "POST", "/approve", keyApprover, map[string]any{"scope": "once", "by": "me"}, 400, "invalid_input"},
		{"not JSON", "POST", "/approve", keyApprover, "{", 400, "invalid_json"},
		{"unknown approval", "POST", "/v1/approvals/apr_nope/approve", keyApprover, map[string]any{}, 404, "not_found"},
		{"unknown approval read", "GET", "/v1/approvals/apr_nope", keyApprover, nil, 404, "not_found"},
		{"another principal's read", "GET", "", keyAgent, nil, 404, "not_found"},
		{"another tenant's approver", "POST", "/approve", keyTenantA, map[string]any{}, 404, "not_found"},
		{"bad wait", "GET", "?wait=soon", keySelf, nil, 400, "invalid_input"},
		{"bad status", "GET", "/v1/approvals?status=maybe", keyApprover, nil, 400, "invalid_input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			u := url + c.path
			if strings.HasPrefix(c.path, "/v1/") {
				u = f.URL + c.path
			}
			st, body := call(t, c.method, u, c.key, c.body)
			require.Equal(t, c.status, st, "%v", body)
			require.Equal(t, c.code, errCode(body))
			v, err := f.Service.GetApproval(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, ApprovalPending, v.Status, "nothing changed")
		})
	}
	// Decided: 409, the decision stays.
	st, _ := call(t, "POST", url+"/deny", keyApprover, map[string]any{"reason": "no"})
	require.Equal(t, 200, st)
	st, body := call(t, "POST", url+"/approve", keyApprover, map[string]any{})
	require.Equal(t, 409, st)
	require.Equal(t, "already_decided", errCode(body))
	v, err := f.Service.GetApproval(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, ApprovalDenied, v.Status)
	require.Len(t, auditRecords(t, f.AuditPath, "approval"), 2, "request and the one denial")
}

func TestApprovalSelfApprovalWhenTheConfigAllowsIt(t *testing.T) {
	f := newApprFixture(t, apprOpts{allowSelf: true})
	id := f.ask(t, keySelf, "f.txt", "mine\n", "s1")
	st, body := call(t, "POST", f.URL+"/v1/approvals/"+id+"/approve", keySelf, map[string]any{})
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "sam", body["decided_by"])
	require.Equal(t, "once", body["scope"])
}

func TestApprovalExpiresToApprovalExpired(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyAgent, "f.txt", "late\n", "s1")
	f.Clock.Advance(2 * time.Minute)
	st, body := call(t, "POST", f.URL+"/v1/approvals/"+id+"/approve", keyApprover, map[string]any{})
	require.Equal(t, 409, st)
	require.Equal(t, "approval_expired", errCode(body))
	st, body = call(t, "GET", f.URL+"/v1/approvals/"+id, keyAgent, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "expired", body["status"])
	require.Equal(t, "approval_expired", body["code"])
	require.Nil(t, body["token"])
	obs, err := f.Service.AwaitApproval(context.Background(), Principal{Name: "alice"}, id)
	require.NoError(t, err)
	require.Equal(t, action.CodeApprovalExpired, obs.Code)
	require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"))
	recs := auditRecords(t, f.AuditPath, "approval")
	require.Len(t, recs, 2, "one request, one expiry")
	require.Equal(t, "expired", recs[1]["event"])

	// A sweep expires what nobody looks at, once.
	id2 := f.ask(t, keyAgent, "f.txt", "later\n", "s1")
	f.Clock.Advance(2 * time.Minute)
	n, err := f.Service.ExpireApprovals(context.Background())
	require.NoError(t, err)
	require.Equal(t, 1, n)
	n, err = f.Service.ExpireApprovals(context.Background())
	require.NoError(t, err)
	require.Equal(t, 0, n)
	v, err := f.Service.GetApproval(context.Background(), id2)
	require.NoError(t, err)
	require.Equal(t, ApprovalExpired, v.Status)
}

func TestApprovalSessionScopeAnswersTheSameActionInTheSession(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyAgent, "f.txt", "one\nTWO\n", "s1")
	st, body := call(t, "POST", f.URL+"/v1/approvals/"+id+"/approve", keyApprover, map[string]any{"scope": "session"})
	require.Equal(t, 200, st, "%v", body)

	// The same action in the same session runs without a new approval.
	a := map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": "f.txt", "content": "one\nTWO\n"}, "session_id": "s1"}
	st, obs := call(t, "POST", f.URL+"/v1/actions", keyAgent, a)
	require.Equal(t, 200, st)
	require.Equal(t, "ok", obs["status"], "%v", obs)
	require.Equal(t, "one\nTWO\n", f.read(t, "f.txt"))
	pending, err := f.Service.ListApprovals(context.Background(), ApprovalPending)
	require.NoError(t, err)
	require.Empty(t, pending)

	// Another session, or another action, asks again.
	f.ask(t, keyAgent, "f.txt", "one\nTWO\n", "s2")
	f.ask(t, keyAgent, "f.txt", "three\n", "s1")
	// Approving for the session needs a session.
	id3 := f.ask(t, keyAgent, "f.txt", "four\n", "")
	st, body = call(t, "POST", f.URL+"/v1/approvals/"+id3+"/approve", keyApprover, map[string]any{"scope": "session"})
	require.Equal(t, 400, st, "%v", body)
}

func TestApprovalStaleFileAfterApprovalIs409(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyAgent, "f.txt", "one\nTWO\n", "s1")
	st, _ := call(t, "POST", f.URL+"/v1/approvals/"+id+"/approve", keyApprover, map[string]any{})
	require.Equal(t, 200, st)
	st, body := call(t, "GET", f.URL+"/v1/approvals/"+id, keyAgent, nil)
	require.Equal(t, 200, st)
	tok := body["token"].(string)
	require.NoError(t, os.WriteFile(filepath.Join(f.Root, "f.txt"), []byte("someone else\n"), 0o644))
	st, body = call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAgent, nil)
	require.Equal(t, 409, st)
	require.Equal(t, "stale_preview", errCode(body))
	require.Equal(t, "someone else\n", f.read(t, "f.txt"))
}

func TestApprovalTokenOnlyForARequesterThatMayRedeem(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyExecOnly, "f.txt", "bob's\n", "s1")
	st, _ := call(t, "POST", f.URL+"/v1/approvals/"+id+"/approve", keyApprover, map[string]any{})
	require.Equal(t, 200, st)
	// The approver sees the decision, never a token.
	st, body := call(t, "GET", f.URL+"/v1/approvals/"+id, keyApprover, nil)
	require.Equal(t, 200, st)
	require.Nil(t, body["token"])
	// bob cannot redeem a token, so none is claimed for him...
	st, body = call(t, "GET", f.URL+"/v1/approvals/"+id, keyExecOnly, nil)
	require.Equal(t, 200, st)
	require.Nil(t, body["token"])
	require.Nil(t, body["claimed"])
	// ...and his library call runs it.
	obs, err := f.Service.AwaitApproval(context.Background(), Principal{Name: "bob"}, id)
	require.NoError(t, err)
	require.Equal(t, action.StatusOK, obs.Status, "%+v", obs)
	require.Equal(t, "bob's\n", f.read(t, "f.txt"))
	_, err = f.Service.AwaitApproval(context.Background(), Principal{Name: "bob"}, id)
	require.Equal(t, CodeAlreadyDecided, action.CodeOf(err), "it runs once")
	_, err = f.Service.AwaitApproval(context.Background(), Principal{Name: "alice"}, id)
	require.Equal(t, action.CodeNotFound, action.CodeOf(err))
}

func TestAwaitApprovalHonoursTheContext(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyAgent, "f.txt", "x\n", "s1")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.Service.AwaitApproval(ctx, Principal{Name: "alice"}, id)
	require.Equal(t, action.CodeTimeout, action.CodeOf(err))
	require.Less(t, time.Since(start), 5*time.Second)
	v, err := f.Service.GetApproval(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, ApprovalPending, v.Status)

	// Approved while it waits: it runs.
	done := make(chan action.Observation, 1)
	go func() {
		obs, err := f.Service.AwaitApproval(context.Background(), Principal{Name: "alice"}, id)
		if err != nil {
			obs.Message = err.Error()
		}
		done <- obs
	}()
	time.Sleep(50 * time.Millisecond)
	_, err = f.Service.DecideApproval(context.Background(), id, Principal{Name: "rita"}, ApprovalDecision{Approve: true, Method: MethodConsole})
	require.NoError(t, err)
	select {
	case obs := <-done:
		require.Equal(t, action.StatusOK, obs.Status, "%+v", obs)
	case <-time.After(10 * time.Second):
		t.Fatal("AwaitApproval did not return after the approval")
	}
	require.Equal(t, "x\n", f.read(t, "f.txt"))
	recs := auditRecords(t, f.AuditPath, "approval")
	require.Equal(t, "console", recs[len(recs)-1]["method"])
}

func TestApprovalLongPollEndsWithTheClient(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	id := f.ask(t, keyAgent, "f.txt", "x\n", "s1")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", f.URL+"/v1/approvals/"+id+"?wait=3600", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+keyAgent)
	start := time.Now()
	_, err = http.DefaultClient.Do(req)
	require.Error(t, err)
	require.Less(t, time.Since(start), 5*time.Second)
}

// TestDecideApprovalExactlyOnceUnderConcurrency: of many approvers and
// deniers at once, one decides; the others see already_decided.
func TestDecideApprovalExactlyOnceUnderConcurrency(t *testing.T) {
	for name, open := range approvalStores() {
		t.Run(name, func(t *testing.T) {
			f := newApprFixture(t, apprOpts{store: open(t)})
			id := f.ask(t, keyAgent, "f.txt", "x\n", "s1")
			var ok, decided atomic.Int32
			var wg sync.WaitGroup
			for i := range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := f.Service.DecideApproval(context.Background(), id, Principal{Name: "rita"}, ApprovalDecision{Approve: i%2 == 0})
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, ErrApprovalDecided):
						decided.Add(1)
					default:
						t.Errorf("decide: %v", err)
					}
				}()
			}
			wg.Wait()
			require.EqualValues(t, 1, ok.Load())
			require.EqualValues(t, 15, decided.Load())
			recs := auditRecords(t, f.AuditPath, "approval")
			require.Len(t, recs, 2, "one request, one decision")
		})
	}
}

// approvalStores are the stores the approval tests run against, each
// Redis one under a key prefix of its own.
func approvalStores() map[string]func(t testing.TB) ApprovalStore {
	return map[string]func(t testing.TB) ApprovalStore{
		"memory": func(t testing.TB) ApprovalStore { return NewMemoryApprovalsWith(ApprovalStoreOptions{}) },
		"redis": func(t testing.TB) ApprovalStore {
			c := testkit.Redis(t)
			_, id, err := NewToken()
			require.NoError(t, err)
			return NewRedisApprovals(c, "harness-test:"+id[:12]+":approval:", ApprovalStoreOptions{})
		},
	}
}

// TestApprovalStoreConformance is what every ApprovalStore does, against
// memory and a real Redis.
func TestApprovalStoreConformance(t *testing.T) {
	for name, open := range approvalStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s := open(t)
			now := time.Now()
			p := func(n int, session string) runtime.PendingApproval {
				a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": strings.Repeat("x", n)}, SessionID: session, Tenant: "t1"}
				h, _ := a.Hash()
				return runtime.PendingApproval{Action: a, ActionHash: h, Principal: "alice", Preview: map[string]any{"diff": "+x"}, Created: now.Add(time.Duration(n) * time.Millisecond)}
			}
			var ids []string
			for i := range 3 {
				ap, err := s.Request(ctx, p(i, "s1"))
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(ap.ID, "apr_"))
				require.Equal(t, "+x", ap.Preview["diff"])
				ids = append(ids, ap.ID)
			}
			list, err := s.List(ctx, ApprovalPending)
			require.NoError(t, err)
			require.Len(t, list, 3)
			require.Equal(t, []string{ids[2], ids[1], ids[0]}, []string{list[0].ID, list[1].ID, list[2].ID}, "newest first")

			_, err = s.Get(ctx, "apr_unknown")
			require.ErrorIs(t, err, ErrApprovalNotFound)
			_, err = s.Decide(ctx, "apr_unknown", StoreDecision{Status: ApprovalApproved, At: now})
			require.ErrorIs(t, err, ErrApprovalNotFound)

			// Expiring one with time left changes nothing.
			_, err = s.Decide(ctx, ids[0], StoreDecision{Status: ApprovalExpired, At: now})
			require.ErrorIs(t, err, errNotExpired)
			got, err := s.Decide(ctx, ids[0], StoreDecision{Status: ApprovalApproved, DecidedBy: "rita", Scope: ScopeSession, Method: MethodAPI, At: now})
			require.NoError(t, err)
			require.Equal(t, ApprovalApproved, got.Status)
			require.Equal(t, "rita", got.DecidedBy)
			g, ok := s.Granted(ctx, "t1", "s1", got.Pending.ActionHash)
			require.True(t, ok)
			require.Equal(t, ids[0], g)
			_, ok = s.Granted(ctx, "t2", "s1", got.Pending.ActionHash)
			require.False(t, ok, "another tenant's session")
			_, ok = s.Granted(ctx, "t1", "s1", list[0].Pending.ActionHash)
			require.False(t, ok, "another action")

			_, err = s.Decide(ctx, ids[0], StoreDecision{Status: ApprovalDenied, At: now})
			require.ErrorIs(t, err, ErrApprovalDecided)

			// A claim once; a claim of what is not approved is refused.
			_, err = s.Claim(ctx, ids[1])
			require.ErrorIs(t, err, ErrApprovalDecided)
			c, err := s.Claim(ctx, ids[0])
			require.NoError(t, err)
			require.True(t, c.Claimed)
			_, err = s.Claim(ctx, ids[0])
			require.ErrorIs(t, err, ErrApprovalClaimed)

			// Past its expiry, a decision expires it instead.
			got, err = s.Decide(ctx, ids[1], StoreDecision{Status: ApprovalApproved, At: now.Add(DefaultApprovalTTL + time.Second)})
			require.ErrorIs(t, err, ErrApprovalExpired)
			require.Equal(t, ApprovalExpired, got.Status)
			again, err := s.Get(ctx, ids[1])
			require.NoError(t, err)
			require.Equal(t, ApprovalExpired, again.Status)

			list, err = s.List(ctx, ApprovalPending)
			require.NoError(t, err)
			require.Len(t, list, 1)
			require.Equal(t, ids[2], list[0].ID)
			require.NoError(t, s.Ping(ctx))
		})
	}
}

// TestApprovalTwoReplicasOneRedis: an approval asked for on one replica
// is listed and approved on the other, and of concurrent claims of its
// token (on both replicas) exactly one gets a token that works, exactly
// once.
func TestApprovalTwoReplicasOneRedis(t *testing.T) {
	c := testkit.Redis(t)
	_, rnd, err := NewToken()
	require.NoError(t, err)
	prefix := "harness-test:" + rnd[:12] + ":"
	tokens := NewRedisStore(c, prefix+"token:")
	a := newApprFixture(t, apprOpts{store: NewRedisApprovals(c, prefix+"approval:", ApprovalStoreOptions{}), tokens: tokens})
	b := newApprFixture(t, apprOpts{store: NewRedisApprovals(c, prefix+"approval:", ApprovalStoreOptions{}), tokens: tokens, root: a.Root})

	id := a.ask(t, keyAgent, "f.txt", "one\nTWO\n", "s1")
	st, body := call(t, "GET", b.URL+"/v1/approvals?status=pending", keyApprover, nil)
	require.Equal(t, 200, st)
	require.Contains(t, mustJSON(t, body), id, "replica b lists replica a's approval")
	st, body = call(t, "POST", b.URL+"/v1/approvals/"+id+"/approve", keyApprover, map[string]any{})
	require.Equal(t, 200, st, "%v", body)

	// Concurrent polls on both replicas: one token.
	var mu sync.Mutex
	var toks []string
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := a
			if i%2 == 1 {
				f = b
			}
			st, body := call(t, "GET", f.URL+"/v1/approvals/"+id, keyAgent, nil)
			if st != 200 {
				t.Errorf("poll: %d %v", st, body)
				return
			}
			if tok, _ := body["token"].(string); tok != "" {
				mu.Lock()
				toks = append(toks, tok)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, toks, 1, "the approved action's token is handed out once")

	// Concurrent redeems of it on both replicas: one runs.
	var okRuns, notFound atomic.Int32
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := a
			if i%2 == 1 {
				f = b
			}
			st, body := call(t, "POST", f.URL+"/v1/actions/execute/"+toks[0], keyAgent, nil)
			switch {
			case st == 200 && body["status"] == "ok":
				okRuns.Add(1)
			case st == 404:
				notFound.Add(1)
			default:
				t.Errorf("execute: %d %v", st, body)
			}
		}()
	}
	wg.Wait()
	require.EqualValues(t, 1, okRuns.Load())
	require.EqualValues(t, 7, notFound.Load())
	require.Equal(t, "one\nTWO\n", a.read(t, "f.txt"))
	v, err := a.Service.GetApproval(context.Background(), id)
	require.NoError(t, err)
	require.True(t, v.Claimed)
	require.Equal(t, "rita", v.DecidedBy)
}

// TestApprovalTenantBoundApproverSeesItsTenantOnly: an approver bound to
// a tenant lists and decides that tenant's approvals only.
func TestApprovalTenantBoundApproverSeesItsTenantOnly(t *testing.T) {
	f := newApprFixture(t, apprOpts{})
	ask := func(tenant string) string {
		a := map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": "f.txt", "content": tenant + "\n"}, "session_id": "s1", "tenant": tenant}
		st, obs := call(t, "POST", f.URL+"/v1/actions", keyAgent, a)
		require.Equal(t, 200, st, "%v", obs)
		ap, _ := obs["approval"].(map[string]any)
		require.NotNil(t, ap, "%v", obs)
		return ap["id"].(string)
	}
	mine, other := ask("t1"), ask("t2")
	st, body := call(t, "GET", f.URL+"/v1/approvals", keyTenantA, nil)
	require.Equal(t, 200, st)
	ids := mustJSON(t, body)
	require.Contains(t, ids, mine)
	require.NotContains(t, ids, other)
	st, _ = call(t, "GET", f.URL+"/v1/approvals/"+other, keyTenantA, nil)
	require.Equal(t, 404, st)
	st, _ = call(t, "POST", f.URL+"/v1/approvals/"+other+"/approve", keyTenantA, map[string]any{})
	require.Equal(t, 404, st)
	st, body = call(t, "POST", f.URL+"/v1/approvals/"+mine+"/approve", keyTenantA, map[string]any{})
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, "tina", body["decided_by"])
}

// TestApprovalDecidedBeforeItsRequestReturns: an approver who finds a
// pending approval in the list and decides it at once, while the request
// that stored it is still returning, races with nothing (run with -race),
// on every store.
func TestApprovalDecidedBeforeItsRequestReturns(t *testing.T) {
	for name, open := range approvalStores() {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			ctx := context.Background()
			for i := range 100 {
				stop := make(chan struct{})
				decided := make(chan struct{})
				go func() {
					defer close(decided)
					for {
						select {
						case <-stop:
							return
						default:
						}
						list, err := s.List(ctx, ApprovalPending)
						if err != nil {
							t.Error(err)
							return
						}
						for _, ap := range list {
							if _, err := s.Decide(ctx, ap.ID, StoreDecision{Status: ApprovalApproved, DecidedBy: "rita", Scope: ScopeOnce, At: time.Now()}); err == nil {
								return
							}
						}
					}
				}()
				a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": fmt.Sprint(i)}, SessionID: "race"}
				h, _ := a.Hash()
				if _, err := s.Request(ctx, runtime.PendingApproval{Action: a, ActionHash: h, Principal: "alice"}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-decided:
				case <-time.After(5 * time.Second):
					close(stop)
					<-decided
					t.Fatal("the approval was never seen pending")
				}
			}
		})
	}
}
