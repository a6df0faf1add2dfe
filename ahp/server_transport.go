package ahp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/harness-runtime/harness/internal/tune"
)

var errTooLarge = errors.New("message too large")

// msgConn is one connection of a message transport: line-delimited JSON
// (stdio, Unix sockets) or WebSocket frames.
type msgConn interface {
	read() ([]byte, error)
	write(b []byte) error // safe for concurrent use
	interrupt()           // unblocks read, for shutdown
	close()
}

type serverConn struct {
	c      msgConn
	cancel context.CancelFunc
}

// serveConn reads messages from c until it ends, ctx is done or the
// server shuts down, handling requests concurrently (bounded by
// MaxConcurrent across the server) and notifications in order; it returns
// once every request it started is answered.
func (s *Server) serveConn(ctx context.Context, c msgConn) error {
	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	sc := &serverConn{c: c, cancel: cancel}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, sc)
		s.mu.Unlock()
	}()
	stop := context.AfterFunc(ctx, c.interrupt)
	defer stop()

	var wg sync.WaitGroup
	defer wg.Wait()
	ordered := cap(s.sem) == 1
	var yield tune.Yielder // the loop only blocks in reads (see tune.Yielder)
	for {
		yield.Yield()
		msg, err := c.read()
		if errors.Is(err, errTooLarge) {
			if c.write(appendError(nil, nil, CodeInvalidRequest, "Invalid Request: message too large")) != nil {
				return nil
			}
			continue
		}
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil || s.isClosed() {
				return nil
			}
			return err
		}
		m, perr := parseMessage(msg)
		if perr != nil {
			s.log.Debug("ahp: message dropped", "why", perr.Message)
			continue
		}
		if !s.begin() {
			return nil
		}
		if ordered || !m.hasID() {
			s.answer(hctx, c, m)
			continue
		}
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			s.inflight.Done()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.sem }()
			s.answer(hctx, c, m)
		}()
	}
}

func (s *Server) answer(ctx context.Context, c msgConn, m *rpcMessage) {
	defer s.inflight.Done()
	resp, nerr := s.dispatch(ctx, m)
	if nerr != nil {
		s.log.Debug("ahp: notification refused", "code", nerr.Code, "why", nerr.Message)
	}
	if resp != nil {
		if err := c.write(resp); err != nil {
			s.log.Debug("ahp: answer lost", "err", err)
		}
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Shutdown stops the server gracefully: listeners close, connections stop
// reading, and the requests already read are answered; it returns once
// they are, or when ctx is done (then their handlers' contexts are
// cancelled and connections closed). A stopped server answers nothing.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	for l := range s.listeners {
		l.Close()
	}
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.c.interrupt()
	}
	done := make(chan struct{})
	go func() { s.inflight.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		for _, c := range conns {
			c.cancel()
		}
	}
	for _, c := range conns {
		c.c.close()
	}
	return err
}

// lineConn frames messages as lines of JSON.
type lineConn struct {
	r       *bufio.Reader
	max     int
	wmu     sync.Mutex
	waiting atomic.Int32
	w       *bufio.Writer
	onStop  func()
	onClose func()
}

func newLineConn(r io.Reader, w io.Writer, max int) *lineConn {
	return &lineConn{r: bufio.NewReaderSize(r, 64<<10), w: bufio.NewWriterSize(w, 64<<10), max: max}
}

func (l *lineConn) read() ([]byte, error) {
	for {
		line, err := readLine(l.r, l.max)
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

// readLine returns the next line without its newline, in a buffer of its
// own; a line longer than max is skipped whole and errTooLarge returned.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			return nil, errTooLarge
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(line, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			return line, nil
		default:
			return nil, err
		}
	}
}

func (l *lineConn) write(b []byte) error {
	return coalescedWrite(&l.wmu, &l.waiting, l.w, b)
}

func (l *lineConn) interrupt() {
	if l.onStop != nil {
		l.onStop()
	}
}

func (l *lineConn) close() {
	if l.onClose != nil {
		l.onClose()
	}
}

// ServeStream serves one agent over a reader and a writer carrying one
// JSON message per line: stdio (os.Stdin, os.Stdout) or any stream. It
// returns when r ends, ctx is done or the server shuts down, once every
// request read is answered. A read blocked in r cannot be interrupted
// unless r is an io.Closer, which is then closed on shutdown.
func (s *Server) ServeStream(ctx context.Context, r io.Reader, w io.Writer) error {
	l := newLineConn(r, w, s.max)
	if c, ok := r.(io.Closer); ok {
		l.onStop = func() { c.Close() }
	}
	return s.serveConn(ctx, l)
}

// Serve accepts connections on ln (a Unix socket, or any stream listener)
// and serves each as line-delimited JSON, until ctx is done, Shutdown is
// called or ln fails. It closes ln and returns once the connections'
// requests are answered.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return nil
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || s.isClosed() {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		l := newLineConn(nc, nc, s.max)
		l.onStop = func() { nc.SetReadDeadline(time.Now()) }
		l.onClose = func() { nc.Close() }
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer nc.Close()
			if err := s.serveConn(ctx, l); err != nil {
				s.log.Debug("ahp: connection ended", "err", err)
			}
		}()
	}
}

