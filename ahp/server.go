package ahp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
)

// Handler decides the generic blocking events a Server receives
// (pre_action, pre_prompt, and handshake or query sent as events), and the
// blocking events of a batch. An error answers the request with
// CodeInternalError; inside a batch it becomes a block decision.
//
// A Handler may also implement NotificationHandler, QueryHandler,
// SpecializedHandler and HandshakeHandler. Its methods are called
// concurrently.
type Handler interface {
	HandleEvent(ctx context.Context, ev *WireEvent) (Decision, error)
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(ctx context.Context, ev *WireEvent) (Decision, error)

// HandleEvent calls f.
func (f HandlerFunc) HandleEvent(ctx context.Context, ev *WireEvent) (Decision, error) {
	return f(ctx, ev)
}

// NotificationHandler receives the notifications (post_action, error,
// session_start, …) once they passed validation; in a batch, a
// notification-type event is given to it and answered allow (block if it
// fails). Without it notifications are accepted and dropped.
type NotificationHandler interface {
	HandleNotification(ctx context.Context, ev *WireEvent) error
}

// QueryHandler answers ahp/query. Without it a query is answered
// CodeInternalError ("query not supported").
type QueryHandler interface {
	HandleQuery(ctx context.Context, q *QueryRequest) (*QueryResponse, error)
}

// SpecializedHandler answers the specialized events (idle,
// context_perception, …). payload is the event's payload decoded into its
// type (*IdlePayload, *ContextPerceptionPayload, …, see
// SpecializedPayload); the decision must be of the event's shape
// (DecisionFor() == ev.EventType), or the request is answered
// CodeInternalError. Without it idle is answered allow and the other
// specialized events CodeInternalError ("not supported").
type SpecializedHandler interface {
	HandleSpecialized(ctx context.Context, ev *WireEvent, payload any) (SpecializedDecision, error)
}

// HandshakeHandler sees each compatible handshake before it is answered;
// it may return a session token for the reply. An error refuses the
// handshake (CodeInternalError).
type HandshakeHandler interface {
	HandleHandshake(ctx context.Context, req *HandshakeRequest) (sessionToken string, err error)
}

// ServerOptions configure a Server. The zero value is usable.
type ServerOptions struct {
	// Info is what the handshake reply says of the harness; an empty Name
	// means "harness" with version Version and DefaultCapabilities.
	Info HarnessInfo
	// Config is the limits announced in the handshake reply and enforced
	// (depth, batch size); nil means DefaultHarnessConfig.
	Config *HarnessConfig
	// MaxMessageBytes bounds one message (default 1 MiB). A longer line or
	// frame is refused (CodeInvalidRequest, HTTP 413).
	MaxMessageBytes int
	// MaxConcurrent bounds the requests handled at once across all
	// connections (default 64). 1 handles every message of a connection
	// in order, one at a time, answers in the order of the requests.
	MaxConcurrent int
	// Authenticate, when set, checks the credential of HTTP and WebSocket
	// peers: the X-API-Key header, the Bearer token of Authorization, or
	// for WebSocket the api_key or token query parameter. nil: no
	// authentication (stdio and Unix sockets never authenticate; their
	// access is the process's and the socket file's).
	Authenticate func(credential string) bool
	// Logger receives messages that were dropped and why (default: none).
	Logger *slog.Logger
}

// DefaultCapabilities is what a Server announces when ServerOptions.Info
// is empty.
var DefaultCapabilities = []string{"pre_action", "post_action", "pre_prompt", "query", "batch",
	"run_lifecycle", "task_list", "verification"}

// Server answers AHP messages from agents with a Handler: the protocol's
// validation rules are applied here, so a Handler only sees well-formed
// events it must decide. One Server serves any number of transports and
// connections at once (ServeStream, Serve, HTTPHandler, WebSocketHandler).
type Server struct {
	h      Handler
	info   HarnessInfo
	config HarnessConfig
	max    int
	sem    chan struct{}
	auth   func(string) bool
	log    *slog.Logger
	hello  []byte // the handshake reply without a session token

	mu        sync.Mutex
	closed    bool
	inflight  sync.WaitGroup
	conns     map[*serverConn]struct{}
	listeners map[closer]struct{}
}

type closer interface{ Close() error }

// NewServer returns a Server answering with h.
func NewServer(h Handler, opts ServerOptions) *Server {
	s := &Server{h: h, info: opts.Info, max: opts.MaxMessageBytes, auth: opts.Authenticate, log: opts.Logger,
		conns: map[*serverConn]struct{}{}, listeners: map[closer]struct{}{}}
	if s.info.Name == "" {
		s.info = HarnessInfo{Name: "harness", Version: Version, Capabilities: DefaultCapabilities}
	}
	if opts.Config != nil {
		s.config = *opts.Config
	} else {
		s.config = DefaultHarnessConfig()
	}
	if s.max <= 0 {
		s.max = 1 << 20
	}
	n := opts.MaxConcurrent
	if n <= 0 {
		n = 64
	}
	s.sem = make(chan struct{}, n)
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.hello, _ = json.Marshal(HandshakeResponse{ProtocolVersion: Version, HarnessInfo: s.info, Config: &s.config})
	return s
}

// Config returns the limits the server enforces and announces.
func (s *Server) Config() HarnessConfig { return s.config }

// HandleMessage answers one JSON-RPC message and returns the response, or
// nil when nothing is answered (a notification, or a message dropped
// because it is not JSON-RPC). It is what every transport calls; it is
// exported for transports of one's own and for tests.
func (s *Server) HandleMessage(ctx context.Context, msg []byte) []byte {
	m, err := parseMessage(msg)
	if err != nil {
		s.log.Debug("ahp: message dropped", "why", err.Message)
		return nil
	}
	if !s.begin() {
		return nil
	}
	defer s.inflight.Done()
	resp, nerr := s.dispatch(ctx, m)
	if nerr != nil {
		s.log.Debug("ahp: notification refused", "code", nerr.Code, "why", nerr.Message)
	}
	return resp
}

// begin counts a message in flight, unless the server is shutting down.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.inflight.Add(1)
	return true
}

