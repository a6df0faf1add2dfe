package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"sync"
	"time"
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

// errOutputClosed is the error of a write to the client's output after the
// bridge gave up on it.
var errOutputClosed = errors.New("mcp: stdio output abandoned: the client stopped reading")

// gatedOutput serialises the writes to the client's output on one
// goroutine, so that a write blocked on a client that stopped reading can be
// abandoned: after close, pending and later writes fail at once with
// errOutputClosed. A write already handed to the underlying writer is left
// to finish (or to fail when the output is closed), on that goroutine only.
type gatedOutput struct {
	reqs   chan gatedWrite
	closed chan struct{}
	once   sync.Once
}

type gatedWrite struct {
	p    []byte
	done chan error
}

func newGatedOutput(w io.Writer) *gatedOutput {
	g := &gatedOutput{reqs: make(chan gatedWrite), closed: make(chan struct{})}
	go func() {
		for {
			select {
			case req := <-g.reqs:
				_, err := w.Write(req.p)
				req.done <- err
			case <-g.closed:
				return
			}
		}
	}()
	return g
}

// Write hands a copy of p to the output goroutine and waits until it is
// written or the output is closed.
func (g *gatedOutput) Write(p []byte) (int, error) {
	req := gatedWrite{p: append([]byte(nil), p...), done: make(chan error, 1)}
	select {
	case g.reqs <- req:
	case <-g.closed:
		return 0, errOutputClosed
	}
	select {
	case err := <-req.done:
		if err != nil {
			return 0, err
		}
		return len(p), nil
	case <-g.closed:
		return 0, errOutputClosed
	}
}

// close makes every pending and later Write fail with errOutputClosed.
func (g *gatedOutput) close() { g.once.Do(func() { close(g.closed) }) }

// inflight counts the requests read from a stdio client that have not been
// answered yet. mcp-go's stdio server cancels every call still running
// when its input ends; the bridge instead holds the end of input back
// until the calls already read are answered.
type inflight struct {
	mu      sync.Mutex
	pending int
	idle    chan struct{} // closed when pending drops to 0; nil while 0
}

func (f *inflight) add() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending == 0 {
		f.idle = make(chan struct{})
	}
	f.pending++
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

// isRequest reports whether an incoming line is a request (it has a method
// and an id), as opposed to a notification or the client's answer to a
// request of ours.
func isRequest(line []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null"
}

// responseHead matches the start of a response as encoding/json writes
// mcp-go's JSONRPCResponse and JSONRPCError: the key after the id is result
// or error (a request of ours has params or method there).
var responseHead = regexp.MustCompile(`^\{"jsonrpc":"2\.0","id":(?:"(?:[^"\\]|\\.)*"|-?[0-9]+),"(?:result|error)":`)

// countingWriter counts the responses written to the client.
type countingWriter struct {
	w io.Writer
	f *inflight
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	head := p
	if len(head) > 512 {
		head = head[:512]
	}
	if responseHead.Match(head) {
		c.f.done()
	}
	return n, err
}

// drainingInput copies the client's lines into the pipe the stdio server
// reads, counting requests, and closes the pipe only once the requests read
// have been answered (or drainTimeout passed); then it closes ended. The
// tools/call requests fc takes (when fc is not nil) are answered by it
// instead, and counted by it.
func drainingInput(ctx context.Context, in io.Reader, pw *io.PipeWriter, f *inflight, fc *fastCalls, drain time.Duration, ended chan<- struct{}) {
	defer close(ended)
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 && (fc == nil || !fc.take(line)) {
			if isRequest(line) {
				f.add()
			}
			if _, werr := pw.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			f.wait(ctx, drain)
			_ = pw.CloseWithError(err)
			return
		}
	}
}
