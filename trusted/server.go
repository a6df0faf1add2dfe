package trusted

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

// DefaultMaxBodyBytes caps request bodies when ServerOptions.MaxBodyBytes
// is zero.
const DefaultMaxBodyBytes = 4 << 20

// HTTP error codes beyond the action codes. The action codes (not_found,
// stale_preview, invalid_input, …) are used as they are.
const (
	CodeInvalidJSON      = "invalid_json"
	CodeUnauthorized     = "unauthorized"
	CodeForbidden        = "forbidden"
	CodeTooLarge         = "too_large"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeRateLimited      = "rate_limited"
	CodeNotReady         = "not_ready"
)

// ReadyCheck is one dependency /readyz checks (the token store is always
// checked; add the audit log and anything else the service needs).
type ReadyCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// ServerOptions configure the HTTP API. Service and Keys are required.
type ServerOptions struct {
	Service *Service
	Keys    *Keys
	// MaxBodyBytes caps request bodies (413 beyond); zero means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxInFlight bounds the action requests being served at once; a
	// request beyond it gets 429 at once. Zero means no bound.
	MaxInFlight int
	// Metrics receives the service's series; nil means NewMetrics().
	// Token events are counted only when the Service was built with
	// Options.Events set to Metrics.Token.
	Metrics *Metrics
	// Ready lists extra /readyz checks.
	Ready []ReadyCheck
	// Sessions resets sessions' governance counters (POST
	// /v1/sessions/{id}/reset); nil answers that route 404.
	Sessions SessionResetter
	// Events is what the event routes read (GET /v1/sessions/{id}/events,
	// /v1/tasks/{id}/events, /v1/events); its zero value answers them 404.
	Events EventSource
	// Logger receives one access-log record per request: method, route
	// pattern, status, duration, principal. Never the path (which holds
	// tokens), headers, or bodies. Nil means slog.Default().
	Logger *slog.Logger
}

// Server is the HTTP API of SPEC section 5 (an http.Handler).
type Server struct {
	svc      *Service
	keys     *Keys
	maxBody  int64
	inflight chan struct{}
	metrics  *Metrics
	ready    []ReadyCheck
	log      *slog.Logger
	mux      *http.ServeMux
	routes   []Route
	openapi  openAPICache
	sessions SessionResetter
}

// Route is one served method and path pattern.
type Route struct {
	Method  string
	Pattern string
}

// NewServer returns the API handler.
func NewServer(opts ServerOptions) (*Server, error) {
	if opts.Service == nil || opts.Keys == nil {
		return nil, errors.New("trusted.NewServer: Service and Keys are required")
	}
	s := &Server{
		svc: opts.Service, keys: opts.Keys, maxBody: opts.MaxBodyBytes, metrics: opts.Metrics,
		log: opts.Logger, mux: http.NewServeMux(), sessions: opts.Sessions,
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if opts.MaxInFlight > 0 {
		s.inflight = make(chan struct{}, opts.MaxInFlight)
	}
	if s.metrics == nil {
		s.metrics = NewMetrics()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.ready = append([]ReadyCheck{{Name: "token_store", Check: s.svc.Store().Ping}}, opts.Ready...)

	s.handle("POST", "/v1/actions", PermExecute, true, s.postAction)
	s.handle("POST", "/v1/actions/preview", PermTrusted, true, s.postPreview)
	s.handle("POST", "/v1/actions/execute/{token}", PermTrusted, true, s.postExecute)
	s.handle("POST", "/v1/sessions/{id}/reset", PermAdmin, false, s.postSessionReset)
	s.registerApprovalRoutes()
	s.registerEventRoutes(opts.Events)
	s.handle("GET", "/v1/schemas", PermExecute, false, public(s.getSchemas))
	s.handle("GET", "/v1/schemas/{action}", PermExecute, false, public(s.getSchema))
	s.handle("GET", "/healthz", "", false, public(s.getHealth))
	s.handle("GET", "/readyz", "", false, public(s.getReady))
	s.handle("GET", "/metrics", "", false, public(s.metrics.Handler().ServeHTTP))
	s.handle("GET", "/openapi.json", "", false, public(s.getOpenAPI))
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "no such route")
	})
	return s, nil
}

// Routes returns every served method and pattern, sorted.
func (s *Server) Routes() []Route {
	out := append([]Route(nil), s.routes...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Pattern != out[j].Pattern {
			return out[i].Pattern < out[j].Pattern
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// ServeHTTP serves the API and writes the access log.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK, route: "unmatched"}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.log.Error("http: handler panicked", "route", rec.route, "panic", fmt.Sprint(p))
			if !rec.wrote {
				WriteError(rec, http.StatusInternalServerError, string(action.CodeInternal), "internal error")
			}
		}
		code := strconv.Itoa(rec.status)
		s.metrics.requests.WithLabelValues(rec.route, code).Inc()
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "http request",
			slog.String("method", r.Method), slog.String("route", rec.route), slog.Int("status", rec.status),
			slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
			slog.String("principal", rec.principal), slog.Int64("bytes_in", r.ContentLength),
			slog.Int("bytes_out", rec.bytes), slog.String("remote", r.RemoteAddr))
	}()
	if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p && path.Clean(p)+"/" != p {
		// The mux would answer an unclean path ("/v1/actions/execute/.")
		// with a redirect; an API answers it as the route it is not.
		WriteError(rec, http.StatusNotFound, string(action.CodeNotFound), "no such route")
		return
	}
	s.mux.ServeHTTP(rec, r)
}

