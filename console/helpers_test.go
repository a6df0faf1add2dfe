package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/trusted"
)

// Test keys: the bearer token and what it allows.
const (
	keyApprover = "approver-key-0001"
	keyAgent    = "agent-key-0002"
	keyAuditor  = "auditor-key-0003"
	keyTenantA  = "tenant-a-key-0004"
)

func testKeys(t *testing.T) *trusted.Keys {
	t.Helper()
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	ks, err := trusted.NewKeys([]config.AuthKey{
		{Principal: "reviewer", SHA256: sum(keyApprover), Permissions: []string{"agent:approve"}},
		{Principal: "agent", SHA256: sum(keyAgent), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "auditor", SHA256: sum(keyAuditor), Permissions: []string{"agent:approve", "agent:audit"}},
		{Principal: "alice", Tenant: "a", SHA256: sum(keyTenantA), Permissions: []string{"agent:approve"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// decision is one call of DecideApproval the fake saw.
type decision struct {
	ID       string
	Approver trusted.Principal
	D        trusted.ApprovalDecision
}

// fakeApprovals is an approvals service in memory with the rules the
// console relies on the real one for: unknown → not_found, decided →
// conflict, a principal's own request → forbidden.
type fakeApprovals struct {
	mu        sync.Mutex
	items     map[string]trusted.ApprovalView
	order     []string
	decisions []decision
}

func newFake(views ...trusted.ApprovalView) *fakeApprovals {
	f := &fakeApprovals{items: map[string]trusted.ApprovalView{}}
	for _, v := range views {
		f.items[v.ID] = v
		f.order = append([]string{v.ID}, f.order...)
	}
	return f
}

func (f *fakeApprovals) ListApprovals(_ context.Context, status string) ([]trusted.ApprovalView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []trusted.ApprovalView
	for _, id := range f.order {
		if v := f.items[id]; status == "" || v.Status == status {
			out = append(out, v)
		}
	}
	return out, nil
}

func (f *fakeApprovals) GetApproval(_ context.Context, id string) (trusted.ApprovalView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.items[id]
	if !ok {
		return trusted.ApprovalView{}, action.Errorf(action.CodeNotFound, "no approval %s", id)
	}
	return v, nil
}

func (f *fakeApprovals) DecideApproval(_ context.Context, id string, p trusted.Principal, d trusted.ApprovalDecision) (trusted.ApprovalView, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.items[id]
	switch {
	case !ok:
		return trusted.ApprovalView{}, action.Errorf(action.CodeNotFound, "no approval %s", id)
	case v.Status != trusted.ApprovalPending:
		return v, trusted.ErrApprovalDecided
	case v.Principal == p.Name:
		return trusted.ApprovalView{}, action.Errorf(trusted.CodeSelfApproval, "principal %s may not decide its own request", p.Name)
	}
	f.decisions = append(f.decisions, decision{ID: id, Approver: p, D: d})
	v.Status = trusted.ApprovalDenied
	if d.Approve {
		v.Status = trusted.ApprovalApproved
	}
	v.DecidedBy, v.Scope, v.Reason, v.Method = p.Name, d.Scope, d.Reason, d.Method
	f.items[id] = v
	return v, nil
}

func (f *fakeApprovals) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.decisions)
}

// fakeReplay returns fixed events per session, one a page, as a replay
// that reads a bounded part of the log per call may.
type fakeReplay map[string][]json.RawMessage

func (r fakeReplay) Replay(_ context.Context, q audit.Query) (audit.Page, error) {
	evs := r[q.SessionID]
	if q.After >= uint64(len(evs)) {
		return audit.Page{}, nil
	}
	next := q.After + 1
	if next == uint64(len(evs)) {
		next = 0
	}
	return audit.Page{Events: []audit.Record{{Seq: q.After + 1, Event: evs[q.After]}}, Next: next}, nil
}

func pendingView(id, principal, tenant, session string) trusted.ApprovalView {
	now := time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC)
	return trusted.ApprovalView{
		ID: id, Status: trusted.ApprovalPending, Action: "workspace_apply_patch",
		Input:     map[string]any{"path": "a.txt", "content": "one\nTWO\n"},
		SessionID: session, Principal: principal, Tenant: tenant, ActionHash: "abc123",
		Preview:   map[string]any{"diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"},
		Decision:  action.Decision{Step: "rules", Rule: "ask-writes", Outcome: "ask", Reason: "a person looks first"},
		CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute),
	}
}

// fixture is a console served over real HTTP (loopback), with a fake
// service behind it.
type fixture struct {
	t    *testing.T
	c    *Console
	fake *fakeApprovals
	srv  *httptest.Server
}

func newFixture(t *testing.T, opts Options, views ...trusted.ApprovalView) *fixture {
	t.Helper()
	f := &fixture{t: t, fake: newFake(views...)}
	if opts.Approvals == nil {
		opts.Approvals = f.fake
	}
	if opts.Keys == nil {
		opts.Keys = testKeys(t)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	f.srv = httptest.NewServer(c)
	t.Cleanup(f.srv.Close)
	return f
}

// browser is a client with a cookie jar, like a browser tab: it sends
// Origin and Sec-Fetch-Site as a same-origin fetch does.
type browser struct {
	f    *fixture
	hc   *http.Client
	csrf string
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	hc := *f.srv.Client()
	hc.Jar = jar
	return &browser{f: f, hc: &hc}
}

type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.Body, &m); err != nil {
		t.Fatalf("answer is not JSON: %v: %q", err, a.Body)
	}
	return m
}

func (a answer) code(t *testing.T) string {
	t.Helper()
	e, _ := a.json(t)["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// do sends a request; hdr may set or (with "") remove headers.
func (b *browser) do(method, path, ctype, body string, hdr map[string]string) answer {
	b.f.t.Helper()
	req, err := http.NewRequest(method, b.f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		b.f.t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if method != http.MethodGet {
		req.Header.Set("Origin", b.f.srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set(csrfHeader, b.csrf)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := b.hc.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return answer{Status: res.StatusCode, Header: res.Header, Body: data}
}

// begin loads the session state, as the page does, and keeps its CSRF
// token.
func (b *browser) begin() answer {
	b.f.t.Helper()
	a := b.do("GET", "/console/api/session", "", "", nil)
	if a.Status != http.StatusOK {
		b.f.t.Fatalf("GET session: %d %s", a.Status, a.Body)
	}
	b.csrf, _ = a.json(b.f.t)["csrf"].(string)
	return a
}

// signIn signs in with key and returns the answer.
func (b *browser) signIn(key string) answer {
	b.f.t.Helper()
	b.begin()
	body, _ := json.Marshal(map[string]string{"key": key})
	a := b.do("POST", "/console/api/session", "application/json", string(body), nil)
	if a.Status == http.StatusOK {
		b.csrf, _ = a.json(b.f.t)["csrf"].(string)
	}
	return a
}

func (b *browser) mustSignIn(key string) {
	b.f.t.Helper()
	if a := b.signIn(key); a.Status != http.StatusOK {
		b.f.t.Fatalf("sign in: %d %s", a.Status, a.Body)
	}
}

func cookieNamed(h http.Header, name string) *http.Cookie {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
