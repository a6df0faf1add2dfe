package ahp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// frameConn is one connection of a message transport, as the client sees
// it: stdio pipes, a Unix socket, a WebSocket.
type frameConn interface {
	readMsg() ([]byte, error)
	writeMsg(ctx context.Context, b []byte) error // safe for concurrent use
	close() error
}

type dialFunc func(ctx context.Context) (frameConn, error)

// streamTransport multiplexes requests over one frameConn, connecting
// again (with backoff) when it is lost.
type streamTransport struct {
	opts      *ClientOptions
	dial      dialFunc
	onConnect connectHook

	mu       sync.Mutex
	cur      *session
	closed   bool
	failures int
	retryAt  time.Time
	lastErr  error
	dialing  chan struct{} // closed when the dial in progress ends
}

func newStreamTransport(opts *ClientOptions, hook connectHook, dial dialFunc) *streamTransport {
	return &streamTransport{opts: opts, dial: dial, onConnect: hook}
}

type result struct {
	msg *rpcMessage
	err error
}

// session is one live connection: its pending requests by id, and the
// ids of requests given up on (timed out), whose late answers are
// dropped rather than taken for a protocol violation.
type session struct {
	fc       frameConn
	trace    func(out bool, msg []byte)
	mu       sync.Mutex
	pending  map[string]chan result
	given    map[string]struct{}
	dead     chan struct{}
	err      error
	deadOnce sync.Once
}

func newSession(fc frameConn) *session {
	return &session{fc: fc, pending: map[string]chan result{}, given: map[string]struct{}{}, dead: make(chan struct{})}
}

// kill ends the session: every pending request fails with err.
func (s *session) kill(err error) {
	s.deadOnce.Do(func() {
		s.mu.Lock()
		s.err = err
		pending := s.pending
		s.pending = nil
		s.mu.Unlock()
		close(s.dead)
		s.fc.close()
		for _, ch := range pending {
			ch <- result{err: err}
		}
	})
}

// readLoop routes answers to their requests. An answer to no request, or
// one the client cannot attribute, ends the session: after it nothing on
// the connection can be trusted to belong to whom it claims.
func (s *session) readLoop() {
	for {
		b, err := s.fc.readMsg()
		if err == nil && s.trace != nil {
			s.trace(false, b)
		}
		if err != nil {
			if errors.Is(err, errTooLarge) {
				s.kill(fmt.Errorf("%w: answer over the size limit", ErrProtocol))
			} else {
				s.kill(fmt.Errorf("%w: connection lost: %v", ErrUnavailable, err))
			}
			return
		}
		var head rpcMessage
		if err := json.Unmarshal(b, &head); err != nil {
			s.kill(fmt.Errorf("%w: harness sent something that is not JSON: %.200s", ErrProtocol, b))
			return
		}
		if head.Method != nil {
			continue // a request or notification from the harness: AHP defines none
		}
		var id string
		if isNull(head.ID) || json.Unmarshal(head.ID, &id) != nil {
			s.kill(fmt.Errorf("%w: harness answered with id %s, not one of ours: %.200s", ErrProtocol, head.ID, b))
			return
		}
		s.mu.Lock()
		ch, ok := s.pending[id]
		delete(s.pending, id)
		_, given := s.given[id]
		delete(s.given, id)
		s.mu.Unlock()
		switch {
		case ok:
			ch <- result{msg: &head}
		case !given:
			s.kill(fmt.Errorf("%w: harness answered request %q that was never sent", ErrProtocol, id))
			return
		}
	}
}

func (s *session) roundTrip(ctx context.Context, id string, msg []byte) (*rpcMessage, error) {
	ch := make(chan result, 1)
	s.mu.Lock()
	if s.pending == nil {
		s.mu.Unlock()
		return nil, s.err
	}
	s.pending[id] = ch
	s.mu.Unlock()
	if s.trace != nil {
		s.trace(true, msg)
	}
	if err := s.fc.writeMsg(ctx, msg); err != nil {
		s.kill(fmt.Errorf("%w: write failed: %v", ErrUnavailable, err))
		r := <-ch
		return nil, r.err
	}
	select {
	case r := <-ch:
		return r.msg, r.err
	case <-ctx.Done():
		s.mu.Lock()
		if _, ok := s.pending[id]; ok {
			delete(s.pending, id)
			if len(s.given) < 4096 {
				s.given[id] = struct{}{}
			}
		}
		s.mu.Unlock()
		return nil, timeoutError(ctx)
	}
}

