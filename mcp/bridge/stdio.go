package bridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/harness-runtime/harness/internal/tune"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// drainTimeout bounds how long the bridge keeps answering after its input
// ends: calls already read finish (a client may write its requests and
// close its end at once), but a call waiting for an answer that can no
// longer come is not waited for forever.
// (A variable for the tests.)
var drainTimeout = 30 * time.Second

// outputGrace bounds how long the bridge waits, once its input is over (or
// its context done), for writes to a client that no longer reads its
// output. After it, those writes fail, so that no call stays blocked on a
// full pipe and ServeStdio returns. (A variable for the tests.)
var outputGrace = 5 * time.Second

// maxRequests bounds the requests of one stdio client served at once;
// reading the client's input waits for a free slot. A request waiting for
// the client's answer to an elicitation gives its slot back meanwhile, so
// that the input that carries the answer is still read.
const maxRequests = 16

// errOutputClosed is the error of a write to the client's output after the
// bridge gave up on it.
var errOutputClosed = errors.New("mcp bridge: stdio output abandoned: the client stopped reading")

// errInputEnded is the error of an elicitation whose answer can no longer
// come: the client's input is over.
var errInputEnded = errors.New("mcp bridge: the client closed its input before answering")

// ServeStdio serves MCP over in and out (newline-delimited JSON-RPC) until
// ctx is done or in ends. Every message goes to the one mcp-go dispatcher
// (MCPServer.HandleMessage: initialize, tools/list, tools/call, ping,
// cancellation); this transport reads lines, routes the client's answers
// to the bridge's elicitation requests, serves up to 16 requests at once,
// and writes each response as one line (a tool result through the bridge's
// own encoder, anything else through encoding/json).
//
// When in ends, the calls already read are answered before it returns (for
// at most 30 seconds). Logs never go to out. A read of in still blocked
// when ctx ends is left behind (the stdin of a process that is ending),
// and so are calls whose answers the client does not read: 5 seconds after
// the end, writes still waiting fail, 5 seconds later ServeStdio returns
// anyway (a write already under way stays blocked until the client reads
// or closes its end), and the messages not written are lost.
//
// A Server serves one stdio client at a time: a second ServeStdio while
// one runs fails (the session is named "stdio", which events carry as
// their session_id).
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	gated := newGatedOutput(out)
	growOutputBuffer(gated.raw, gated.mode)
	defer gated.close()
	sess := &stdioSession{out: gated, pending: map[int64]chan elicitAnswer{}, notifications: make(chan mcpgo.JSONRPCNotification, 100)}
	if err := s.srv.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("mcp bridge: serve stdio: %w", err)
	}
	defer s.srv.UnregisterSession(context.WithoutCancel(ctx), sess.SessionID())

	reqCtx, cancel := context.WithCancel(s.srv.WithContext(ctx, sess))
	defer cancel()
	t := &stdioTransport{srv: s.srv, sess: sess, out: gated, slots: make(chan struct{}, maxRequests), follow: make(chan struct{}), log: s.log}
	defer t.watch.stop()
	t.gate = newInputGate(in, &t.watch)
	defer t.gate.stop()
	if onTransport != nil {
		onTransport(t)
	}
	go t.notify(reqCtx)
	read := make(chan error, 1)
	go t.lead(reqCtx, bufio.NewReaderSize(in, 64<<10), read)

	var err error
	select {
	case err = <-read:
		sess.endInput()
		t.calls.wait(ctx, drainTimeout)
	case <-ctx.Done():
	}
	cancel()
	if !t.calls.close(outputGrace) {
		// Calls still running are blocked on a client that stopped reading
		// (or ignore their context): their writes fail from now on. One
		// that still does not return is left behind.
		gated.close()
		t.calls.close(outputGrace)
	}
	if err != nil && (ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)) {
		return nil
	}
	return err
}

// onTransport, when set (by tests), is given each transport ServeStdio
// starts.
var onTransport func(*stdioTransport)

// stdioTransport carries one stdio client's messages to and from the
// dispatcher.
type stdioTransport struct {
	srv   *mcpserver.MCPServer
	sess  *stdioSession
	out   *gatedOutput
	slots chan struct{}
	calls inflight
	watch watcher
	// gate, when the input is a descriptor epoll can watch, starts the
	// watch of a call only once input waits to be read (see inputGate).
	gate *inputGate
	// follow passes the reading of the input from one goroutine to the
	// next.
	follow chan struct{}
	// yield lets the goroutine reading the input through the scheduler
	// (see tune.Yielder); only that goroutine uses it.
	yield tune.Yielder
	log   *slog.Logger
}

