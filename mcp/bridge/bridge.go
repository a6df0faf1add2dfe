package bridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/mcp"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
)

// DefaultPrincipal is who the bridge says is asking, in the guard's request
// and in every event, unless WithPrincipal says otherwise.
const DefaultPrincipal = "mcp"

// Server is the MCP server bridge behind `harness mcp`: every registered
// action that is not disabled is an MCP tool of the same name, whose input
// schema is the registry's and whose annotations follow its risk
// (readOnlyHint for read, destructiveHint for write and exec, openWorldHint
// for network).
//
// Every call goes through Harness.Execute: the same guard, the same events.
// A trusted action runs directly only when it is auto-approved
// (harness.auto-approved-actions). One listed in
// harness.mcp.bridge.trusted-actions runs after the person confirms its
// preview (the diff of a patch, the argv of a command) through MCP
// elicitation; a client without elicitation gets trust_required. Any other
// trusted action is refused with trust_required and a message saying how to
// allow it. Nothing a client sends marks an action trusted.
//
// A tool result carries the observation's Render text as text content and
// the observation as structured content, less what the text carries whole
// (a file's content, a listing's names and types: see InText), so that a
// client parses it once; isError is set when the status is not ok. Every
// client gets the same result, whatever it reads of it.
type Server struct {
	h         *runtime.Harness
	srv       *mcpserver.MCPServer
	confirmed map[string]bool
	log       *slog.Logger
	principal string
	key       []byte
	flow      TrustFlow
	pending   pendingTokens
	disabled  map[string]bool
	roots     *rootsGate
	approvals *approvalWaits
	syncMu    sync.Mutex
}

// ServerOption configures NewServer.
type ServerOption func(*Server)

// WithLogger sets the logger for the bridge's operational messages.
func WithLogger(l *slog.Logger) ServerOption { return func(s *Server) { s.log = l } }

// WithPrincipal names who is asking (default "mcp").
func WithPrincipal(p string) ServerOption { return func(s *Server) { s.principal = p } }

// NewServer builds the bridge over h with cfg's rules (cfg must be
// resolved and be the one h was built from). The tool list is taken from
// h's registry now; Sync serves actions registered later (StartClient's
// callback is the place to call it).
func NewServer(h *runtime.Harness, cfg *config.Config, opts ...ServerOption) (*Server, error) {
	if h == nil || cfg == nil {
		return nil, fmt.Errorf("bridge.NewServer: a Harness and a Config are required")
	}
	s := &Server{h: h, confirmed: map[string]bool{}, log: slog.Default(), principal: DefaultPrincipal, key: make([]byte, 32)}
	for _, o := range opts {
		o(s)
	}
	if _, err := rand.Read(s.key); err != nil {
		return nil, fmt.Errorf("bridge.NewServer: %w", err)
	}
	for _, n := range cfg.Harness.MCP.Bridge.TrustedActions {
		s.confirmed[n] = true
	}
	hooks := &mcpserver.Hooks{}
	hooks.AddBeforeAny(requestRegistered)
	s.srv = mcpserver.NewMCPServer("harness", mcp.Version,
		mcpserver.WithHooks(hooks),
		mcpserver.WithToolCapabilities(true),
		mcpserver.WithElicitation(),
		mcpserver.WithRecovery(),
		mcpserver.WithInstructions("Harness runs an agent's actions behind a policy guard. Paths are relative to the workspace root. "+
			"Every result carries the observation (status, code, message, payload) as structured content; "+
			"a payload field listed in the payload's in_text (a file's content, a listing's entries) is in the text block instead."),
	)
	s.roots = newRootsGate(cfg.Harness.Workspace.Root)
	s.srv.AddNotificationHandler(mcpgo.MethodNotificationRootsListChanged, s.onRootsChanged)
	s.disabled = map[string]bool{}
	for _, n := range cfg.Harness.DisabledActions {
		s.disabled[n] = true
	}
	// mcp_call reaches configured MCP servers only: with none, it is not
	// offered (a client would see a tool that can only fail).
	if len(cfg.Harness.MCP.Servers) == 0 {
		s.disabled[mcp.CallAction] = true
	}
	if err := s.Sync(); err != nil {
		return nil, err
	}
	return s, nil
}

// Sync serves as tools the registered actions not served yet: at
// NewServer all of them, later those registered since (the tools of an MCP
// server that connected after the bridge started). Clients are told with
// notifications/tools/list_changed. It is safe to call at any time.
func (s *Server) Sync() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	served := s.srv.ListTools()
	var tools []mcpserver.ServerTool
	for _, sc := range s.h.Registry().List() {
		if s.disabled[sc.Name] || served[sc.Name] != nil {
			continue
		}
		tools = append(tools, mcpserver.ServerTool{Tool: s.toolFor(sc), Handler: s.handlerFor(sc.Name)})
	}
	if len(tools) == 0 {
		return nil
	}
	return addTools(s.srv, tools)
}

// addTools adds tools, turning mcp-go's panic on a tool it rejects into an
// error.
func addTools(srv *mcpserver.MCPServer, tools []mcpserver.ServerTool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcp bridge: serve tools: %v", r)
		}
	}()
	srv.AddTools(tools...)
	return nil
}

