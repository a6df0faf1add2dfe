// Package console is the approval console of SPEC section 5: a small
// browser application, embedded in the binary and served by harness serve
// at /console/, where a person who holds an API key with agent:approve
// sees the actions that wait for approval, newest first, each with the
// action, its session, the rule that asked and its preview rendered for a
// person (a coloured diff with line numbers, a command's argv and what the
// sandbox allows, an MCP call's server, tool and arguments), and approves
// it once or for the session, or denies it with a reason. The session's
// history (from the audit log's replay) is shown beside it.
//
// What it guarantees:
//   - Sign-in exchanges an API key for a session cookie (random 256-bit id,
//     stored server-side only as a hash, bounded in number, expiring;
//     HttpOnly, SameSite=Strict, Path=/console/, Secure unless the request
//     came over plain HTTP to a loopback address, or always with
//     Options.SecureCookies). The key itself is never stored or logged.
//   - Every state-changing request (sign-in, approve, deny, sign-out)
//     needs a CSRF token bound to the session (or, for sign-in, to a
//     pre-session cookie) in the X-CSRF-Token header or a "csrf" form
//     field, and passes net/http's cross-origin check (Sec-Fetch-Site and
//     Origin); otherwise 403 and nothing changes.
//   - Everything that comes from an action reaches the page as JSON whose
//     strings went through sanitize.Inert (control and bidirectional
//     characters shown as ⟨U+202E⟩ markers) and is put into the document
//     with textContent only; the Content-Security-Policy allows scripts
//     and styles from the console itself only, no framing.
//
// What it does not do: decide anything itself. Who may approve what (the
// self-approval rule, scopes, expiry) is the approvals service's; the
// console passes the signed-in principal and method "console".
package console

import (
	"context"
	"embed"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/trusted"
)

//go:embed static
var staticFiles embed.FS

// Approvals is what the console needs of the approvals service
// (*trusted.Service implements it).
type Approvals interface {
	ListApprovals(ctx context.Context, status string) ([]trusted.ApprovalView, error)
	GetApproval(ctx context.Context, id string) (trusted.ApprovalView, error)
	DecideApproval(ctx context.Context, id string, approver trusted.Principal, d trusted.ApprovalDecision) (trusted.ApprovalView, error)
}

// Options configure a Console. Approvals and Keys are required.
type Options struct {
	Approvals Approvals
	// Replay reads a session's events back for the history beside an
	// approval; nil shows no history.
	Replay audit.Replayer
	// Keys authenticates the API keys people sign in with; a key must
	// allow PermApprove.
	Keys *trusted.Keys
	// Logger receives sign-ins, sign-outs and decisions (never keys,
	// cookies or CSRF tokens); nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SessionTTL is how long a sign-in lasts; zero means DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxSessions bounds the signed-in sessions held (the oldest is
	// signed out beyond it); zero means DefaultMaxSessions.
	MaxSessions int
	// SecureCookies marks the session cookie Secure on every request, for
	// a console behind a TLS-terminating proxy that reaches it over plain
	// HTTP on loopback. Without it the cookie is Secure unless the request
	// came over plain HTTP to a loopback address (where browsers would not
	// send a Secure cookie back).
	SecureCookies bool
}

// Defaults.
const (
	DefaultSessionTTL  = 8 * time.Hour
	DefaultMaxSessions = 1000
	// MaxReasonBytes bounds a decision's reason (400 beyond).
	MaxReasonBytes = trusted.MaxApprovalReasonBytes
	// maxBodyBytes bounds every request body the console reads (413).
	maxBodyBytes = 16 << 10
)

// Console serves the console's page and its JSON API under /console/. It
// is an http.Handler; mount it at "/console/".
type Console struct {
	approvals Approvals
	replay    audit.Replayer
	keys      *trusted.Keys
	log       *slog.Logger
	now       func() time.Time
	secure    bool
	sessions  *sessions
	cop       *http.CrossOriginProtection
	mux       *http.ServeMux
}

// New returns a console.
func New(opts Options) (*Console, error) {
	if opts.Approvals == nil || opts.Keys == nil {
		return nil, errors.New("console.New: Approvals and Keys are required")
	}
	c := &Console{
		approvals: opts.Approvals, replay: opts.Replay, keys: opts.Keys, log: opts.Logger, now: opts.Now,
		secure: opts.SecureCookies, cop: http.NewCrossOriginProtection(), mux: http.NewServeMux(),
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	ttl, max := opts.SessionTTL, opts.MaxSessions
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	if max <= 0 {
		max = DefaultMaxSessions
	}
	c.sessions = newSessions(ttl, max, c.now)
	c.routes()
	return c, nil
}

// ServeHTTP serves /console/ and /console/api/.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	c.mux.ServeHTTP(w, r)
}

// securityHeaders are set on every answer: no inline script, nothing from
// elsewhere, no framing, no sniffing, no referrer.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

func (c *Console) routes() {
	c.mux.HandleFunc("GET /console/{$}", c.page)
	c.mux.HandleFunc("GET /console/static/{name}", c.asset)
	c.mux.HandleFunc("GET /console/api/session", c.getSession)
	c.mux.HandleFunc("POST /console/api/session", c.signIn)
	c.mux.HandleFunc("POST /console/api/signout", c.signOut)
	c.mux.HandleFunc("GET /console/api/approvals", c.authed(c.listApprovals))
	c.mux.HandleFunc("GET /console/api/approvals/{id}", c.authed(c.getApproval))
	c.mux.HandleFunc("POST /console/api/approvals/{id}/approve", c.authed(c.decide(true)))
	c.mux.HandleFunc("POST /console/api/approvals/{id}/deny", c.authed(c.decide(false)))
	c.mux.HandleFunc("GET /console/api/sessions/{id}/events", c.authed(c.sessionEvents))
	c.mux.HandleFunc("/console/", func(w http.ResponseWriter, r *http.Request) {
		trusted.WriteError(w, http.StatusNotFound, "not_found", "no such page")
	})
}

func (c *Console) page(w http.ResponseWriter, r *http.Request) {
	data, err := staticFiles.ReadFile("static/index.html")
	if err != nil {
		trusted.WriteError(w, http.StatusInternalServerError, "internal", "page missing")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(data)
}

// assets are the files the page loads, by name, with their types.
var assets = map[string]string{
	"console.js":  "text/javascript; charset=utf-8",
	"console.css": "text/css; charset=utf-8",
}

func (c *Console) asset(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ctype, ok := assets[name]
	if !ok {
		trusted.WriteError(w, http.StatusNotFound, "not_found", "no such file")
		return
	}
	data, err := staticFiles.ReadFile("static/" + name)
	if err != nil {
		trusted.WriteError(w, http.StatusInternalServerError, "internal", "file missing")
		return
	}
	w.Header().Set("Content-Type", ctype)
	_, _ = w.Write(data)
}