// dispatch answers a parsed message: a response for a request, nil for a
// notification (with the reason when the notification was refused).
func (s *Server) dispatch(ctx context.Context, m *rpcMessage) (resp []byte, refused *RPCError) {
	if !m.hasID() {
		return nil, s.notification(ctx, m)
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		return appendError(nil, m.ID, CodeInvalidRequest, `Invalid Request: jsonrpc must be "2.0"`), nil
	}
	var result []byte
	var rerr *RPCError
	switch *m.Method {
	case MethodHandshake:
		result, rerr = s.handshake(ctx, m.Params)
	case MethodEvent:
		result, rerr = s.event(ctx, m.Params)
	case MethodQuery:
		result, rerr = s.query(ctx, m.Params)
	case MethodBatch:
		result, rerr = s.batch(ctx, m.Params)
	default:
		rerr = &RPCError{Code: CodeMethodNotFound, Message: "Method not found"}
	}
	if rerr != nil {
		return appendError(nil, m.ID, rerr.Code, rerr.Message), nil
	}
	return appendResult(make([]byte, 0, len(result)+len(m.ID)+40), m.ID, result), nil
}

func invalidParams(err error) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: "Invalid params: " + err.Error()}
}

func invalidEvent(err error) *RPCError {
	return &RPCError{Code: CodeInvalidParams, Message: "Invalid event: " + err.Error()}
}

func handlerError(err error) *RPCError {
	return &RPCError{Code: CodeInternalError, Message: "Handler error: " + err.Error()}
}

func internalError(err error) *RPCError {
	return &RPCError{Code: CodeInternalError, Message: "Internal error: " + err.Error()}
}

// notification handles a message without id: only ahp/event is
// meaningful; anything else is ignored, as the protocol asks.
func (s *Server) notification(ctx context.Context, m *rpcMessage) *RPCError {
	if *m.Method != MethodEvent {
		return nil
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		return &RPCError{Code: CodeInvalidRequest, Message: `Invalid Request: jsonrpc must be "2.0"`}
	}
	if isNull(m.Params) {
		return invalidParams(fmt.Errorf("missing params"))
	}
	var ev WireEvent
	if err := ev.UnmarshalJSON(m.Params); err != nil {
		return invalidParams(err)
	}
	if err := s.validateEvent(&ev); err != nil {
		return invalidEvent(err)
	}
	if ev.EventType.IsBlocking() {
		return &RPCError{Code: CodeInvalidParams, Message: fmt.Sprintf("Blocking event %s must be sent as a request", ev.EventType)}
	}
	if nh, ok := s.h.(NotificationHandler); ok {
		if err := nh.HandleNotification(ctx, &ev); err != nil {
			return handlerError(err)
		}
	}
	return nil
}

// validateEvent applies the rules every event meets wherever it comes
// from: its depth within max_depth (equal passes) and a valid payload for
// the run contracts.
func (s *Server) validateEvent(ev *WireEvent) error {
	if md := s.config.MaxDepth; md != nil && ev.Depth > *md {
		return fmt.Errorf("event depth %d exceeds configured max depth %d", ev.Depth, *md)
	}
	return ValidatePayload(ev.EventType, ev.Payload)
}

