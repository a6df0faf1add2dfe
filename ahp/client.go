package ahp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Transports a Client dials.
const (
	TransportStdio     = "stdio"
	TransportHTTP      = "http"
	TransportWebSocket = "ws"
	TransportUnix      = "unix"
)

// ClientOptions say which harness a Client talks to and how.
type ClientOptions struct {
	// Transport is TransportStdio, TransportHTTP, TransportWebSocket or
	// TransportUnix.
	Transport string
	// Command is the harness program and its arguments (stdio). It is
	// started on first use and started again, with backoff, whenever it
	// has died. Dir and Env are its working directory and environment
	// (empty: ours); Stderr receives its stderr (nil: discarded).
	Command []string
	Dir     string
	Env     []string
	Stderr  io.Writer
	// URL is the harness's address: http(s)://…/ahp (HTTP) or
	// ws(s)://… (WebSocket).
	URL string
	// Socket is the path of the harness's Unix socket.
	Socket string
	// APIKey is sent as X-API-Key (HTTP) or the api_key query parameter
	// (WebSocket); BearerToken as "Authorization: Bearer" (HTTP) or the
	// token query parameter (WebSocket).
	APIKey      string
	BearerToken string
	// Timeout bounds each request, from sending to its answer (default
	// 10s); a context deadline that comes sooner wins.
	Timeout time.Duration
	// SessionID and AgentID fill the events that leave them empty and the
	// handshake (default: random ids).
	SessionID string
	AgentID   string
	// Agent is what the handshake says of the agent (default: framework
	// "harness", version Version, no capabilities).
	Agent AgentInfo
	// MinBackoff and MaxBackoff bound the wait before connecting again
	// after a failed connection (defaults 100ms and 5s, doubling). While
	// it lasts, requests fail at once with ErrUnavailable.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// MaxMessageBytes bounds one answer (default 4 MiB); a longer one
	// ends the connection.
	MaxMessageBytes int
	// HTTPClient is used for HTTP (default: a client of its own).
	HTTPClient *http.Client
	// Logger receives connection events (default: none).
	Logger *slog.Logger

	// trace, in tests, sees every message sent (out) and received.
	trace func(out bool, msg []byte)
}

// Client is an agent's side of AHP: it sends events to one harness and
// returns its decisions. Concurrent calls share one connection, matched to
// their answers by id. Every failure is an error (ErrUnavailable,
// ErrTimeout, ErrProtocol, ErrIncompatible, ErrClosed, or the harness's
// *RPCError): a caller that must fail closed treats any error as a
// refusal. A Client is safe for concurrent use.
type Client struct {
	opts  ClientOptions
	t     transport
	ids   atomic.Uint64
	idPfx string

	mu sync.Mutex
	hs *HandshakeResponse
}

// transport carries requests to the harness. onConnect, set by the
// client, runs the handshake on each new connection before any other
// request uses it.
type transport interface {
	roundTrip(ctx context.Context, id string, msg []byte) (*rpcMessage, error)
	notify(ctx context.Context, msg []byte) error
	close() error
}

type roundTripFunc func(ctx context.Context, id string, msg []byte) (*rpcMessage, error)

type connectHook func(ctx context.Context, rt roundTripFunc) error