// toolFor describes one action as an MCP tool.
func (s *Server) toolFor(sc *schema.ActionSchema) mcpgo.Tool {
	desc := sc.Description
	switch {
	case !sc.Trusted || s.h.Guard().AutoApproved(sc.Name):
	case s.confirmed[sc.Name]:
		desc += " Asks you to confirm a preview before it runs."
	default:
		desc += " Needs trust: refused over MCP unless listed in harness.auto-approved-actions or harness.mcp.bridge.trusted-actions."
	}
	t := mcpgo.NewToolWithRawSchema(sc.Name, strings.TrimSpace(desc), sc.Input)
	yes, no := true, false
	t.Annotations = mcpgo.ToolAnnotation{Title: sc.Name}
	switch sc.Risk {
	case schema.RiskRead:
		t.Annotations.ReadOnlyHint, t.Annotations.DestructiveHint, t.Annotations.IdempotentHint = &yes, &no, &yes
		t.Annotations.OpenWorldHint = &no
	case schema.RiskWrite, schema.RiskExec:
		t.Annotations.ReadOnlyHint, t.Annotations.DestructiveHint = &no, &yes
		t.Annotations.OpenWorldHint = &no
	case schema.RiskNetwork:
		t.Annotations.ReadOnlyHint, t.Annotations.OpenWorldHint = &no, &yes
	}
	return t
}

// handlerFor is the one tools/call handler of action name, whatever the
// transport. A panic below it becomes an internal error result for the
// call, so that the client is answered with an observation like any other.
func (s *Server) handlerFor(name string) mcpserver.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (res *mcpgo.CallToolResult, err error) {
		defer func() {
			if r := recover(); r != nil {
				res, err = toolResult(internalError(action.Observation{Action: name}, fmt.Sprintf("internal error: %v", r))), nil
			}
		}()
		var sessionID string
		if sess := mcpserver.ClientSessionFromContext(ctx); sess != nil {
			sessionID = sess.SessionID()
		}
		if res := s.checkRoots(ctx, name, &req); res != nil {
			return res, nil
		}
		a, refused := s.actionFor(name, req.Params.Arguments, sessionID, clientName(ctx))
		if refused == nil && s.needsConfirmation(name) {
			return s.confirmAndRun(runtime.WithPrincipal(ctx, s.principal), req, a)
		}
		if refused != nil {
			return toolResult(*refused), nil
		}
		if obs, ok := s.resumeApproval(ctx, sessionID, a); ok {
			return toolResult(obs), nil
		}
		return toolResult(s.afterRun(ctx, sessionID, a, s.run(ctx, a))), nil
	}
}

// actionFor is the action a tools/call of name asks for, or the refusal of
// arguments that are not a JSON object.
func (s *Server) actionFor(name string, args any, sessionID, agentID string) (action.Action, *action.Observation) {
	a := action.Action{Name: name, Input: map[string]any{}, SessionID: sessionID, AgentID: agentID}
	switch x := args.(type) {
	case nil:
	case map[string]any:
		a.Input = x
	default:
		obs := s.blocked(a, policy.Decision{Code: action.CodeInvalidInput, Message: "tool arguments must be a JSON object"})
		return a, &obs
	}
	return a, nil
}

// needsConfirmation reports whether calls of name run only after the
// person confirms their preview (they need the client's session).
func (s *Server) needsConfirmation(name string) bool {
	if !s.confirmed[name] {
		return false
	}
	sc, ok := s.h.Registry().Lookup(name)
	return ok && sc.Trusted && !s.h.Guard().AutoApproved(name)
}

// run executes a for a call that needs no confirmation: directly when the
// action needs no trust or is auto-approved, otherwise to the guard's
// trust_required, with a message saying how to allow it over MCP.
func (s *Server) run(ctx context.Context, a action.Action) action.Observation {
	// The bridge only renders and encodes a payload (toolResult), so a
	// runtime may hand it values it shares with later calls.
	ctx = action.WithReadOnlyPayload(runtime.WithPrincipal(ctx, s.principal))
	obs := s.h.Execute(ctx, a)
	if obs.Code == action.CodeTrustRequired {
		if sc, ok := s.h.Registry().Lookup(a.Name); ok && sc.Trusted && !s.h.Guard().AutoApproved(a.Name) {
			obs.Message = a.Name + " needs trust: to allow it over MCP, list it in harness.auto-approved-actions (runs without confirmation) " +
				"or in harness.mcp.bridge.trusted-actions (the person confirms each call's preview through MCP elicitation)"
			if obs.Decision != nil {
				d := *obs.Decision
				d.Reason = obs.Message
				obs.Decision = &d
			}
		}
	}
	return obs
}

// blocked is the observation of a refusal decided before Execute.
func (s *Server) blocked(a action.Action, d policy.Decision) action.Observation {
	d.Check = "mcp_bridge"
	return action.Observation{Action: a.Name, Source: action.SourcePolicy, Status: d.Code.Status(), Code: d.Code, Message: d.Message, Decision: d.Info()}
}