// recorder captures what the access log and the metrics need.
type recorder struct {
	http.ResponseWriter
	status    int
	bytes     int
	wrote     bool
	route     string
	principal string
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// keyHandler is a handler that runs for an authenticated key (nil on
// routes that need no permission).
type keyHandler func(w http.ResponseWriter, r *http.Request, k *Key)

func public(h http.HandlerFunc) keyHandler {
	return func(w http.ResponseWriter, r *http.Request, _ *Key) { h(w, r) }
}

// handle registers one route. The pattern is registered without a method
// so that a wrong method gets a JSON 405 rather than the mux's plain text;
// auth runs before the method check, so an anonymous caller learns nothing.
func (s *Server) handle(method, pattern string, perm Permission, limited bool, h keyHandler) {
	s.routes = append(s.routes, Route{Method: method, Pattern: pattern})
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		rec, _ := w.(*recorder)
		if rec != nil {
			rec.route = pattern
		}
		var key *Key
		if perm != "" {
			key = s.keys.Authenticate(bearer(r))
			if key == nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="harness"`)
				WriteError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or invalid bearer token")
				return
			}
			if rec != nil {
				rec.principal = key.Principal.Name
			}
			if perm != permAnyKey && !key.Allows(perm) {
				WriteError(w, http.StatusForbidden, CodeForbidden, "principal "+key.Principal.Name+" lacks the "+string(perm)+" permission")
				return
			}
		}
		if r.Method != method && !(method == "GET" && r.Method == "HEAD") {
			w.Header().Set("Allow", method)
			WriteError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "use "+method+" on this route")
			return
		}
		if r.ContentLength > s.maxBody {
			// Answer on the headers alone and close: reading (or draining)
			// a body we refuse is work for the sender, not for us.
			w.Header().Set("Connection", "close")
			WriteError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("request body exceeds %d bytes", s.maxBody))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		if limited && s.inflight != nil {
			select {
			case s.inflight <- struct{}{}:
				defer func() { <-s.inflight }()
			default:
				w.Header().Set("Retry-After", "1")
				WriteError(w, http.StatusTooManyRequests, CodeRateLimited, "too many requests in flight; retry")
				return
			}
		}
		h(w, r, key)
	})
}

// errorBody is the JSON of every error answer.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		// ActionID, Decision and Approval are set for a refused preview:
		// the action's audit records carry the same id and decision.
		ActionID string           `json:"action_id,omitempty"`
		Decision *action.Decision `json:"decision,omitempty"`
		Approval *action.Approval `json:"approval,omitempty"`
	} `json:"error"`
}

// WriteError answers the API's error body {"error": {"code", "message"}}
// with status.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	var b errorBody
	b.Error.Code, b.Error.Message = code, msg
	WriteJSON(w, status, b)
}

// WriteJSON answers v as JSON with status, never cached; a v that cannot
// be encoded is answered as an internal error.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		data = []byte(`{"error":{"code":"internal","message":"response is not encodable"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(data, '\n'))
}

// decodeAction reads the request body as one Action. It answers the error
// itself and returns false when the body is not one. Trusted is always
// reset: trust never comes from a request body.
func (s *Server) decodeAction(w http.ResponseWriter, r *http.Request) (action.Action, bool) {
	var a action.Action
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			w.Header().Set("Connection", "close")
			WriteError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("request body exceeds %d bytes", s.maxBody))
			return a, false
		}
		WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "cannot read the request body")
		return a, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		writeDecodeError(w, err)
		return a, false
	}
	if dec.More() {
		WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "the body holds more than one JSON value")
		return a, false
	}
	if _, err := dec.Token(); err != io.EOF {
		WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "trailing data after the JSON object")
		return a, false
	}
	a.Trusted = false
	return a, true
}

func writeDecodeError(w http.ResponseWriter, err error) {
	var ute *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &ute):
		field := ute.Field
		if field == "" {
			field = "body"
		}
		WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), fmt.Sprintf("%s: want %s, got JSON %s", field, ute.Type, ute.Value))
	case errors.As(err, &se), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "the body is not valid JSON: "+err.Error())
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), strings.TrimPrefix(err.Error(), "json: "))
	default:
		WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "the body is not an Action: "+err.Error())
	}
}

// bindTenant applies a tenant-bound key to an action: the action's tenant
// must be empty (it becomes the key's) or the key's own.
func bindTenant(w http.ResponseWriter, k *Key, a *action.Action) bool {
	t := k.Principal.Tenant
	if t == "" {
		return true
	}
	if a.Tenant != "" && a.Tenant != t {
		WriteError(w, http.StatusForbidden, string(action.CodeTenantNotAllowed), "principal "+k.Principal.Name+" may not act for tenant "+strconv.Quote(a.Tenant))
		return false
	}
	a.Tenant = t
	return true
}