// NewClient checks opts and returns a Client that connects on first use
// (and again whenever the connection is lost). Dial also handshakes.
func NewClient(opts ClientOptions) (*Client, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 100 * time.Millisecond
	}
	if opts.MaxBackoff < opts.MinBackoff {
		opts.MaxBackoff = max(5*time.Second, opts.MinBackoff)
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = 4 << 20
	}
	if opts.SessionID == "" {
		opts.SessionID = randomID()
	}
	if opts.AgentID == "" {
		opts.AgentID = randomID()
	}
	if opts.Agent.Framework == "" {
		opts.Agent = AgentInfo{Framework: "harness", Version: Version}
	}
	if opts.Agent.Capabilities == nil {
		opts.Agent.Capabilities = []string{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{opts: opts, idPfx: randomID()[:8] + "-"}
	hook := c.handshakeOn
	switch opts.Transport {
	case TransportStdio:
		if len(opts.Command) == 0 {
			return nil, errors.New("ahp: stdio transport needs a command")
		}
		c.t = newStreamTransport(&opts, hook, dialStdio(&opts))
	case TransportUnix:
		if opts.Socket == "" {
			return nil, errors.New("ahp: unix transport needs a socket path")
		}
		c.t = newStreamTransport(&opts, hook, dialUnix(&opts))
	case TransportWebSocket:
		u, err := websocketURL(opts.URL, opts.APIKey, opts.BearerToken)
		if err != nil {
			return nil, err
		}
		c.t = newStreamTransport(&opts, hook, dialWebSocket(&opts, u))
	case TransportHTTP:
		u, err := url.Parse(opts.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("ahp: http transport needs an http(s) URL, got %q", opts.URL)
		}
		c.t = newHTTPTransport(&opts, hook)
	default:
		return nil, fmt.Errorf("ahp: unknown transport %q (stdio, http, ws, unix)", opts.Transport)
	}
	return c, nil
}

// Dial returns a Client connected to the harness opts name, once the
// harness answered a compatible handshake.
func Dial(ctx context.Context, opts ClientOptions) (*Client, error) {
	c, err := NewClient(opts)
	if err != nil {
		return nil, err
	}
	if _, err := c.Handshake(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func randomID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (c *Client) nextID() string {
	return c.idPfx + strconv.FormatUint(c.ids.Add(1), 10)
}

// Handshake returns the harness's reply to the handshake of the current
// connection, connecting (and handshaking) first when there is none. A
// harness of another major version is refused with ErrIncompatible.
func (c *Client) Handshake(ctx context.Context) (*HandshakeResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	if err := c.connect(ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.hs == nil {
		return nil, fmt.Errorf("%w: connection lost after the handshake", ErrUnavailable)
	}
	hs := *c.hs
	return &hs, nil
}

// handshakeOn sends the handshake on a new connection and checks the
// reply; the connection is used only if it passes.
func (c *Client) handshakeOn(ctx context.Context, rt roundTripFunc) error {
	params, err := json.Marshal(HandshakeRequest{ProtocolVersion: Version, AgentInfo: c.opts.Agent,
		SessionID: c.opts.SessionID, AgentID: c.opts.AgentID})
	if err != nil {
		return err
	}
	id := c.nextID()
	m, err := rt(ctx, id, appendRequest(nil, id, MethodHandshake, params))
	if err != nil {
		return err
	}
	var hs HandshakeResponse
	if err := decodeResult(m, id, &hs); err != nil {
		var re *RPCError
		if errors.As(err, &re) && re.Code == CodeVersionMismatch {
			return fmt.Errorf("%w: harness refused version %s: %s", ErrIncompatible, Version, re.Message)
		}
		return fmt.Errorf("handshake: %w", err)
	}
	if !CompatibleVersion(hs.ProtocolVersion) {
		return fmt.Errorf("%w: harness speaks %q, we speak %s", ErrIncompatible, hs.ProtocolVersion, Version)
	}
	c.mu.Lock()
	c.hs = &hs
	c.mu.Unlock()
	return nil
}

// connect makes sure a connection with a completed handshake exists.
func (c *Client) connect(ctx context.Context) error {
	if st, ok := c.t.(*streamTransport); ok {
		_, err := st.session(ctx)
		return err
	}
	return c.t.(*httpTransport).ensure(ctx)
}

// call sends a request and decodes its result into out.
func (c *Client) call(ctx context.Context, method string, params any, out any) error {
	p, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return c.callRaw(ctx, method, p, out)
}

// callRaw is call with the params already encoded.
func (c *Client) callRaw(ctx context.Context, method string, params []byte, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	id := c.nextID()
	m, err := c.t.roundTrip(ctx, id, appendRequest(make([]byte, 0, len(params)+64), id, method, params))
	if err != nil {
		return err
	}
	return decodeResult(m, id, out)
}

// parseAnswer reads one answer.
func parseAnswer(raw []byte) (*rpcMessage, error) {
	var m rpcMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: answer is not JSON: %v", ErrProtocol, err)
	}
	return &m, nil
}

// timeoutError turns a context error into ErrTimeout (keeping
// context.DeadlineExceeded or Canceled in the chain).
func timeoutError(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrTimeout, context.Cause(ctx))
}

// decodeResult checks a response to request id and decodes its result:
// jsonrpc must be "2.0", the id the request's, exactly one of result and
// error present; an error object is returned as *RPCError; a missing,
// null or malformed result is ErrProtocol.
func decodeResult(m *rpcMessage, id string, out any) error {
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" {
		return fmt.Errorf("%w: answer's jsonrpc is not \"2.0\"", ErrProtocol)
	}
	var gotID string
	if json.Unmarshal(m.ID, &gotID) != nil || gotID != id {
		return fmt.Errorf("%w: answer's id %s is not the request's %q", ErrProtocol, m.ID, id)
	}
	hasErr, hasResult := !isNull(m.Error), m.Result != nil
	switch {
	case hasErr && hasResult:
		return fmt.Errorf("%w: answer has both result and error", ErrProtocol)
	case hasErr:
		var re RPCError
		var probe struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		}
		if json.Unmarshal(m.Error, &probe) != nil || probe.Code == nil || probe.Message == nil {
			return fmt.Errorf("%w: malformed error object %s", ErrProtocol, m.Error)
		}
		json.Unmarshal(m.Error, &re)
		return &re
	case isNull(m.Result):
		return fmt.Errorf("%w: answer has no result", ErrProtocol)
	}
	var err error
	if u, ok := out.(json.Unmarshaler); ok {
		err = u.UnmarshalJSON(m.Result) // checks itself; no second pass
	} else {
		err = decodeParams(m.Result, out)
	}
	if err != nil {
		return fmt.Errorf("%w: malformed result: %v", ErrProtocol, err)
	}
	return nil
}