// lead reads lines of r and hands them to the dispatcher until it reaches
// a request; then it serves the request itself, on the goroutine that read
// it (no hand-off on the way in). A call answered within handoffDelay of
// its registration by the dispatcher (most are), or during which no input
// comes (the gate, where the input is a pipe, socket or terminal), is
// answered by the reader, which then reads on: no other goroutine is
// woken. A call that takes longer while input waits passes the reading on
// to another goroutine then (it was registered, so that a
// notifications/cancelled read next finds it: mcp-go's cancellation knows
// a request only from then on), and the input is read while it runs (for
// cancellations, answers to elicitations, and the next calls). Once such
// a call is answered its goroutine waits to read again: goroutines are
// reused, and keep the stack a call grew (growing a new goroutine's stack
// through the dispatcher, the guard and the audit log cost more than the
// hand-off it saves). The goroutine that meets the end of the input, a
// read error or the end of ctx sends it on end.
func (t *stdioTransport) lead(ctx context.Context, r *bufio.Reader, end chan<- error) {
	for {
		t.gate.close()
		t.yield.Yield()
		line, err := r.ReadBytes('\n')
		if ctx.Err() != nil {
			end <- ctx.Err()
			return
		}
		if len(line) > 0 {
			if m, kind := t.route(ctx, line); kind == kindRequest {
				if !t.take(ctx) {
					end <- ctx.Err()
					return
				}
				if err != nil {
					end <- err
					t.serve(ctx, line, m, nil)
					return
				}
				// A line already in r's buffer is input the gate cannot
				// see: its call goes to the watcher at once.
				gate := t.gate
				if r.Buffered() > 0 {
					gate = nil
				}
				if t.serve(ctx, line, m, &handoff{watch: &t.watch, gate: gate, pass: func() {
					select {
					case t.follow <- struct{}{}: // a goroutine waiting to read takes over
					default:
						go t.follower(ctx, r, end)
						t.follow <- struct{}{}
					}
				}}) {
					continue // answered before the reading was passed on
				}
				select {
				case <-t.follow:
					continue
				case <-ctx.Done():
					return
				}
			}
		}
		if err != nil {
			end <- err
			return
		}
	}
}

// handoffKey keys a request's handoff in its context, where the
// dispatcher's before-any hook (registered by NewServer) finds it.
type handoffKey struct{}

// requestRegistered is the before-any hook: mcp-go calls it once a request
// is registered for cancellation, before its handler runs.
func requestRegistered(ctx context.Context, _ any, _ mcpgo.MCPMethod, _ any) {
	if h, ok := ctx.Value(handoffKey{}).(*handoff); ok {
		h.arm()
	}
}

// follower waits for its turn to read, then leads.
func (t *stdioTransport) follower(ctx context.Context, r *bufio.Reader, end chan<- error) {
	select {
	case <-t.follow:
		t.lead(ctx, r, end)
	case <-ctx.Done():
	}
}

// route answers what needs no request slot: a parse error here, an
// answer to an elicitation of the bridge by the call waiting for it, and
// anything but a request by the dispatcher, in order. It returns the
// envelope and kind of the line; a request is left to the caller.
func (t *stdioTransport) route(ctx context.Context, line []byte) (envelope, messageKind) {
	m, kind := classify(line)
	switch {
	case kind == kindInvalid:
		t.write(mcpgo.JSONRPCError{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(nil),
			Error: mcpgo.NewJSONRPCErrorDetails(mcpgo.PARSE_ERROR, "Parse error", nil)}, nil)
	case (m.Result != nil || m.Error != nil) && t.sess.answer(line):
		// mcp-go's own stdio server routes answers by id whatever the
		// method: so does this one, so that a client sees the same answers.
		return m, kindResponse
	case kind != kindRequest:
		if resp := t.handle(ctx, line); resp != nil {
			t.write(resp, nil)
		}
	}
	return m, kind
}