// session returns the live session, connecting (and handshaking) when
// there is none and the backoff allows. Concurrent callers wait for one
// dial.
func (t *streamTransport) session(ctx context.Context) (*session, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, ErrClosed
		}
		if s := t.cur; s != nil {
			select {
			case <-s.dead:
				t.cur = nil
			default:
				t.mu.Unlock()
				return s, nil
			}
		}
		if wait := t.dialing; wait != nil {
			t.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, timeoutError(ctx)
			}
		}
		if now := time.Now(); now.Before(t.retryAt) {
			err := fmt.Errorf("%w: %v (next attempt in %s)", ErrUnavailable, t.lastErr, t.retryAt.Sub(now).Round(time.Millisecond))
			t.mu.Unlock()
			return nil, err
		}
		done := make(chan struct{})
		t.dialing = done
		t.mu.Unlock()

		s, err := t.connect(ctx)

		t.mu.Lock()
		t.dialing = nil
		close(done)
		if err != nil {
			t.failures++
			backoff := t.opts.MinBackoff << min(t.failures-1, 16)
			t.retryAt = time.Now().Add(min(backoff, t.opts.MaxBackoff))
			t.lastErr = err
			t.mu.Unlock()
			t.opts.Logger.Debug("ahp: connect failed", "err", err, "failures", t.failures)
			return nil, err
		}
		if t.closed {
			t.mu.Unlock()
			s.kill(ErrClosed)
			return nil, ErrClosed
		}
		t.failures, t.cur = 0, s
		t.mu.Unlock()
		return s, nil
	}
}

func (t *streamTransport) connect(ctx context.Context) (*session, error) {
	fc, err := t.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, timeoutError(ctx)
		}
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	s := newSession(fc)
	s.trace = t.opts.trace
	go s.readLoop()
	if err := t.onConnect(ctx, s.roundTrip); err != nil {
		s.kill(err)
		return nil, err
	}
	return s, nil
}

func (t *streamTransport) roundTrip(ctx context.Context, id string, msg []byte) (*rpcMessage, error) {
	s, err := t.session(ctx)
	if err != nil {
		return nil, err
	}
	return s.roundTrip(ctx, id, msg)
}

func (t *streamTransport) notify(ctx context.Context, msg []byte) error {
	s, err := t.session(ctx)
	if err != nil {
		return err
	}
	if s.trace != nil {
		s.trace(true, msg)
	}
	if err := s.fc.writeMsg(ctx, msg); err != nil {
		s.kill(fmt.Errorf("%w: write failed: %v", ErrUnavailable, err))
		return s.err
	}
	return nil
}

func (t *streamTransport) close() error {
	t.mu.Lock()
	t.closed = true
	s := t.cur
	t.cur = nil
	t.mu.Unlock()
	if s != nil {
		s.kill(ErrClosed)
	}
	return nil
}

// lineFrames carries one message per line over a reader and a writer.
type lineFrames struct {
	r       *bufio.Reader
	max     int
	wmu     sync.Mutex
	waiting atomic.Int32
	w       *bufio.Writer
	closeFn func() error
}

func newLineFrames(r io.Reader, w io.Writer, max int, closeFn func() error) *lineFrames {
	return &lineFrames{r: bufio.NewReaderSize(r, 64<<10), w: bufio.NewWriterSize(w, 64<<10), max: max, closeFn: closeFn}
}

func (l *lineFrames) readMsg() ([]byte, error) {
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

func (l *lineFrames) writeMsg(_ context.Context, b []byte) error {
	return coalescedWrite(&l.wmu, &l.waiting, l.w, b)
}

// coalescedWrite writes b and a newline; the last of the writers queued
// on mu flushes for all of them, so that concurrent messages share one
// system call.
func coalescedWrite(mu *sync.Mutex, waiting *atomic.Int32, w *bufio.Writer, b []byte) error {
	waiting.Add(1)
	mu.Lock()
	defer mu.Unlock()
	w.Write(b)
	err := w.WriteByte('\n')
	if waiting.Add(-1) == 0 {
		err = w.Flush()
	}
	return err
}

func (l *lineFrames) close() error { return l.closeFn() }

// dialUnix connects to the harness's Unix socket.
func dialUnix(opts *ClientOptions) dialFunc {
	return func(ctx context.Context) (frameConn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, "unix", opts.Socket)
		if err != nil {
			return nil, err
		}
		return newLineFrames(nc, nc, opts.MaxMessageBytes, nc.Close), nil
	}
}

// dialStdio starts the harness program with its stdin and stdout as the
// connection; closing it closes the program's stdin and, if it has not
// exited a second later, kills it.
func dialStdio(opts *ClientOptions) dialFunc {
	return func(ctx context.Context) (frameConn, error) {
		cmd := exec.Command(opts.Command[0], opts.Command[1:]...)
		cmd.Dir, cmd.Env, cmd.Stderr = opts.Dir, opts.Env, opts.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("start %s: %w", opts.Command[0], err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		var once sync.Once
		closeFn := func() error {
			once.Do(func() {
				stdin.Close()
				select {
				case <-exited:
				case <-time.After(time.Second):
					cmd.Process.Kill()
				}
			})
			return nil
		}
		return newLineFrames(stdout, stdin, opts.MaxMessageBytes, closeFn), nil
	}
}

// websocketURL adds the credential to a ws(s) URL: api_key= for an API
// key, token= for a bearer token.
func websocketURL(raw, apiKey, token string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
		return "", fmt.Errorf("ahp: ws transport needs a ws(s) URL, got %q", raw)
	}
	q := u.Query()
	if apiKey != "" {
		q.Set("api_key", apiKey)
	}
	if token != "" {
		q.Set("token", token)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

type wsFrames struct {
	c      *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
}

func dialWebSocket(opts *ClientOptions, u string) dialFunc {
	return func(ctx context.Context) (frameConn, error) {
		c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: opts.HTTPClient, Subprotocols: []string{"ahp"}})
		if err != nil {
			if resp != nil && resp.StatusCode == http.StatusUnauthorized {
				return nil, fmt.Errorf("harness refused our credentials (HTTP 401)")
			}
			return nil, err
		}
		c.SetReadLimit(int64(opts.MaxMessageBytes))
		wctx, cancel := context.WithCancel(context.Background())
		return &wsFrames{c: c, ctx: wctx, cancel: cancel}, nil
	}
}