// toolResult is the MCP form of an observation: its Render text as the
// text block, and the observation as structured content, except for a
// payload field that the text block already carries whole (see InText),
// which is not sent twice. The observation goes into the result as a
// value, so that the transport encodes it once; a payload that JSON cannot
// encode is replaced by an internal error first, so that encoding the
// response never fails. A listing's entries that go into the result are a
// copy: the payload's may be shared (see Server.run), and the result is
// the transport's, or in process its client's.
func toolResult(obs action.Observation) *mcpgo.CallToolResult {
	if obs.Payload == nil {
		obs.Payload = map[string]any{}
	}
	text, field := renderResult(obs)
	structured := obs
	es, typed := obs.Payload["entries"].(action.Entries)
	if field != "" || typed {
		p := make(map[string]any, len(obs.Payload)+1)
		for k, v := range obs.Payload {
			if k != field {
				p[k] = v
			}
		}
		if field != "" {
			p[InText] = []string{field}
		}
		if typed && field != "entries" {
			p["entries"] = slices.Clone(es)
		}
		structured.Payload = p
	}
	if !encodable(structured.Payload, 0) {
		obs = internalError(obs, errUnencodable)
		structured, text = obs, Render(obs)
	}
	return &mcpgo.CallToolResult{
		Content:           []mcpgo.Content{mcpgo.NewTextContent(text)},
		StructuredContent: structured,
		IsError:           obs.Status != action.StatusOK,
	}
}

// errUnencodable is the message of an observation whose payload JSON
// cannot encode.
const errUnencodable = "observation payload is not encodable as JSON"

// internalError replaces obs, which the client cannot be given as it is,
// by an internal error saying why; it keeps the ids and the latency.
func internalError(obs action.Observation, message string) action.Observation {
	return action.Observation{ActionID: obs.ActionID, Action: obs.Action, Source: action.SourceHarness, Status: action.StatusError,
		Code: action.CodeInternal, Message: message, Payload: map[string]any{}, LatencyMS: obs.LatencyMS}
}

// encodable reports whether encoding/json can encode v. It walks the
// generic shapes runtimes return without encoding them, and encodes only
// values of other types.
func encodable(v any, depth int) bool {
	if depth > 256 {
		return false
	}
	switch x := v.(type) {
	case nil, string, bool, json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, []string, time.Time:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	case float32:
		return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	case map[string]any:
		for _, e := range x {
			if !encodable(e, depth+1) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !encodable(e, depth+1) {
				return false
			}
		}
		return true
	case []map[string]any:
		for _, e := range x {
			if !encodable(e, depth+1) {
				return false
			}
		}
		return true
	}
	return marshals(v)
}

// marshals reports whether encoding/json encodes v without an error or a
// panic (a MarshalJSON method may panic).
func marshals(v any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := json.Marshal(v)
	return err == nil
}

// clientName is the MCP client's name, for the events' agent_id.
func clientName(ctx context.Context) string {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientInfo != nil && info.ClientInfo.Name != "" {
		return "mcp:" + info.ClientInfo.Name
	}
	if sess, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		if n := sess.GetClientInfo().Name; n != "" {
			return "mcp:" + n
		}
	}
	return ""
}

// clientCanElicit reports whether the client declared the elicitation
// capability: per request in the stateless protocol, per session before it.
func clientCanElicit(ctx context.Context) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	if sess, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		return sess.GetClientCapabilities().Elicitation != nil
	}
	return false
}

// MCPServer returns the underlying mcp-go server (to serve it over another
// transport).
func (s *Server) MCPServer() *mcpserver.MCPServer { return s.srv }

// Tools returns the names of the tools served, sorted.
func (s *Server) Tools() []string {
	var names []string
	for n := range s.srv.ListTools() {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// HTTPHandler returns the streamable HTTP transport (with legacy sessions
// for clients of protocol revisions up to 2025-11-25) as an http.Handler to
// mount at the MCP endpoint. Requests whose Host is not a loopback name are
// refused when the server listens on loopback (DNS-rebinding protection).
func (s *Server) HTTPHandler() http.Handler {
	return mcpserver.NewStreamableHTTPServer(s.srv, mcpserver.WithEndpointPath("/mcp"))
}

// ServeHTTP serves streamable HTTP at path /mcp on ln until ctx is done;
// then calls under way get up to 5 seconds to finish.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", CheckOrigin(s.HTTPHandler()))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: defaultReadHeaderTimeout}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			// Calls under way get a few seconds to answer.
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if hs.Shutdown(sctx) != nil {
				_ = hs.Close()
			}
		case <-done:
		}
	}()
	err := hs.Serve(ln)
	close(done)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// CheckOrigin refuses (403) a request whose Origin header names a web
// page other than one on this machine's loopback: the MCP specification
// requires a streamable HTTP server to validate Origin, so that a web page
// the person visits cannot drive the bridge through their browser (DNS
// rebinding). Requests without an Origin (command-line and desktop
// clients) pass.
func CheckOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			http.Error(w, `{"error":{"code":"forbidden","message":"origin `+strconv.Quote(o)+` may not use this MCP server"}}`, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