func (s *Server) handshake(ctx context.Context, params json.RawMessage) ([]byte, *RPCError) {
	var req HandshakeRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, invalidParams(err)
	}
	if !CompatibleVersion(req.ProtocolVersion) {
		return nil, &RPCError{Code: CodeVersionMismatch, Message: "Unsupported protocol version: " + req.ProtocolVersion}
	}
	hh, ok := s.h.(HandshakeHandler)
	if !ok {
		return s.hello, nil
	}
	token, err := hh.HandleHandshake(ctx, &req)
	if err != nil {
		return nil, handlerError(err)
	}
	if token == "" {
		return s.hello, nil
	}
	b, err := json.Marshal(HandshakeResponse{ProtocolVersion: Version, HarnessInfo: s.info, SessionToken: token, Config: &s.config})
	if err != nil {
		return nil, internalError(err)
	}
	return b, nil
}

func (s *Server) event(ctx context.Context, params json.RawMessage) ([]byte, *RPCError) {
	if isNull(params) {
		return nil, invalidParams(fmt.Errorf("missing params"))
	}
	var ev WireEvent
	if err := ev.UnmarshalJSON(params); err != nil {
		return nil, invalidParams(err)
	}
	if err := s.validateEvent(&ev); err != nil {
		return nil, invalidEvent(err)
	}
	if !ev.EventType.IsBlocking() {
		return nil, &RPCError{Code: CodeInvalidParams,
			Message: fmt.Sprintf("Fire-and-forget event %s must be sent as a notification", ev.EventType)}
	}
	if ev.EventType.IsSpecialized() {
		return s.specialized(ctx, &ev)
	}
	d, err := s.h.HandleEvent(ctx, &ev)
	if err != nil {
		return nil, handlerError(err)
	}
	b, err := d.appendJSON(make([]byte, 0, 64))
	if err != nil {
		return nil, internalError(err)
	}
	return b, nil
}

func (s *Server) specialized(ctx context.Context, ev *WireEvent) ([]byte, *RPCError) {
	payload, err := SpecializedPayload(ev)
	if err != nil {
		return nil, invalidParams(err)
	}
	var d SpecializedDecision
	if sh, ok := s.h.(SpecializedHandler); ok {
		d, err = sh.HandleSpecialized(ctx, ev, payload)
		if err != nil {
			return nil, handlerError(err)
		}
	} else if ev.EventType == Idle {
		d = &IdleDecision{Kind: "allow"}
	} else {
		return nil, handlerError(fmt.Errorf("%s not supported", ev.EventType))
	}
	if d == nil || d.DecisionFor() != ev.EventType {
		return nil, internalError(fmt.Errorf("handler answered %s with a decision of another shape", ev.EventType))
	}
	b, err := json.Marshal(d)
	if err != nil {
		return nil, internalError(err)
	}
	return b, nil
}

func (s *Server) query(ctx context.Context, params json.RawMessage) ([]byte, *RPCError) {
	var q QueryRequest
	if err := decodeParams(params, &q); err != nil {
		return nil, invalidParams(err)
	}
	qh, ok := s.h.(QueryHandler)
	if !ok {
		return nil, handlerError(fmt.Errorf("query not supported"))
	}
	resp, err := qh.HandleQuery(ctx, &q)
	if err != nil {
		return nil, handlerError(err)
	}
	if resp == nil {
		return nil, internalError(fmt.Errorf("no query response"))
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return nil, internalError(err)
	}
	return b, nil
}

// batch validates every event before handling any, so that a batch
// refused for its tenth event has not already acted on its first nine.
func (s *Server) batch(ctx context.Context, params json.RawMessage) ([]byte, *RPCError) {
	var req BatchRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, invalidParams(err)
	}
	if bs := s.config.BatchSize; bs != nil && uint64(len(req.Events)) > *bs {
		return nil, &RPCError{Code: CodeInvalidParams,
			Message: fmt.Sprintf("Batch size %d exceeds configured limit %d", len(req.Events), *bs)}
	}
	for i := range req.Events {
		ev := &req.Events[i]
		if err := s.validateEvent(ev); err != nil {
			return nil, invalidEvent(err)
		}
		if !ev.EventType.IsBatchable() {
			return nil, &RPCError{Code: CodeInvalidParams,
				Message: fmt.Sprintf("Event type %s cannot be batched because it does not return a generic Decision", ev.EventType)}
		}
	}
	out := BatchResponse{Decisions: make([]Decision, len(req.Events))}
	nh, _ := s.h.(NotificationHandler)
	for i := range req.Events {
		ev := &req.Events[i]
		var d Decision
		var err error
		switch {
		case ev.EventType.IsBlocking():
			d, err = s.h.HandleEvent(ctx, ev)
			if err == nil {
				_, err = json.Marshal(d)
			}
		case nh != nil:
			err = nh.HandleNotification(ctx, ev)
			d = Decision{Kind: Allow}
		default:
			d = Decision{Kind: Allow}
		}
		if err != nil {
			d = Decision{Kind: Block, Reason: "Handler error: " + err.Error()}
		}
		out.Decisions[i] = d
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, internalError(err)
	}
	return b, nil
}
