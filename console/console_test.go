package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/trusted"
)

func TestNewRequiresApprovalsAndKeys(t *testing.T) {
	if _, err := New(Options{Keys: testKeys(t)}); err == nil {
		t.Error("New without Approvals: no error")
	}
	if _, err := New(Options{Approvals: newFake()}); err == nil {
		t.Error("New without Keys: no error")
	}
}

func TestPageHasSignInFormAndSecurityHeaders(t *testing.T) {
	f := newFixture(t, Options{})
	b := f.browser()
	for _, tc := range []struct{ path, ctype string }{
		{"/console/", "text/html"},
		{"/console/static/console.js", "text/javascript"},
		{"/console/static/console.css", "text/css"},
		{"/console/api/session", "application/json"},
	} {
		a := b.do("GET", tc.path, "", "", nil)
		if a.Status != http.StatusOK || !strings.HasPrefix(a.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %d %q", tc.path, a.Status, a.Header.Get("Content-Type"))
		}
		csp := a.Header.Get("Content-Security-Policy")
		for _, want := range []string{"script-src 'self'", "frame-ancestors 'none'", "default-src 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", tc.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP allows inline or eval: %q", tc.path, csp)
		}
		if a.Header.Get("X-Content-Type-Options") != "nosniff" || a.Header.Get("Referrer-Policy") != "no-referrer" ||
			a.Header.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", tc.path, a.Header)
		}
	}
	page := string(b.do("GET", "/console/", "", "", nil).Body)
	for _, want := range []string{`<form id="signin-form"`, `name="key"`, `name="csrf"`, `<button`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`).MatchString(page) || strings.Contains(page, " style=") ||
		regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
		t.Error("the page has inline script, style or an event handler attribute (the CSP would block it)")
	}
	for _, p := range []string{"/console/static/index.html", "/console/static/", "/console/static/../console.go", "/console/nope", "/console/api/nope"} {
		if a := b.do("GET", p, "", "", nil); a.Status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, a.Status)
		}
	}
}

// TestScriptBuildsDOMWithTextOnly pins the rule the page's script keeps:
// no HTML is ever made from a string.
func TestScriptBuildsDOMWithTextOnly(t *testing.T) {
	js, err := os.ReadFile("static/console.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute(\"on", ".src =", "href ="} {
		if strings.Contains(string(js), bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
}

func TestSignInCookieFlags(t *testing.T) {
	check := func(t *testing.T, h http.Header, secure bool) {
		t.Helper()
		c := cookieNamed(h, sessionCookie)
		if c == nil {
			t.Fatal("no session cookie")
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/console/" || c.Secure != secure || len(c.Value) != 64 || c.MaxAge <= 0 {
			t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/console/, Secure=%v, 256-bit value, Max-Age", c, secure)
		}
	}
	t.Run("plain HTTP on loopback: not Secure (browsers would not send it back)", func(t *testing.T) {
		f := newFixture(t, Options{})
		b := f.browser()
		a := b.signIn(keyApprover)
		if a.Status != http.StatusOK {
			t.Fatalf("%d %s", a.Status, a.Body)
		}
		check(t, a.Header, false)
		if s := string(a.Body); strings.Contains(s, keyApprover) {
			t.Error("the answer repeats the key")
		}
	})
	t.Run("SecureCookies: Secure on plain HTTP too", func(t *testing.T) {
		f := newFixture(t, Options{SecureCookies: true})
		b := f.browser()
		b.begin()
		body, _ := json.Marshal(map[string]string{"key": keyApprover})
		// The jar would not send the Secure login cookie back over HTTP.
		u, _ := url.Parse(f.srv.URL)
		login := ""
		for _, c := range b.hc.Jar.Cookies(&url.URL{Scheme: "https", Host: u.Host, Path: "/console/"}) {
			if c.Name == loginCookie {
				login = c.Value
			}
		}
		if login == "" {
			t.Fatal("no Secure login cookie was set")
		}
		a := b.do("POST", "/console/api/session", "application/json", string(body), map[string]string{"Cookie": loginCookie + "=" + login})
		if a.Status != http.StatusOK {
			t.Fatalf("%d %s", a.Status, a.Body)
		}
		check(t, a.Header, true)
	})
	t.Run("TLS: Secure", func(t *testing.T) {
		fk := newFake()
		c, err := New(Options{Approvals: fk, Keys: testKeys(t)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewTLSServer(c)
		defer srv.Close()
		f := &fixture{t: t, c: c, fake: fk, srv: srv}
		a := f.browser().signIn(keyApprover)
		if a.Status != http.StatusOK {
			t.Fatalf("%d %s", a.Status, a.Body)
		}
		check(t, a.Header, true)
	})
}

func TestSignInRefusals(t *testing.T) {
	f := newFixture(t, Options{})
	key := func(k string) string { b, _ := json.Marshal(map[string]string{"key": k}); return string(b) }
	for _, tc := range []struct {
		name   string
		prep   func(b *browser)
		ctype  string
		body   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"no CSRF token", func(b *browser) { b.begin(); b.csrf = "" }, "application/json", key(keyApprover), nil, 403, codeCSRF},
		{"wrong CSRF token", func(b *browser) { b.begin(); b.csrf = strings.Repeat("0", 64) }, "application/json", key(keyApprover), nil, 403, codeCSRF},
		{"no login cookie", func(b *browser) { b.csrf = b.f.c.sessions.loginCSRF(strings.Repeat("1", 64)) }, "application/json", key(keyApprover), nil, 403, codeCSRF},
		{"form without csrf field", func(b *browser) { b.begin(); b.csrf = "" }, "application/x-www-form-urlencoded", "key=" + keyApprover, nil, 403, codeCSRF},
		{"cross-site fetch", func(b *browser) { b.begin() }, "application/json", key(keyApprover), map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403, codeCrossOrigin},
		{"foreign Origin, old browser", func(b *browser) { b.begin() }, "application/json", key(keyApprover), map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}, 403, codeCrossOrigin},
		{"unknown key", func(b *browser) { b.begin() }, "application/json", key("nope"), nil, 401, codeUnauthorized},
		{"key without agent:approve", func(b *browser) { b.begin() }, "application/json", key(keyAgent), nil, 403, codeForbidden},
		{"unknown field", func(b *browser) { b.begin() }, "application/json", `{"key":"x","admin":true}`, nil, 400, "invalid_input"},
		{"oversized body", func(b *browser) { b.begin() }, "application/json", `{"key":"` + strings.Repeat("k", maxBodyBytes) + `"}`, nil, 413, codeTooLarge},
		{"text body", func(b *browser) { b.begin() }, "text/plain", keyApprover, nil, 415, "invalid_input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := f.c.sessions.len()
			b := f.browser()
			tc.prep(b)
			a := b.do("POST", "/console/api/session", tc.ctype, tc.body, tc.hdr)
			if a.Status != tc.status || a.code(t) != tc.code {
				t.Errorf("%d %s, want %d %s", a.Status, a.Body, tc.status, tc.code)
			}
			if cookieNamed(a.Header, sessionCookie) != nil || f.c.sessions.len() != before {
				t.Error("a refused sign-in made a session")
			}
		})
	}
	t.Run("form with its csrf field signs in", func(t *testing.T) {
		b := f.browser()
		b.begin()
		form := url.Values{"key": {keyApprover}, "csrf": {b.csrf}}.Encode()
		if a := b.do("POST", "/console/api/session", "application/x-www-form-urlencoded", form, map[string]string{csrfHeader: ""}); a.Status != 200 {
			t.Errorf("%d %s", a.Status, a.Body)
		}
	})
}

func TestApprovalAPIErrors(t *testing.T) {
	mine := pendingView("apr_mine", "reviewer", "", "s-1")
	done := pendingView("apr_done", "agent", "", "s-1")
	done.Status = "approved"
	f := newFixture(t, Options{}, pendingView("apr_1", "agent", "", "s-1"), mine, done)
	in := f.browser()
	in.mustSignIn(keyApprover)
	anon := f.browser()
	anon.begin()
	body := func(scope, reason string) string {
		b, _ := json.Marshal(map[string]string{"scope": scope, "reason": reason})
		return string(b)
	}
	for _, tc := range []struct {
		name   string
		b      *browser
		path   string
		ctype  string
		body   string
		hdr    map[string]string
		status int
		code   string
	}{
		{"unauthenticated", anon, "/console/api/approvals/apr_1/approve", "application/json", body("once", ""), nil, 401, codeUnauthorized},
		{"no CSRF header", in, "/console/api/approvals/apr_1/approve", "application/json", body("once", ""), map[string]string{csrfHeader: ""}, 403, codeCSRF},
		{"wrong CSRF header", in, "/console/api/approvals/apr_1/approve", "application/json", body("once", ""), map[string]string{csrfHeader: strings.Repeat("a", 64)}, 403, codeCSRF},
		{"CSRF-less form post", in, "/console/api/approvals/apr_1/approve", "application/x-www-form-urlencoded", "scope=once", map[string]string{csrfHeader: ""}, 403, codeCSRF},
		{"cross-site", in, "/console/api/approvals/apr_1/deny", "application/json", body("", "x"), map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, codeCrossOrigin},
		{"oversized reason", in, "/console/api/approvals/apr_1/deny", "application/json", body("", strings.Repeat("r", MaxReasonBytes+1)), nil, 400, "invalid_input"},
		{"oversized body", in, "/console/api/approvals/apr_1/deny", "application/json", body("", strings.Repeat("r", maxBodyBytes)), nil, 413, codeTooLarge},
		{"bad scope", in, "/console/api/approvals/apr_1/approve", "application/json", body("forever", ""), nil, 400, "invalid_input"},
		{"deny with a scope", in, "/console/api/approvals/apr_1/deny", "application/json", body("once", "no"), nil, 400, "invalid_input"},
		{"not JSON", in, "/console/api/approvals/apr_1/approve", "text/plain", "once", nil, 415, "invalid_input"},
		{"two objects", in, "/console/api/approvals/apr_1/approve", "application/json", `{} {}`, nil, 400, "invalid_input"},
		{"unknown approval", in, "/console/api/approvals/apr_nope/approve", "application/json", body("once", ""), nil, 404, "not_found"},
		{"already decided", in, "/console/api/approvals/apr_done/approve", "application/json", body("once", ""), nil, 409, codeConflict},
		{"own request", in, "/console/api/approvals/apr_mine/approve", "application/json", body("once", ""), nil, 403, "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.b.do("POST", tc.path, tc.ctype, tc.body, tc.hdr)
			if a.Status != tc.status || a.code(t) != tc.code {
				t.Errorf("%d %s, want %d %s", a.Status, a.Body, tc.status, tc.code)
			}
			if n := f.fake.count(); n != 0 {
				t.Errorf("%d decisions made", n)
			}
		})
	}
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"list unauthenticated", "/console/api/approvals", 401},
		{"get unauthenticated", "/console/api/approvals/apr_1", 401},
		{"history unauthenticated", "/console/api/sessions/s-1/events", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if a := anon.do("GET", tc.path, "", "", nil); a.Status != tc.status {
				t.Errorf("%d %s", a.Status, a.Body)
			}
		})
	}
	if a := in.do("GET", "/console/api/approvals?status=weird", "", "", nil); a.Status != 400 {
		t.Errorf("bad status filter: %d", a.Status)
	}
	if a := in.do("GET", "/console/api/approvals/apr_nope", "", "", nil); a.Status != 404 {
		t.Errorf("unknown approval: %d", a.Status)
	}
}

func TestApproveAndDeny(t *testing.T) {
	f := newFixture(t, Options{}, pendingView("apr_1", "agent", "", "s-1"), pendingView("apr_2", "agent", "", "s-1"))
	b := f.browser()
	b.mustSignIn(keyApprover)
	a := b.do("POST", "/console/api/approvals/apr_1/approve", "application/json", `{"scope":"session","reason":"fine"}`, nil)
	if a.Status != 200 || a.json(t)["status"] != "approved" {
		t.Fatalf("approve: %d %s", a.Status, a.Body)
	}
	a = b.do("POST", "/console/api/approvals/apr_2/deny", "application/json", `{"reason":"no"}`, nil)
	if a.Status != 200 || a.json(t)["status"] != "denied" {
		t.Fatalf("deny: %d %s", a.Status, a.Body)
	}
	want := []decision{
		{ID: "apr_1", D: trusted.ApprovalDecision{Approve: true, Scope: "session", Reason: "fine", Method: "console"}},
		{ID: "apr_2", D: trusted.ApprovalDecision{Approve: false, Reason: "no", Method: "console"}},
	}
	if len(f.fake.decisions) != 2 {
		t.Fatalf("decisions %+v", f.fake.decisions)
	}
	for i, d := range f.fake.decisions {
		if d.ID != want[i].ID || d.D != want[i].D || d.Approver.Name != "reviewer" {
			t.Errorf("decision %d: %+v, want %+v by reviewer", i, d, want[i])
		}
	}
	if a := b.do("POST", "/console/api/approvals/apr_1/deny", "application/json", `{"reason":"late"}`, nil); a.Status != 409 {
		t.Errorf("second decision: %d", a.Status)
	}
	list := b.do("GET", "/console/api/approvals", "", "", nil).json(t)["approvals"].([]any)
	if len(list) != 0 {
		t.Errorf("pending after both decided: %v", list)
	}
}

func TestPendingNewestFirstAndTenantBound(t *testing.T) {
	old := pendingView("apr_old", "agent", "a", "s-1")
	other := pendingView("apr_b", "agent", "b", "s-2")
	other.CreatedAt = old.CreatedAt.Add(time.Minute)
	newest := pendingView("apr_new", "agent", "a", "s-1")
	newest.CreatedAt = old.CreatedAt.Add(2 * time.Minute)
	f := newFixture(t, Options{}, old, other, newest)
	ids := func(b *browser) []string {
		var out []string
		for _, a := range b.do("GET", "/console/api/approvals?status=pending", "", "", nil).json(t)["approvals"].([]any) {
			out = append(out, a.(map[string]any)["id"].(string))
		}
		return out
	}
	all := f.browser()
	all.mustSignIn(keyApprover)
	if got := strings.Join(ids(all), ","); got != "apr_new,apr_b,apr_old" {
		t.Errorf("untenanted approver sees %s", got)
	}
	alice := f.browser()
	alice.mustSignIn(keyTenantA)
	if got := strings.Join(ids(alice), ","); got != "apr_new,apr_old" {
		t.Errorf("tenant a sees %s", got)
	}
	if a := alice.do("GET", "/console/api/approvals/apr_b", "", "", nil); a.Status != 404 {
		t.Errorf("tenant a reads tenant b's approval: %d", a.Status)
	}
	if a := alice.do("POST", "/console/api/approvals/apr_b/approve", "application/json", `{}`, nil); a.Status != 404 || f.fake.count() != 0 {
		t.Errorf("tenant a approves tenant b's approval: %d", a.Status)
	}
}

func TestHostileContentIsInert(t *testing.T) {
	v := pendingView("apr_x", "agent", "", "s-\u202e1")
	v.Input = map[string]any{"path": "x.sh", "content": "<script>alert(1)</script>\u202e# harmless\u2066\x1b[2J"}
	v.Preview = map[string]any{"diff": "+++ b/x.sh\n+<script>alert(1)</script>\u202eevil\n", "k\u200bey": "v"}
	f := newFixture(t, Options{Replay: fakeReplay{"s-\u202e1": {json.RawMessage(`{"message":"\u202e<img src=x onerror=alert(1)>"}`)}}}, v)
	b := f.browser()
	b.mustSignIn(keyApprover)
	for _, path := range []string{"/console/api/approvals", "/console/api/approvals/apr_x", "/console/api/sessions/" + url.PathEscape("s-\u202e1") + "/events"} {
		a := b.do("GET", path, "", "", nil)
		if a.Status != 200 {
			t.Fatalf("%s: %d %s", path, a.Status, a.Body)
		}
		s := string(a.Body)
		for _, raw := range []string{"\u202e", "\u2066", "\x1b", "\u200b", "<script>", "<img"} {
			if strings.Contains(s, raw) {
				t.Errorf("%s: the answer carries %q raw", path, raw)
			}
		}
		var decoded any
		if err := json.Unmarshal(a.Body, &decoded); err != nil {
			t.Fatal(err)
		}
		back, _ := json.Marshal(decoded)
		if !strings.Contains(string(back), "⟨U+202E⟩") {
			t.Errorf("%s: no ⟨U+202E⟩ marker in %s", path, back)
		}
	}
	got := b.do("GET", "/console/api/approvals/apr_x", "", "", nil).json(t)
	content := got["input"].(map[string]any)["content"].(string)
	if content != "<script>alert(1)</script>⟨U+202E⟩# harmless⟨U+2066⟩⟨U+001B⟩[2J" {
		t.Errorf("content shown as %q", content)
	}
	if _, ok := got["preview"].(map[string]any)["k⟨U+200B⟩ey"]; !ok {
		t.Errorf("a key's zero-width space is not shown: %v", got["preview"])
	}
}

func TestSessionHistoryAccess(t *testing.T) {
	rp := fakeReplay{
		"s-1":   {json.RawMessage(`{"seq":1}`), json.RawMessage(`{"seq":2}`)},
		"s-far": {json.RawMessage(`{"seq":9}`)},
	}
	f := newFixture(t, Options{Replay: rp}, pendingView("apr_1", "agent", "", "s-1"))
	approver := f.browser()
	approver.mustSignIn(keyApprover)
	auditor := f.browser()
	auditor.mustSignIn(keyAuditor)
	count := func(b *browser, sess string) (int, int) {
		a := b.do("GET", "/console/api/sessions/"+sess+"/events", "", "", nil)
		if a.Status != 200 {
			return a.Status, 0
		}
		return 200, len(a.json(t)["events"].([]any))
	}
	if st, n := count(approver, "s-1"); st != 200 || n != 2 {
		t.Errorf("approver, its approval's session: %d %d", st, n)
	}
	if st, _ := count(approver, "s-far"); st != 404 {
		t.Errorf("approver, a session of no approval: %d, want 404", st)
	}
	if st, n := count(auditor, "s-far"); st != 200 || n != 1 {
		t.Errorf("agent:audit, any session: %d %d", st, n)
	}
	a := auditor.do("GET", "/console/api/sessions/s-1/events?limit=1", "", "", nil).json(t)
	if n := len(a["events"].([]any)); n != 1 || a["next"] != "1" {
		t.Errorf("limit=1: %v", a)
	}
	a = auditor.do("GET", "/console/api/sessions/s-1/events?after=1", "", "", nil).json(t)
	if evs := a["events"].([]any); len(evs) != 1 || evs[0].(map[string]any)["seq"] != json.Number("2") && evs[0].(map[string]any)["seq"] != 2.0 || a["next"] != "" {
		t.Errorf("after=1: %v", a)
	}
	for _, q := range []string{"limit=0", "limit=x", "limit=1001", "after=x", "after=-1"} {
		if a := auditor.do("GET", "/console/api/sessions/s-1/events?"+q, "", "", nil); a.Status != 400 {
			t.Errorf("%s: %d", q, a.Status)
		}
	}
}

func TestSessionsExpireAndAreBounded(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	f := newFixture(t, Options{Now: clock, SessionTTL: time.Hour, MaxSessions: 2}, pendingView("apr_1", "agent", "", "s"))
	bs := []*browser{f.browser(), f.browser(), f.browser()}
	for i, b := range bs {
		now = now.Add(time.Second)
		b.mustSignIn(keyApprover)
		_ = i
	}
	if f.c.sessions.len() != 2 {
		t.Errorf("%d sessions held, want 2", f.c.sessions.len())
	}
	if a := bs[0].do("GET", "/console/api/approvals", "", "", nil); a.Status != 401 {
		t.Errorf("the oldest session beyond the bound: %d, want 401", a.Status)
	}
	if a := bs[2].do("GET", "/console/api/approvals", "", "", nil); a.Status != 200 {
		t.Errorf("the newest session: %d", a.Status)
	}
	now = now.Add(time.Hour)
	if a := bs[2].do("GET", "/console/api/approvals", "", "", nil); a.Status != 401 {
		t.Errorf("an expired session: %d, want 401", a.Status)
	}
}

func TestSignOut(t *testing.T) {
	f := newFixture(t, Options{})
	b := f.browser()
	b.mustSignIn(keyApprover)
	if a := b.do("POST", "/console/api/signout", "", "", map[string]string{csrfHeader: ""}); a.Status != 403 {
		t.Errorf("CSRF-less sign-out: %d", a.Status)
	}
	if a := b.do("GET", "/console/api/approvals", "", "", nil); a.Status != 200 {
		t.Fatalf("still signed in: %d", a.Status)
	}
	a := b.do("POST", "/console/api/signout", "", "", nil)
	if a.Status != 200 {
		t.Fatalf("sign-out: %d %s", a.Status, a.Body)
	}
	if c := cookieNamed(a.Header, sessionCookie); c == nil || c.MaxAge >= 0 {
		t.Errorf("sign-out does not clear the cookie: %+v", c)
	}
	if f.c.sessions.len() != 0 {
		t.Error("the session is still held")
	}
	if a := b.do("GET", "/console/api/session", "", "", nil); a.json(t)["signed_in"] != false {
		t.Errorf("still signed in: %s", a.Body)
	}
}