// credential returns what the peer presented: X-API-Key, a Bearer token,
// or (WebSocket) the api_key or token query parameter.
func credential(r *http.Request, query bool) string {
	if k := r.Header.Get("X-API-Key"); k != "" {
		return k
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return strings.TrimSpace(a[7:])
	}
	if query {
		q := r.URL.Query()
		if k := q.Get("api_key"); k != "" {
			return k
		}
		return q.Get("token")
	}
	return ""
}

func (s *Server) authorized(r *http.Request, query bool) bool {
	if s.auth == nil {
		return true
	}
	c := credential(r, query)
	return c != "" && s.auth(c)
}

// StaticKeys returns an Authenticate function accepting exactly keys,
// compared in constant time.
func StaticKeys(keys ...string) func(string) bool {
	return func(c string) bool {
		ok := false
		for _, k := range keys {
			if subtle.ConstantTimeCompare([]byte(c), []byte(k)) == 1 {
				ok = true
			}
		}
		return ok
	}
}

func writeRPCError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(appendError(nil, nil, code, msg))
}

// HTTPHandler serves AHP over HTTP: each message is the body of a POST
// (Content-Type application/json) to wherever the handler is mounted
// (the protocol's examples use /ahp). A request is answered 200 with its
// response; an accepted notification 204; a refused notification 200 with
// a JSON-RPC error whose id is null. Missing or bad credentials get 401,
// another method 405, another content type 415, a body over
// MaxMessageBytes 413, a body that is not JSON-RPC 400. During shutdown:
// 503.
func (s *Server) HTTPHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeRPCError(w, http.StatusMethodNotAllowed, CodeInvalidRequest, "Invalid Request: use POST")
			return
		}
		if !s.authorized(r, false) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="ahp"`)
			writeRPCError(w, http.StatusUnauthorized, CodeInvalidRequest, "missing or invalid credentials")
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			writeRPCError(w, http.StatusUnsupportedMediaType, CodeInvalidRequest, "Invalid Request: Content-Type must be application/json")
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(s.max)))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				writeRPCError(w, http.StatusRequestEntityTooLarge, CodeInvalidRequest, "Invalid Request: message too large")
				return
			}
			writeRPCError(w, http.StatusBadRequest, CodeParseError, "Parse error: "+err.Error())
			return
		}
		m, perr := parseMessage(body)
		if perr != nil {
			writeRPCError(w, http.StatusBadRequest, perr.Code, perr.Message)
			return
		}
		if !s.begin() {
			writeRPCError(w, http.StatusServiceUnavailable, CodeInternalError, "shutting down")
			return
		}
		select {
		case s.sem <- struct{}{}:
		case <-r.Context().Done():
			s.inflight.Done()
			return
		}
		resp, nerr := s.dispatch(r.Context(), m)
		<-s.sem
		s.inflight.Done()
		switch {
		case resp != nil:
			w.Header().Set("Content-Type", "application/json")
			w.Write(resp)
		case nerr != nil:
			writeRPCError(w, http.StatusOK, nerr.Code, nerr.Message)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
}

// wsConn frames messages as WebSocket text frames.
type wsConn struct {
	c      *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
}

func (w *wsConn) read() ([]byte, error) {
	for {
		typ, b, err := w.c.Read(w.ctx)
		if err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) {
				return nil, err
			}
			if websocket.CloseStatus(err) != -1 {
				return nil, io.EOF
			}
			return nil, err
		}
		if typ == websocket.MessageText {
			return b, nil
		}
	}
}

func (w *wsConn) write(b []byte) error {
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	return w.c.Write(ctx, websocket.MessageText, b)
}

// interrupt does nothing: cancelling a WebSocket read closes the
// connection, and the requests in flight must still be answered; close
// ends it once they are.
func (w *wsConn) interrupt() {}

func (w *wsConn) close() {
	w.c.Close(websocket.StatusGoingAway, "shutting down")
	w.cancel()
}

// WebSocketHandler serves AHP over WebSocket: one JSON-RPC message per text
// frame, requests handled concurrently on a connection. With
// Authenticate set, the credential is taken from the api_key or token
// query parameter (or the HTTP headers HTTPHandler reads); without it the
// upgrade is refused with 401. A frame over MaxMessageBytes closes the
// connection (status 1009). WebSocket connections are hijacked from the
// http.Server, whose Shutdown does not see them: Server.Shutdown closes
// them, once their requests are answered.
func (s *Server) WebSocketHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r, true) {
			writeRPCError(w, http.StatusUnauthorized, CodeInvalidRequest, "missing or invalid credentials")
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"ahp"}})
		if err != nil {
			return
		}
		c.SetReadLimit(int64(s.max))
		ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
		wc := &wsConn{c: c, ctx: ctx, cancel: cancel}
		defer wc.close()
		if err := s.serveConn(r.Context(), wc); err != nil {
			s.log.Debug("ahp: websocket ended", "err", err)
		}
	})
}
