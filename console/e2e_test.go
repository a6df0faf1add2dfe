package console

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/trusted"
)

// Keys of the end-to-end server: the agent, a person who approves, and a
// principal that may both ask and approve (and must not approve itself).
const (
	e2eAgent    = "e2e-agent-61f0"
	e2eReviewer = "e2e-reviewer-2c9d"
	e2eSelf     = "e2e-self-77aa"
)

// e2eServer is harness serve as cmd/harness builds it: pipeline.Open
// with the trusted service, the API, and the console mounted at
// /console/, with a rule that asks before every patch.
type e2eServer struct {
	t     *testing.T
	url   string
	root  string
	audit string
}

func startE2EServer(t *testing.T, adjust ...func(*config.Config)) *e2eServer {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", filepath.Join(home, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	root := t.TempDir()
	for name, content := range map[string]string{"a.txt": "one\ntwo\n", "b.txt": "x\n", "c.sh": "echo hi\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	cfg.Harness.Audit.Path = filepath.Join(home, "audit.jsonl")
	cfg.Harness.Rules = []config.RuleConfig{{ID: "ask-writes", Actions: []string{"workspace_apply_patch"}, Outcome: "ask", Reason: "a person looks first"}}
	cfg.Harness.Auth.Keys = []config.AuthKey{
		{Principal: "agent", SHA256: sum(e2eAgent), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "reviewer", SHA256: sum(e2eReviewer), Permissions: []string{"agent:approve", "agent:audit"}},
		{Principal: "selfie", SHA256: sum(e2eSelf), Permissions: []string{"agent:execute", "agent:trusted", "agent:approve"}},
	}
	for _, f := range adjust {
		f(cfg)
	}
	if err := cfg.Validate(""); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := pipeline.Open(ctx, cfg, pipeline.Options{Trusted: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	keys, err := trusted.NewKeys(cfg.Harness.Auth.Keys)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := trusted.NewServer(trusted.ServerOptions{Service: p.Trusted, Keys: keys, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	replay, _ := p.Audit.(audit.Replayer)
	con, err := New(Options{Approvals: p.Trusted, Replay: replay, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/console/", con)
	mux.Handle("/", srv)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return &e2eServer{t: t, url: hs.URL, root: root, audit: cfg.Harness.Audit.Path}
}

// call is the agent's side: one API request with a bearer key.
func (s *e2eServer) call(method, path, key string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequest(method, s.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	data, _ := io.ReadAll(res.Body)
	_ = json.Unmarshal(data, &m)
	return res.StatusCode, m
}

// ask sends a patch as the agent and returns the id of the approval it
// waits for.
func (s *e2eServer) ask(key, path, content, session string) string {
	s.t.Helper()
	st, obs := s.call("POST", "/v1/actions", key, map[string]any{
		"name": "workspace_apply_patch", "input": map[string]any{"path": path, "content": content}, "session_id": session,
	})
	ap, _ := obs["approval"].(map[string]any)
	id, _ := ap["id"].(string)
	if st != 200 || obs["status"] != "needs_confirmation" || obs["code"] != "approval_required" || id == "" {
		s.t.Fatalf("ask: %d %v", st, obs)
	}
	return id
}

func (s *e2eServer) file(name string) string {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.root, name))
	if err != nil {
		s.t.Fatal(err)
	}
	return string(b)
}

// auditEvents returns the events of the audit log.
func (s *e2eServer) auditEvents() []map[string]any {
	s.t.Helper()
	f, err := os.Open(s.audit)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var rec struct {
			Event map[string]any `json:"event"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, rec.Event)
	}
	return out
}

// find returns the index of the first event that has every key of want
// with its value, or -1.
func find(evs []map[string]any, want map[string]any) int {
	for i, e := range evs {
		ok := true
		for k, v := range want {
			ok = ok && e[k] == v
		}
		if ok {
			return i
		}
	}
	return -1
}

// An agent's patch waits for approval; a person signs in to the console
// in a real browser, sees the diff, approves; the agent's long-poll gets
// the token, which applies exactly that diff; the audit log has the
// request, the approval (approver, method console) and the action.
// Then: a denial, a self-approval refused, and hostile content inert.
func TestE2EApproveInBrowserThenExecute(t *testing.T) {
	w := startBrowser(t)
	s := startE2EServer(t)

	id := s.ask(e2eAgent, "a.txt", "one\nTWO\n", "sess-1")
	polled := make(chan map[string]any, 1)
	go func() {
		_, m := s.call("GET", "/v1/approvals/"+id+"?wait=30", e2eAgent, nil)
		polled <- m
	}()

	signInBrowser(w, s.url, e2eReviewer)
	w.waitText("#count", "1")
	w.waitText("#d-title", "workspace_apply_patch")
	var rows []string
	w.js(&rows, `return [...document.querySelectorAll("#d-preview .diff tr.add td.code, #d-preview .diff tr.del td.code")].map(c => c.parentNode.className + ":" + c.textContent);`)
	if strings.Join(rows, "|") != "del:−two|add:+TWO" {
		t.Fatalf("the diff shown: %q", rows)
	}
	if got := w.text("#d-facts"); !strings.Contains(got, "ask-writes") || !strings.Contains(got, "sess-1") || !strings.Contains(got, "agent") {
		t.Errorf("facts: %q", got)
	}
	w.waitText("#events", "pre_action")
	w.screenshot("../docs/console-diff.png")
	w.click("#approve-once")
	w.waitText("#decide-msg", "Approved once.")

	var m map[string]any
	select {
	case m = <-polled:
	case <-time.After(30 * time.Second):
		t.Fatal("the agent's long-poll did not return")
	}
	tok, _ := m["token"].(string)
	if m["status"] != "approved" || tok == "" {
		t.Fatalf("poll after approval: %v", m)
	}
	if st, obs := s.call("POST", "/v1/actions/execute/"+tok, e2eAgent, nil); st != 200 || obs["status"] != "ok" {
		t.Fatalf("execute: %d %v", st, obs)
	}
	if got := s.file("a.txt"); got != "one\nTWO\n" {
		t.Fatalf("a.txt is %q", got)
	}
	if st, _ := s.call("POST", "/v1/actions/execute/"+tok, e2eAgent, nil); st != 404 {
		t.Errorf("the token ran twice: %d", st)
	}
	evs := s.auditEvents()
	if os.Getenv("HARNESS_E2E_DUMP") == "1" {
		for _, e := range evs {
			t.Logf("%v", e)
		}
	}
	requested := find(evs, map[string]any{"kind": "approval", "event": "requested", "approval_id": id, "principal": "agent", "rule": "ask-writes", "session_id": "sess-1"})
	approved := find(evs, map[string]any{"kind": "approval", "event": "approved", "approval_id": id, "approver": "reviewer", "method": "console", "scope": "once"})
	minted := find(evs, map[string]any{"kind": "trusted_token", "event": "minted", "approval_id": id})
	if requested < 0 || approved < 0 || minted < 0 {
		t.Fatalf("audit: request %d, approval %d, token %d (-1: missing)", requested, approved, minted)
	}
	ran := -1
	for i, e := range evs {
		p, _ := e["payload"].(map[string]any)
		obs, _ := p["observation"].(map[string]any)
		if e["event_type"] == "post_action" && p["action"] == "workspace_apply_patch" && p["action_id"] == evs[minted]["action_id"] && obs["status"] == "ok" {
			ran = i
		}
	}
	if !(requested < approved && approved < minted && minted < ran) {
		t.Errorf("audit order: request %d, approval %d, token %d, the action's run %d", requested, approved, minted, ran)
	}

	// Deny: the agent sees approval_denied, the file stays.
	id2 := s.ask(e2eAgent, "b.txt", "y\n", "sess-1")
	w.waitText("#count", "1")
	w.click(fmt.Sprintf(`#pending button[data-id=%q]`, id2))
	w.waitText("#d-preview", "b.txt")
	w.typeInto("#reason", "not this one")
	w.click("#deny")
	w.waitText("#decide-msg", "Denied.")
	if _, m := s.call("GET", "/v1/approvals/"+id2, e2eAgent, nil); m["status"] != "denied" || m["token"] != nil {
		t.Errorf("after a denial: %v", m)
	}
	if got := s.file("b.txt"); got != "x\n" {
		t.Errorf("a denied change reached the disk: %q", got)
	}
	if find(s.auditEvents(), map[string]any{"kind": "approval", "event": "denied", "approval_id": id2, "approver": "reviewer", "method": "console", "reason": "not this one"}) < 0 {
		t.Error("no audit record of the denial with its approver, method and reason")
	}

	// Hostile content is shown as text, its override visible.
	s.ask(e2eAgent, "notes/todo.md", "- ship the console\n", "sess-4")
	id3 := s.ask(e2eAgent, "c.sh", "<script>window.pwned=1</script>\u202e# harmless\n<img src=x onerror=\"window.pwned=2\">\n", "sess-2")
	w.waitText("#count", "2")
	if got := w.text("#pending li:first-child button"); !strings.Contains(got, "sess-2") {
		t.Errorf("the newest approval is not first: %q", got)
	}
	w.click(fmt.Sprintf(`#pending button[data-id=%q]`, id3))
	w.waitText("#d-preview", "⟨U+202E⟩")
	var probe struct {
		Pwned   any  `json:"pwned"`
		Imgs    int  `json:"imgs"`
		RLO     bool `json:"rlo"`
		Scripts int  `json:"scripts"`
	}
	w.js(&probe, `return {pwned: window.pwned === undefined ? null : window.pwned, imgs: document.querySelectorAll("img").length,
		rlo: document.body.textContent.includes("\u202e"), scripts: document.querySelectorAll("main script").length};`)
	if probe.Pwned != nil || probe.Imgs != 0 || probe.RLO || probe.Scripts != 0 {
		t.Errorf("hostile content not inert: %+v", probe)
	}
	if s := w.text("#d-preview .diff"); !strings.Contains(s, "<script>window.pwned=1</script>⟨U+202E⟩# harmless") {
		t.Errorf("the hostile line is not shown as text: %q", s)
	}
	w.screenshot("../docs/console-pending.png")
	w.size(390, 844)
	w.screenshot("../docs/console-phone.png")
	w.size(1280, 900)

	// A principal does not approve its own request.
	id4 := s.ask(e2eSelf, "b.txt", "z\n", "sess-3")
	w.click("#signout")
	w.find("#signin-form")
	signInBrowser(w, s.url, e2eSelf)
	w.click(fmt.Sprintf(`#pending button[data-id=%q]`, id4))
	w.waitText("#d-title", "workspace_apply_patch")
	w.click("#approve-once")
	w.waitFor("the refusal", func() bool { return strings.Contains(w.text("#decide-msg"), "own") })
	if _, m := s.call("GET", "/v1/approvals/"+id4, e2eSelf, nil); m["status"] != "pending" {
		t.Errorf("a self-approval changed the approval: %v", m)
	}
}

// An approval nobody decides in time expires: the console refuses to
// approve it and says so, the agent's poll says expired. An approval
// whose file changed before the approved action ran is refused as stale
// (409), the file left as it was changed.
func TestE2EExpiredAndStale(t *testing.T) {
	w := startBrowser(t)
	// Long enough for the console to show the approval on a loaded
	// machine; the test then waits for the rest of it.
	const ttl = 10 * time.Second
	s := startE2EServer(t, func(c *config.Config) { c.Harness.Approvals.TTLSeconds = int(ttl / time.Second) })

	asked := time.Now()
	late := s.ask(e2eAgent, "b.txt", "late\n", "sess-1")
	signInBrowser(w, s.url, e2eReviewer)
	w.click(fmt.Sprintf(`#pending button[data-id=%q]`, late))
	w.waitText("#d-preview", "late")
	time.Sleep(time.Until(asked.Add(ttl + 500*time.Millisecond)))
	w.click("#approve-once")
	w.waitFor("the expiry shown", func() bool { return strings.Contains(w.text("#decide-msg"), "expired") })
	if _, m := s.call("GET", "/v1/approvals/"+late, e2eAgent, nil); m["status"] != "expired" || m["token"] != nil {
		t.Errorf("the agent's poll after expiry: %v", m)
	}
	w.waitText("#count", "0")
	if got := s.file("b.txt"); got != "x\n" {
		t.Errorf("an expired change reached the disk: %q", got)
	}

	stale := s.ask(e2eAgent, "a.txt", "one\nSTALE\n", "sess-1")
	w.click(fmt.Sprintf(`#pending button[data-id=%q]`, stale))
	w.waitText("#d-preview", "STALE")
	w.click("#approve-once")
	w.waitText("#decide-msg", "Approved once.")
	if err := os.WriteFile(filepath.Join(s.root, "a.txt"), []byte("changed meanwhile\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, m := s.call("GET", "/v1/approvals/"+stale+"?wait=5", e2eAgent, nil)
	tok, _ := m["token"].(string)
	if m["status"] != "approved" || tok == "" {
		t.Fatalf("poll: %v", m)
	}
	st, obs := s.call("POST", "/v1/actions/execute/"+tok, e2eAgent, nil)
	if st != http.StatusConflict {
		t.Errorf("execute after the file changed: %d %v, want 409", st, obs)
	}
	if got := s.file("a.txt"); got != "changed meanwhile\n" {
		t.Errorf("a.txt is %q", got)
	}
}
