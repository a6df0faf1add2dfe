package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/trusted"
)

// Error codes of the console's API beyond action's.
const (
	codeUnauthorized = "unauthorized"
	codeForbidden    = "forbidden"
	codeCSRF         = "csrf_failed"
	codeCrossOrigin  = "cross_origin"
	codeConflict     = string(trusted.CodeAlreadyDecided)
	codeTooLarge     = "too_large"
)

// inert returns v as JSON-ready data whose every string (object keys
// included) went through sanitize.Inert, so that nothing the action
// carries can disguise itself on the page, whatever the page does with it.
func inert(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return inertValue(out), nil
}

func inertValue(v any) any {
	switch x := v.(type) {
	case string:
		return sanitize.Inert(x)
	case []any:
		for i := range x {
			x[i] = inertValue(x[i])
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[sanitize.Inert(k)] = inertValue(e)
		}
		return out
	}
	return v
}

// secureCookie reports whether the session cookie is marked Secure: always
// over TLS or with Options.SecureCookies; over plain HTTP only when the
// connection did not come to a loopback address (where it then does not
// work: the console is meant to be reached over TLS from elsewhere).
// The local address, not the Host header, decides.
func (c *Console) secureCookie(r *http.Request) bool {
	if c.secure || r.TLS != nil {
		return true
	}
	addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return true
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return true
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

func (c *Console) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: cookiePath, MaxAge: maxAge,
		Secure: c.secureCookie(r), HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}

// current returns the request's signed-in session.
func (c *Console) current(r *http.Request) (session, string, bool) {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, "", false
	}
	s, ok := c.sessions.get(ck.Value)
	return s, ck.Value, ok
}

// unsafe reports whether the method changes state.
func unsafe(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// csrfToken is the token the request carries: the X-CSRF-Token header,
// else a form's "csrf" field (read from the body already parsed).
func csrfToken(r *http.Request, form string) string {
	if t := r.Header.Get(csrfHeader); t != "" {
		return t
	}
	return form
}

// authed runs h for a signed-in session; on a state-changing request only
// after the cross-origin check and with the session's CSRF token (a
// header, the API's JSON bodies carrying none).
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if unsafe(r.Method) {
			if err := c.cop.Check(r); err != nil {
				trusted.WriteError(w, http.StatusForbidden, codeCrossOrigin, "cross-origin request refused")
				return
			}
		}
		s, _, ok := c.current(r)
		if !ok {
			trusted.WriteError(w, http.StatusUnauthorized, codeUnauthorized, "sign in first")
			return
		}
		if unsafe(r.Method) && !sameToken(r.Header.Get(csrfHeader), s.csrf) {
			trusted.WriteError(w, http.StatusForbidden, codeCSRF, "missing or wrong CSRF token")
			return
		}
		h(w, r, s)
	}
}

type sessionInfo struct {
	SignedIn  bool   `json:"signed_in"`
	Principal string `json:"principal,omitempty"`
	Tenant    string `json:"tenant,omitempty"`
	CSRF      string `json:"csrf"`
	ExpiresAt string `json:"expires_at,omitempty"`
}

func info(s session) sessionInfo {
	return sessionInfo{
		SignedIn: true, Principal: sanitize.Inert(s.principal.Name), Tenant: sanitize.Inert(s.principal.Tenant),
		CSRF: s.csrf, ExpiresAt: s.expires.UTC().Format(time.RFC3339),
	}
}

// getSession tells the page whether it is signed in, with the CSRF token
// for what it may post next: the session's, or the sign-in form's (bound
// to a login cookie set here).
func (c *Console) getSession(w http.ResponseWriter, r *http.Request) {
	if s, _, ok := c.current(r); ok {
		trusted.WriteJSON(w, http.StatusOK, info(s))
		return
	}
	v := ""
	if ck, err := r.Cookie(loginCookie); err == nil && len(ck.Value) == 64 {
		v = ck.Value
	} else {
		v = randomHex(32)
		c.setCookie(w, r, loginCookie, v, 3600)
	}
	trusted.WriteJSON(w, http.StatusOK, sessionInfo{CSRF: c.sessions.loginCSRF(v)})
}