// fill completes an event with the client's session and agent ids, the
// current time and an empty payload where the caller left them empty.
func (c *Client) fill(ev *WireEvent) error {
	if !ev.EventType.Known() {
		return fmt.Errorf("ahp: unknown event type %q", ev.EventType)
	}
	if ev.SessionID == "" {
		ev.SessionID = c.opts.SessionID
	}
	if ev.AgentID == "" {
		ev.AgentID = c.opts.AgentID
	}
	if ev.Timestamp == "" {
		ev.Timestamp = time.Now().UTC().Format(time.RFC3339Nano)
	}
	if len(ev.Payload) == 0 {
		ev.Payload = json.RawMessage("{}")
	}
	return nil
}

// Send sends a blocking event that is answered by a generic decision
// (pre_action, pre_prompt) and returns the harness's decision. Any error
// means there is no decision: a caller enforcing the harness refuses.
// Notification types go through Notify, specialized ones through
// SendSpecialized.
func (c *Client) Send(ctx context.Context, ev WireEvent) (Decision, error) {
	if err := c.fill(&ev); err != nil {
		return Decision{}, err
	}
	switch {
	case !ev.EventType.IsBlocking():
		return Decision{}, fmt.Errorf("ahp: %s is a notification: use Notify", ev.EventType)
	case ev.EventType.IsSpecialized():
		return Decision{}, fmt.Errorf("ahp: %s has a decision of its own: use SendSpecialized", ev.EventType)
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	id := c.nextID()
	msg, err := ev.appendJSON(appendRequestHead(make([]byte, 0, 224+len(ev.Payload)), id, MethodEvent))
	if err != nil {
		return Decision{}, err
	}
	m, err := c.t.roundTrip(ctx, id, append(msg, '}'))
	if err != nil {
		return Decision{}, err
	}
	var d Decision
	if err := decodeResult(m, id, &d); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// SendSpecialized sends a specialized event (idle, rate_limit,
// confirmation, …) and returns its decision, of the event's shape
// (*IdleDecision, *RateLimitDecision, …).
func (c *Client) SendSpecialized(ctx context.Context, ev WireEvent) (SpecializedDecision, error) {
	if err := c.fill(&ev); err != nil {
		return nil, err
	}
	d := newSpecializedDecision(ev.EventType)
	if d == nil {
		return nil, fmt.Errorf("ahp: %s has no specialized decision", ev.EventType)
	}
	if err := c.call(ctx, MethodEvent, ev, d); err != nil {
		return nil, err
	}
	return d, nil
}

// Notify sends a notification event (post_action, error, session_start,
// …): nobody answers. It returns once the event is written (HTTP: once the
// harness accepted it).
func (c *Client) Notify(ctx context.Context, ev WireEvent) error {
	if err := c.fill(&ev); err != nil {
		return err
	}
	if ev.EventType.IsBlocking() {
		return fmt.Errorf("ahp: %s needs a decision: use Send", ev.EventType)
	}
	p, err := ev.appendJSON(make([]byte, 0, 160+len(ev.Payload)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	return c.t.notify(ctx, appendRequest(make([]byte, 0, len(p)+48), "", MethodEvent, p))
}

// Batch sends events in one ahp/batch and returns one decision per event,
// in order; notification-type events may be included, specialized,
// handshake and query events may not. An answer with another number of
// decisions is ErrProtocol.
func (c *Client) Batch(ctx context.Context, events []WireEvent) ([]Decision, error) {
	evs := make([]WireEvent, len(events))
	for i, ev := range events {
		if err := c.fill(&ev); err != nil {
			return nil, err
		}
		if !ev.EventType.IsBatchable() {
			return nil, fmt.Errorf("ahp: %s cannot be batched", ev.EventType)
		}
		evs[i] = ev
	}
	var resp BatchResponse
	if err := c.call(ctx, MethodBatch, BatchRequest{Events: evs}, &resp); err != nil {
		return nil, err
	}
	if len(resp.Decisions) != len(evs) {
		return nil, fmt.Errorf("%w: %d decisions for %d events", ErrProtocol, len(resp.Decisions), len(evs))
	}
	return resp.Decisions, nil
}

// Query asks the harness a question (ahp/query); payload is any
// JSON-encodable value.
func (c *Client) Query(ctx context.Context, queryType string, payload any) (*QueryResponse, error) {
	p, err := json.Marshal(payload)
	if err != nil {
		return nil, err
	}
	q := QueryRequest{SessionID: c.opts.SessionID, AgentID: c.opts.AgentID, QueryType: queryType, Payload: p}
	var resp QueryResponse
	if err := c.call(ctx, MethodQuery, q, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Close ends the connection (and stops a stdio harness); requests waiting
// for an answer fail with ErrClosed, and so does every later call.
func (c *Client) Close() error { return c.t.close() }