func (s *Server) postAction(w http.ResponseWriter, r *http.Request, k *Key) {
	a, ok := s.decodeAction(w, r)
	if !ok || !bindTenant(w, k, &a) {
		return
	}
	h := s.svc.Harness()
	start := time.Now()
	obs := h.Execute(runtime.WithPrincipal(r.Context(), k.Principal.Name), a)
	s.observe(a.Name, obs, start)
	if obs.Code == action.CodeRateLimited { // SPEC 5: 429 with Retry-After
		s.writeActionError(w, &action.Refusal{Observation: obs}, previewStatus)
		return
	}
	WriteJSON(w, http.StatusOK, obs)
}

func (s *Server) postPreview(w http.ResponseWriter, r *http.Request, k *Key) {
	a, ok := s.decodeAction(w, r)
	if !ok {
		return
	}
	res, err := s.svc.Preview(r.Context(), k.Principal, a)
	if err != nil {
		s.writeActionError(w, err, previewStatus)
		return
	}
	WriteJSON(w, http.StatusOK, res)
}

func (s *Server) postExecute(w http.ResponseWriter, r *http.Request, k *Key) {
	start := time.Now()
	obs, err := s.svc.Execute(r.Context(), k.Principal, r.PathValue("token"))
	if err != nil {
		if obs.Action != "" {
			s.observe(obs.Action, obs, start)
		}
		s.writeActionError(w, err, executeStatus)
		return
	}
	s.observe(obs.Action, obs, start)
	WriteJSON(w, http.StatusOK, obs)
}

func (s *Server) observe(name string, obs action.Observation, start time.Time) {
	if _, ok := s.svc.Harness().Registry().Lookup(name); !ok {
		name = "unregistered"
	}
	s.metrics.latency.WithLabelValues(name, string(obs.Status)).Observe(time.Since(start).Seconds())
}

func (s *Server) writeActionError(w http.ResponseWriter, err error, status func(action.Code) int) {
	code := action.CodeOf(err)
	msg := action.MessageOf(err)
	if code == action.CodeRateLimited {
		var payload map[string]any
		var ae *action.Error
		var rf *action.Refusal
		if errors.As(err, &rf) { // a guard's refusal: its observation says when
			payload = rf.Observation.Payload
		} else if errors.As(err, &ae) {
			payload = ae.Payload
		}
		if ms, ok := payload["retry_after_ms"].(int64); ok && ms > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt((ms+999)/1000, 10))
		} else {
			w.Header().Set("Retry-After", "1")
		}
	}
	if code == action.CodeInternal {
		s.log.Error("http: internal error", "err", err)
		msg = "internal error"
	}
	var refused *action.Refusal
	if errors.As(err, &refused) && code != action.CodeInternal {
		var b errorBody
		o := refused.Observation
		b.Error.Code, b.Error.Message = string(code), msg
		b.Error.ActionID, b.Error.Decision, b.Error.Approval = o.ActionID, o.Decision, o.Approval
		WriteJSON(w, status(code), b)
		return
	}
	WriteError(w, status(code), string(code), msg)
}

// previewStatus maps a refused preview to its HTTP status, from the code
// table in action.
func previewStatus(c action.Code) int { return c.HTTPStatus() }

// executeStatus maps a refused redeem: 404 for any token that cannot be
// redeemed (not_found), 409 for a stale preview, from the same table.
func executeStatus(c action.Code) int { return c.HTTPStatus() }

func (s *Server) getSchemas(w http.ResponseWriter, r *http.Request) {
	list := s.svc.Harness().Registry().List()
	WriteJSON(w, http.StatusOK, map[string]any{"actions": list})
}

func (s *Server) getSchema(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("action")
	sc, ok := s.svc.Harness().Registry().Lookup(name)
	if !ok {
		WriteError(w, http.StatusNotFound, string(action.CodeUnknownAction), "no action named "+strconv.Quote(name)+" is registered")
		return
	}
	WriteJSON(w, http.StatusOK, sc)
}

// getOpenAPI serves the document of the actions registered now.
func (s *Server) getOpenAPI(w http.ResponseWriter, r *http.Request) {
	doc, err := s.openapi.get(s.svc.Harness().Registry())
	if err != nil {
		s.log.Error("http: openapi document", "err", err)
		WriteError(w, http.StatusInternalServerError, string(action.CodeInternal), "internal error")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(doc)
}

func (s *Server) getHealth(w http.ResponseWriter, r *http.Request) {
	WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) getReady(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	checks := map[string]string{}
	ready := true
	for _, c := range s.ready {
		if err := c.Check(ctx); err != nil {
			checks[c.Name] = err.Error()
			ready = false
		} else {
			checks[c.Name] = "ok"
		}
	}
	if !ready {
		WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "not_ready", "checks": checks,
			"error": map[string]string{"code": CodeNotReady, "message": "a dependency is unreachable"}})
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}