// take waits for a free request slot and counts the request; it reports
// false when ctx ended first or the transport takes no more requests.
func (t *stdioTransport) take(ctx context.Context) bool {
	select {
	case t.slots <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	if !t.calls.add() {
		<-t.slots
		return false
	}
	return true
}

// serve answers one request that holds a slot, then frees the slot. The
// dispatcher's registration of the request arms h (when not nil): the
// reading is passed on handoffDelay later unless the request is answered
// first, and serve then reports that its caller still holds the reading.
func (t *stdioTransport) serve(ctx context.Context, line []byte, _ envelope, h *handoff) (kept bool) {
	defer t.calls.done()
	sl := &slot{slots: t.slots, held: true}
	defer sl.release()
	ctx = context.WithValue(ctx, slotKey{}, sl)
	if h != nil {
		ctx = context.WithValue(ctx, handoffKey{}, h)
	}
	resp := t.handle(ctx, line)
	kept = h.keep()
	switch {
	case resp == nil:
	case !kept:
		t.write(resp, nil)
	default:
		// Still the reader: the answer's encoding and a write that blocks
		// on a client that stopped reading must not stop the reading too
		// (the end of the input is how the bridge learns that the client
		// went away), so they have a handoff of their own.
		w := &handoff{pass: h.pass, watch: h.watch, gate: h.gate}
		w.arm()
		t.write(resp, w)
		if onAnswered != nil {
			onAnswered()
		}
		kept = w.keep()
	}
	return kept
}

// onAnswered, when set (by tests), runs after the reader wrote a call's
// answer, before it ends the write's handoff.
var onAnswered func()

// handle runs the dispatcher, turning a panic into an internal error
// response as mcp-go's own stdio server does.
func (t *stdioTransport) handle(ctx context.Context, line []byte) (resp mcpgo.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			t.log.Error("mcp bridge: panic while handling a message", "panic", r)
			var m struct {
				ID any `json:"id"`
			}
			_ = json.Unmarshal(line, &m)
			if m.ID != nil {
				resp = mcpgo.JSONRPCError{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(m.ID),
					Error: mcpgo.NewJSONRPCErrorDetails(mcpgo.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)}
			}
		}
	}()
	return t.srv.HandleMessage(ctx, line)
}

// write encodes msg as one line and writes it, a remembered text from
// where it is (see appendMessageParts). The reader writing its own answer
// passes the handoff it armed for it, w (nil otherwise). On a socket,
// which takes what it has room for without blocking, w is held once the
// answer is encoded (no watch, no registration of the input, as before a
// read), so that a next call sent the moment the answer arrives wakes
// only the reader; it is armed again before the write may block (see
// gatedOutput.sendParts).
func (t *stdioTransport) write(msg mcpgo.JSONRPCMessage, w *handoff) {
	buf := responseBuffers.Get().(*[]byte)
	line, m, err := appendMessageParts((*buf)[:0], msg)
	if err != nil {
		t.log.Error("mcp bridge: a response cannot be encoded", "err", err)
		responseBuffers.Put(buf)
		return
	}
	*buf = line
	var block func()
	if w != nil && t.out.socket {
		w.hold()
		block = w.arm
	}
	parts := [3][]byte{line}
	n := 1
	if m.text != nil {
		parts, n = [3][]byte{line[:m.at], m.text, line[m.at:]}, 3
	}
	_ = t.out.sendParts(parts[:n], block) // a client that stopped reading: nothing more to do
	if cap(line) <= maxPooledResponse {
		responseBuffers.Put(buf)
	}
}

// notify writes the notifications mcp-go queues for the session (such as
// notifications/tools/list_changed) until ctx ends.
func (t *stdioTransport) notify(ctx context.Context) {
	for {
		select {
		case n := <-t.sess.notifications:
			t.write(n, nil)
		case <-ctx.Done():
			return
		}
	}
}

// slotKey keys the request's slot in its context.
type slotKey struct{}

// slot is one request's place among the maxRequests served at once.
type slot struct {
	mu    sync.Mutex
	slots chan struct{}
	held  bool
}

func (s *slot) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held {
		<-s.slots
		s.held = false
	}
}

func (s *slot) reacquire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.held {
		s.slots <- struct{}{}
		s.held = true
	}
}