// signIn exchanges an API key that allows agent:approve for a session
// cookie. The body is JSON {"key"} or a form with "key" and "csrf".
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	if err := c.cop.Check(r); err != nil {
		trusted.WriteError(w, http.StatusForbidden, codeCrossOrigin, "cross-origin request refused")
		return
	}
	var key, formCSRF string
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
	switch ct {
	case "application/json":
		var body struct {
			Key string `json:"key"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		key = body.Key
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			bodyError(w, err)
			return
		}
		key, formCSRF = r.PostForm.Get("key"), r.PostForm.Get("csrf")
	default:
		trusted.WriteError(w, http.StatusUnsupportedMediaType, string(action.CodeInvalidInput), "send JSON or a form")
		return
	}
	ck, err := r.Cookie(loginCookie)
	if err != nil || !sameToken(csrfToken(r, formCSRF), c.sessions.loginCSRF(ck.Value)) {
		trusted.WriteError(w, http.StatusForbidden, codeCSRF, "missing or wrong CSRF token: reload the page")
		return
	}
	k := c.keys.Authenticate(strings.TrimSpace(key))
	if k == nil {
		trusted.WriteError(w, http.StatusUnauthorized, codeUnauthorized, "unknown API key")
		return
	}
	if !k.Allows(trusted.PermApprove) {
		c.log.Info("console: sign-in refused: the key does not allow agent:approve", "principal", k.Principal.Name)
		trusted.WriteError(w, http.StatusForbidden, codeForbidden, "this key does not allow agent:approve")
		return
	}
	id, s := c.sessions.create(k.Principal, k.Allows(trusted.PermAudit))
	c.setCookie(w, r, sessionCookie, id, int(s.expires.Sub(s.created).Seconds()))
	c.setCookie(w, r, loginCookie, "", -1)
	c.log.Info("console: signed in", "principal", k.Principal.Name, "tenant", k.Principal.Tenant)
	trusted.WriteJSON(w, http.StatusOK, info(s))
}

// signOut ends the session.
func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	c.authed(func(w http.ResponseWriter, r *http.Request, s session) {
		_, id, _ := c.current(r)
		c.sessions.remove(id)
		c.setCookie(w, r, sessionCookie, "", -1)
		c.log.Info("console: signed out", "principal", s.principal.Name)
		trusted.WriteJSON(w, http.StatusOK, sessionInfo{})
	})(w, r)
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		bodyError(w, err)
		return false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "one JSON object expected")
		return false
	}
	return true
}

func bodyError(w http.ResponseWriter, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		trusted.WriteError(w, http.StatusRequestEntityTooLarge, codeTooLarge, "request body too large")
		return
	}
	trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "bad request body: "+err.Error())
}

// visible reports whether s may see an approval of tenant: a key bound to
// a tenant sees that tenant's approvals only.
func visible(s session, tenant string) bool {
	return s.principal.Tenant == "" || s.principal.Tenant == tenant
}

var statuses = map[string]string{
	"pending": trusted.ApprovalPending, "approved": trusted.ApprovalApproved,
	"denied": trusted.ApprovalDenied, "expired": trusted.ApprovalExpired, "all": "",
}

func (c *Console) listApprovals(w http.ResponseWriter, r *http.Request, s session) {
	q := r.URL.Query().Get("status")
	if q == "" {
		q = "pending"
	}
	status, ok := statuses[q]
	if !ok {
		trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "status: pending, approved, denied, expired or all")
		return
	}
	list, err := c.approvals.ListApprovals(r.Context(), status)
	if err != nil {
		c.serviceError(w, err)
		return
	}
	out := make([]any, 0, len(list))
	for _, a := range list {
		if !visible(s, a.Tenant) {
			continue
		}
		v, err := inert(shown(a))
		if err != nil {
			c.serviceError(w, err)
			return
		}
		out = append(out, v)
	}
	trusted.WriteJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

// validID bounds what is passed on as an approval's or session's id.
func validID(id string) bool {
	if id == "" || len(id) > 256 {
		return false
	}
	for _, r := range id {
		if r < 0x21 || r == 0x7f {
			return false
		}
	}
	return true
}

// lookup returns the approval id if s may see it; else it has answered.
func (c *Console) lookup(w http.ResponseWriter, r *http.Request, s session) (trusted.ApprovalView, bool) {
	id := r.PathValue("id")
	if !validID(id) {
		trusted.WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "no such approval")
		return trusted.ApprovalView{}, false
	}
	a, err := c.approvals.GetApproval(r.Context(), id)
	if err != nil {
		c.serviceError(w, err)
		return trusted.ApprovalView{}, false
	}
	if !visible(s, a.Tenant) {
		trusted.WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "no such approval")
		return trusted.ApprovalView{}, false
	}
	return a, true
}

func (c *Console) getApproval(w http.ResponseWriter, r *http.Request, s session) {
	a, ok := c.lookup(w, r, s)
	if !ok {
		return
	}
	c.writeView(w, a)
}

// shown is what the console shows of an approval: never a token (the
// requester's alone; the service sets it only in the requester's claim).
func shown(a trusted.ApprovalView) trusted.ApprovalView {
	a.Token, a.TokenExpiresAt = "", nil
	return a
}

func (c *Console) writeView(w http.ResponseWriter, a trusted.ApprovalView) {
	v, err := inert(shown(a))
	if err != nil {
		c.serviceError(w, err)
		return
	}
	trusted.WriteJSON(w, http.StatusOK, v)
}

// decide approves or denies. The body is {"scope": "once" | "session",
// "reason"}; a deny has no scope.
func (c *Console) decide(approve bool) func(http.ResponseWriter, *http.Request, session) {
	return func(w http.ResponseWriter, r *http.Request, s session) {
		r.Body = http.MaxBytesReader(w, r.Body, maxBodyBytes)
		var body struct {
			Scope  string `json:"scope"`
			Reason string `json:"reason"`
		}
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			trusted.WriteError(w, http.StatusUnsupportedMediaType, string(action.CodeInvalidInput), "send JSON")
			return
		}
		if !readJSON(w, r, &body) {
			return
		}
		if len(body.Reason) > MaxReasonBytes {
			trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput),
				"reason: at most "+strconv.Itoa(MaxReasonBytes)+" bytes")
			return
		}
		switch {
		case !approve && body.Scope != "":
			trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "a denial has no scope")
			return
		case approve && body.Scope == "":
			body.Scope = "once"
		case approve && body.Scope != "once" && body.Scope != "session":
			trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), `scope: "once" or "session"`)
			return
		}
		a, ok := c.lookup(w, r, s)
		if !ok {
			return
		}
		d := trusted.ApprovalDecision{Approve: approve, Scope: body.Scope, Reason: body.Reason, Method: trusted.MethodConsole}
		got, err := c.approvals.DecideApproval(r.Context(), a.ID, s.principal, d)
		if err != nil {
			c.serviceError(w, err)
			return
		}
		c.log.Info("console: decided", "approval", a.ID, "approve", approve, "scope", body.Scope, "principal", s.principal.Name)
		c.writeView(w, got)
	}
}

// maxReplayPages bounds the replay calls of one history request.
const maxReplayPages = 20

// sessionEvents returns a page of the session's history: to a key that
// allows agent:audit any session's, else only that of a session one of
// the approvals it can see belongs to.
func (c *Console) sessionEvents(w http.ResponseWriter, r *http.Request, s session) {
	id := r.PathValue("id")
	if !validID(id) {
		trusted.WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "no such session")
		return
	}
	if c.replay == nil {
		trusted.WriteJSON(w, http.StatusOK, map[string]any{"events": []any{}, "next": ""})
		return
	}
	if !s.audit {
		list, err := c.approvals.ListApprovals(r.Context(), "")
		if err != nil {
			c.serviceError(w, err)
			return
		}
		seen := false
		for _, a := range list {
			if a.SessionID == id && visible(s, a.Tenant) {
				seen = true
				break
			}
		}
		if !seen {
			trusted.WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "no approval of yours belongs to this session")
			return
		}
	}
	q := audit.Query{SessionID: id, Tenant: s.principal.Tenant, Limit: 200}
	if l := r.URL.Query().Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > audit.MaxReplayLimit {
			trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "limit: 1 to "+strconv.Itoa(audit.MaxReplayLimit))
			return
		}
		q.Limit = n
	}
	if a := r.URL.Query().Get("after"); a != "" {
		n, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "after: a cursor from next")
			return
		}
		q.After = n
	}
	// A page may hold fewer records than asked for and still have more
	// after it (a replay reads a bounded part of the log per call): read
	// on, a bounded number of pages.
	var events []any
	want := q.Limit
	for range maxReplayPages {
		page, err := c.replay.Replay(r.Context(), q)
		if err != nil {
			if errors.Is(err, audit.ErrBadQuery) {
				trusted.WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "bad session id")
				return
			}
			c.serviceError(w, err)
			return
		}
		for _, e := range page.Events {
			v, err := inert(e)
			if err != nil {
				c.serviceError(w, err)
				return
			}
			events = append(events, v)
		}
		q.After = page.Next
		if page.Next == 0 || len(events) >= want {
			break
		}
		q.Limit = want - len(events)
	}
	if events == nil {
		events = []any{}
	}
	next := ""
	if q.After != 0 {
		next = strconv.FormatUint(q.After, 10)
	}
	trusted.WriteJSON(w, http.StatusOK, map[string]any{"events": events, "next": next})
}

// serviceError answers an error of the approvals service or the replay
// with the status its code calls for; anything without a code is ours.
func (c *Console) serviceError(w http.ResponseWriter, err error) {
	code := action.CodeOf(err)
	msg := sanitize.Inert(action.MessageOf(err))
	switch code {
	case action.CodeNotFound:
		trusted.WriteError(w, http.StatusNotFound, string(code), msg)
	case action.CodeInvalidInput:
		trusted.WriteError(w, http.StatusBadRequest, string(code), msg)
	case trusted.CodeSelfApproval, action.CodeTenantNotAllowed:
		trusted.WriteError(w, http.StatusForbidden, string(code), msg)
	case action.CodeApprovalDenied, action.CodeApprovalExpired, trusted.CodeAlreadyDecided:
		trusted.WriteError(w, http.StatusConflict, string(code), msg)
	default:
		c.log.Error("console: approvals service failed", "err", err)
		trusted.WriteError(w, http.StatusInternalServerError, string(action.CodeInternal), "internal error")
	}
}