func (w *wsFrames) readMsg() ([]byte, error) {
	for {
		typ, b, err := w.c.Read(w.ctx)
		if err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) {
				return nil, errTooLarge
			}
			return nil, err
		}
		if typ == websocket.MessageText {
			return b, nil
		}
	}
}

// writeMsg writes under the connection's own context, not the request's:
// a request that times out mid-write must not close the connection every
// other request shares.
func (w *wsFrames) writeMsg(_ context.Context, b []byte) error {
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	return w.c.Write(ctx, websocket.MessageText, b)
}

func (w *wsFrames) close() error {
	err := w.c.Close(websocket.StatusNormalClosure, "")
	w.cancel()
	return err
}

// httpTransport posts each message; the handshake is made once and again
// after the harness could not be reached.
type httpTransport struct {
	opts      *ClientOptions
	hc        *http.Client
	onConnect connectHook

	mu     sync.Mutex
	ok     bool
	closed bool
}

func newHTTPTransport(opts *ClientOptions, hook connectHook) *httpTransport {
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment, MaxIdleConns: 256, MaxIdleConnsPerHost: 256,
			IdleConnTimeout: 90 * time.Second,
		}}
	}
	return &httpTransport{opts: opts, hc: hc, onConnect: hook}
}

func (t *httpTransport) ensure(ctx context.Context) error {
	t.mu.Lock()
	closed, ok := t.closed, t.ok
	t.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if ok {
		return nil
	}
	if err := t.onConnect(ctx, t.post); err != nil {
		return err
	}
	t.mu.Lock()
	t.ok = true
	t.mu.Unlock()
	return nil
}

func (t *httpTransport) roundTrip(ctx context.Context, id string, msg []byte) (*rpcMessage, error) {
	if err := t.ensure(ctx); err != nil {
		return nil, err
	}
	return t.post(ctx, id, msg)
}

func (t *httpTransport) post(ctx context.Context, _ string, msg []byte) (*rpcMessage, error) {
	status, body, err := t.send(ctx, msg)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, t.statusError(status, body)
	}
	return parseAnswer(body)
}

func (t *httpTransport) notify(ctx context.Context, msg []byte) error {
	if err := t.ensure(ctx); err != nil {
		return err
	}
	status, body, err := t.send(ctx, msg)
	if err != nil {
		return err
	}
	if status/100 != 2 {
		return t.statusError(status, body)
	}
	return nil
}

func (t *httpTransport) statusError(status int, body []byte) error {
	if status >= 500 || status == http.StatusUnauthorized || status == http.StatusForbidden {
		t.mu.Lock()
		t.ok = false
		t.mu.Unlock()
		return fmt.Errorf("%w: HTTP %d: %.200s", ErrUnavailable, status, bytes.TrimSpace(body))
	}
	return fmt.Errorf("%w: HTTP %d: %.200s", ErrProtocol, status, bytes.TrimSpace(body))
}

func (t *httpTransport) send(ctx context.Context, msg []byte) (int, []byte, error) {
	if t.opts.trace != nil {
		t.opts.trace(true, msg)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.opts.URL, bytes.NewReader(msg))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if t.opts.APIKey != "" {
		req.Header.Set("X-API-Key", t.opts.APIKey)
	}
	if t.opts.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+t.opts.BearerToken)
	}
	resp, err := t.hc.Do(req)
	if err != nil {
		t.mu.Lock()
		t.ok = false
		t.mu.Unlock()
		if ctx.Err() != nil {
			return 0, nil, timeoutError(ctx)
		}
		return 0, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(t.opts.MaxMessageBytes)+1))
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, timeoutError(ctx)
		}
		return 0, nil, fmt.Errorf("%w: reading the answer: %v", ErrUnavailable, err)
	}
	if len(body) > t.opts.MaxMessageBytes {
		return 0, nil, fmt.Errorf("%w: answer over the size limit", ErrProtocol)
	}
	if t.opts.trace != nil && len(body) > 0 {
		t.opts.trace(false, body)
	}
	return resp.StatusCode, body, nil
}

func (t *httpTransport) close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	if t.opts.HTTPClient == nil {
		t.hc.CloseIdleConnections()
	}
	return nil
}