// stdioSession is what mcp-go keeps of a stdio client (whether it
// initialized, its name, capabilities and protocol revision) and the
// bridge's elicitation requests waiting for its answers.
type stdioSession struct {
	out           *gatedOutput
	notifications chan mcpgo.JSONRPCNotification
	initialized   atomic.Bool
	info          atomic.Value // mcpgo.Implementation
	caps          atomic.Value // mcpgo.ClientCapabilities
	version       atomic.Value // string
	level         atomic.Value // mcpgo.LoggingLevel
	nextID        atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan elicitAnswer
	ended   bool // the input is over: no answer can come
}

type elicitAnswer struct {
	result *mcpgo.ElicitationResult
	err    error
}

var (
	_ mcpserver.ClientSession              = (*stdioSession)(nil)
	_ mcpserver.SessionWithClientInfo      = (*stdioSession)(nil)
	_ mcpserver.SessionWithElicitation     = (*stdioSession)(nil)
	_ mcpserver.SessionWithLogging         = (*stdioSession)(nil)
	_ mcpserver.SessionWithProtocolVersion = (*stdioSession)(nil)
)

func (s *stdioSession) SessionID() string { return "stdio" }

func (s *stdioSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification {
	return s.notifications
}

func (s *stdioSession) Initialize()       { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

func (s *stdioSession) GetClientInfo() mcpgo.Implementation {
	v, _ := s.info.Load().(mcpgo.Implementation)
	return v
}

func (s *stdioSession) SetClientInfo(info mcpgo.Implementation) { s.info.Store(info) }

func (s *stdioSession) GetClientCapabilities() mcpgo.ClientCapabilities {
	v, _ := s.caps.Load().(mcpgo.ClientCapabilities)
	return v
}

func (s *stdioSession) SetClientCapabilities(c mcpgo.ClientCapabilities) { s.caps.Store(c) }

func (s *stdioSession) ProtocolVersion() string {
	v, _ := s.version.Load().(string)
	return v
}

func (s *stdioSession) SetProtocolVersion(v string) { s.version.Store(v) }

func (s *stdioSession) SetLogLevel(l mcpgo.LoggingLevel) { s.level.Store(l) }

func (s *stdioSession) GetLogLevel() mcpgo.LoggingLevel {
	if v, ok := s.level.Load().(mcpgo.LoggingLevel); ok {
		return v
	}
	return mcpgo.LoggingLevelError
}

// RequestElicitation asks the client (elicitation/create) and waits for
// its answer, ctx, or the end of the client's input. While it waits, the
// request gives back its slot.
func (s *stdioSession) RequestElicitation(ctx context.Context, req mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	id := s.nextID.Add(1)
	ch := make(chan elicitAnswer, 1)
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return nil, errInputEnded
	}
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	raw, err := json.Marshal(struct {
		JSONRPC string                  `json:"jsonrpc"`
		ID      int64                   `json:"id"`
		Method  string                  `json:"method"`
		Params  mcpgo.ElicitationParams `json:"params"`
	}{mcpgo.JSONRPC_VERSION, id, string(mcpgo.MethodElicitationCreate), req.Params})
	if err != nil {
		return nil, fmt.Errorf("failed to marshal elicitation request: %w", err)
	}
	if err := s.out.send(append(raw, '\n')); err != nil {
		return nil, fmt.Errorf("failed to write elicitation request: %w", err)
	}
	if sl, ok := ctx.Value(slotKey{}).(*slot); ok {
		sl.release()
		defer sl.reacquire()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case a := <-ch:
		return a.result, a.err
	}
}

// answer delivers a client's answer to the elicitation it answers, and
// reports whether there was one waiting.
func (s *stdioSession) answer(line []byte) bool {
	var m struct {
		ID     json.Number     `json:"id"`
		Result json.RawMessage `json:"result,omitempty"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error,omitempty"`
	}
	if json.Unmarshal(line, &m) != nil || (m.Result == nil && m.Error == nil) {
		return false
	}
	id, err := m.ID.Int64()
	if err != nil {
		return false
	}
	s.mu.Lock()
	ch := s.pending[id]
	s.mu.Unlock()
	if ch == nil {
		return false
	}
	var a elicitAnswer
	if m.Error != nil {
		a.err = fmt.Errorf("elicitation request failed: %s", m.Error.Message)
	} else {
		var r mcpgo.ElicitationResult
		if err := json.Unmarshal(m.Result, &r); err != nil {
			a.err = fmt.Errorf("failed to unmarshal elicitation response: %w", err)
		} else {
			a.result = &r
		}
	}
	select {
	case ch <- a:
	default: // answered twice: the first answer stands
	}
	return true
}

// endInput fails the elicitations waiting for an answer, and those asked
// later: the client's input is over.
func (s *stdioSession) endInput() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = true
	for _, ch := range s.pending {
		select {
		case ch <- elicitAnswer{err: errInputEnded}:
		default:
		}
	}
}

// gatedOutput serialises the writes to the client's output, each made on
// the caller's goroutine (no hand-off on the way out), and lets the bridge
// give up on a client that stopped reading: after close, a write waiting
// for its turn and every later one fail at once with errOutputClosed. The
// write already under way stays blocked in the underlying writer until
// the client reads or its output is closed, and so does its caller.
type gatedOutput struct {
	w io.Writer
	// raw is w's descriptor when w is an *os.File (nil otherwise): a
	// message in parts goes out in one writev. mode is its type; a socket
	// can be written to without blocking.
	raw    syscall.RawConn
	mode   os.FileMode
	socket bool
	turn   chan struct{} // holds a token while a write is under way
	closed chan struct{}
	once   sync.Once
}

func newGatedOutput(w io.Writer) *gatedOutput {
	raw, mode := outputConn(w)
	return &gatedOutput{w: w, raw: raw, mode: mode, socket: mode&os.ModeSocket != 0, turn: make(chan struct{}, 1), closed: make(chan struct{})}
}

// send writes p whole, or fails with errOutputClosed once the output is
// closed.
func (g *gatedOutput) send(p []byte) error {
	return g.sendParts([][]byte{p}, nil)
}

// sendParts writes the parts of one message, in order and whole, or fails
// with errOutputClosed once the output is closed. block, when not nil, is
// called once before the write may block: before waiting for another
// write to end, and before writing what a socket did not take at once
// (on anything but a socket, always).
func (g *gatedOutput) sendParts(parts [][]byte, block func()) error {
	select {
	case g.turn <- struct{}{}:
	default:
		if block != nil {
			block()
			block = nil
		}
		select {
		case g.turn <- struct{}{}:
		case <-g.closed:
			return errOutputClosed
		}
	}
	defer func() { <-g.turn }()
	select {
	case <-g.closed:
		return errOutputClosed
	default:
	}
	if g.socket {
		if parts = sendNoWait(g.raw, parts); len(parts) == 0 {
			return nil
		}
	}
	if block != nil {
		block()
	}
	if g.raw != nil && len(parts) > 1 {
		if parts = writeParts(g.raw, parts); len(parts) == 0 {
			return nil
		}
	}
	// The rest, or a failed write's, as the writer writes it (with its
	// errors and signals).
	p := parts[0]
	if len(parts) > 1 {
		p = bytes.Join(parts, nil)
	}
	_, err := g.w.Write(p)
	return err
}

// consumed returns what of parts is left once n bytes of them are written.
func consumed(parts [][]byte, n int) [][]byte {
	for n > 0 && len(parts) > 0 {
		if n < len(parts[0]) {
			parts[0] = parts[0][n:]
			return parts
		}
		n -= len(parts[0])
		parts = parts[1:]
	}
	return parts
}

// close makes every waiting and later send fail with errOutputClosed.
func (g *gatedOutput) close() { g.once.Do(func() { close(g.closed) }) }

// inflight counts the requests being served. Once closed, it takes no
// more.
type inflight struct {
	mu      sync.Mutex
	pending int
	closed  bool
	idle    chan struct{} // closed when pending drops to 0; nil while 0
}

// add counts one more request, or reports false once closed.
func (f *inflight) add() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	if f.pending == 0 {
		f.idle = make(chan struct{})
	}
	f.pending++
	return true
}

func (f *inflight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == 0 {
		return
	}
	f.pending--
	if f.pending == 0 {
		close(f.idle)
		f.idle = nil
	}
}

// wait returns when nothing is pending, ctx is done or max has passed.
func (f *inflight) wait(ctx context.Context, max time.Duration) {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	if idle == nil {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
	case <-ctx.Done():
	case <-t.C:
	}
}

// close takes no more requests and waits up to max for those under way;
// it reports whether they all ended.
func (f *inflight) close(max time.Duration) bool {
	f.mu.Lock()
	f.closed = true
	idle := f.idle
	f.mu.Unlock()
	if idle == nil {
		return true
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}
