package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/harness-runtime/harness/action"
)

// fastCalls answers a stdio client's tools/call requests itself, without
// going through mcp-go's message handling: the call runs through the same
// Harness.Execute (the same guard, the same events) and the result is
// written with action.AppendCanonical, instead of encoding/json encoding
// and then re-compacting a large result several times over (which cost
// more than the call itself for a 64 KiB read).
//
// It takes only what needs nothing of the session: calls on a connection
// whose client opened it with initialize (so mcp-go holds the session and
// negotiated a protocol version without per-request metadata), without
// _meta (progress tokens, tasks and the like stay with mcp-go), for a tool
// the bridge serves that does not ask the person to confirm a preview.
// Every other message goes to mcp-go unchanged.
type fastCalls struct {
	s      *Server
	ctx    context.Context
	out    io.Writer
	f      *inflight
	slots  chan struct{}
	mu     sync.Mutex
	client string // the name the client gave in initialize, "" before it
	opened bool   // an initialize request was seen
	cancel map[string]context.CancelFunc
}

// maxFastCalls bounds the calls fastCalls runs at once; reading the
// client's input waits for a free slot.
const maxFastCalls = 16

func newFastCalls(ctx context.Context, s *Server, out io.Writer, f *inflight) *fastCalls {
	return &fastCalls{s: s, ctx: ctx, out: out, f: f, slots: make(chan struct{}, maxFastCalls), cancel: map[string]context.CancelFunc{}}
}

// envelope is the part of a JSON-RPC message fastCalls looks at.
type envelope struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
}

type callParams struct {
	Name      string          `json:"name"`
	Arguments any             `json:"arguments"`
	Meta      json.RawMessage `json:"_meta"`
	Task      json.RawMessage `json:"task"`
}

// take reports whether it answers line itself. It also notes what it
// needs of the messages it passes on (the client's initialize, and
// cancellations of its own calls).
func (fc *fastCalls) take(line []byte) bool {
	if !bytes.Contains(line, []byte(`"tools/call"`)) {
		fc.observe(line)
		return false
	}
	var m envelope
	if json.Unmarshal(line, &m) != nil || m.Method != "tools/call" {
		fc.observe(line)
		return false
	}
	if m.JSONRPC != "2.0" || len(m.ID) == 0 || m.ID[0] == 'n' {
		return false
	}
	fc.mu.Lock()
	opened, client := fc.opened, fc.client
	fc.mu.Unlock()
	if !opened {
		return false
	}
	var p callParams
	if json.Unmarshal(m.Params, &p) != nil || len(p.Meta) > 0 || len(p.Task) > 0 || fc.s.srv.GetTool(p.Name) == nil || fc.s.needsConfirmation(p.Name) {
		return false
	}
	a, refused := fc.s.actionFor(p.Name, p.Arguments, "stdio", "")
	if client != "" {
		a.AgentID = "mcp:" + client
	}
	fc.f.add()
	fc.slots <- struct{}{}
	ctx, cancel := context.WithCancel(fc.ctx)
	key := string(m.ID)
	fc.mu.Lock()
	fc.cancel[key] = cancel
	fc.mu.Unlock()
	go func() {
		defer func() {
			fc.mu.Lock()
			delete(fc.cancel, key)
			fc.mu.Unlock()
			cancel()
			<-fc.slots
			fc.f.done()
		}()
		var obs action.Observation
		if refused != nil {
			obs = *refused
		} else {
			obs = fc.s.runRecovered(ctx, a)
		}
		if !fc.respond(m.ID, obs) {
			fc.respond(m.ID, internalError(obs, "internal error: the result could not be rendered"))
		}
	}()
	return true
}

// respond writes the response to request id carrying obs. It reports
// false, having written nothing, when rendering obs panicked.
func (fc *fastCalls) respond(id json.RawMessage, obs action.Observation) (ok bool) {
	buf := responseBuffers.Get().(*[]byte)
	defer func() {
		if r := recover(); r != nil {
			ok = false
		}
		if cap(*buf) <= maxPooledResponse {
			responseBuffers.Put(buf)
		}
	}()
	*buf = appendToolResponse((*buf)[:0], id, obs)
	_, _ = fc.out.Write(*buf)
	return true
}

// observe notes the client's initialize (its name, and that the session
// is opened the classic way) and cancels a call of ours the client
// cancelled. The message still goes to mcp-go.
func (fc *fastCalls) observe(line []byte) {
	switch {
	case bytes.Contains(line, []byte(`"initialize"`)):
		var m struct {
			Method string `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
				ClientInfo      struct {
					Name string `json:"name"`
				} `json:"clientInfo"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "initialize" && m.Params.ProtocolVersion != "" {
			fc.mu.Lock()
			fc.opened, fc.client = true, m.Params.ClientInfo.Name
			fc.mu.Unlock()
		}
	case bytes.Contains(line, []byte(`"notifications/cancelled"`)):
		var m struct {
			Method string `json:"method"`
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "notifications/cancelled" {
			fc.mu.Lock()
			cancel := fc.cancel[string(m.Params.RequestID)]
			fc.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	}
}

// runRecovered is run, with a panic turned into an internal error
// observation (as mcp-go's recovery does for the calls it handles).
func (s *Server) runRecovered(ctx context.Context, a action.Action) (obs action.Observation) {
	defer func() {
		if r := recover(); r != nil {
			obs = internalError(action.Observation{Action: a.Name}, fmt.Sprintf("internal error: %v", r))
		}
	}()
	return s.run(ctx, a)
}

// maxPooledResponse is the largest response buffer kept for reuse.
const maxPooledResponse = 4 << 20

var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// appendToolResponse appends the JSON-RPC response line (with its
// newline) answering request id with the tool result of obs: the
// observation as structured content, its Render text as a text block,
// isError when the status is not ok. It is the same result toolResult
// gives mcp-go, written directly. A payload that cannot be encoded is
// replaced by an internal error, so that the response is always valid.
func appendToolResponse(b []byte, id json.RawMessage, obs action.Observation) []byte {
	if obs.Payload == nil {
		obs.Payload = map[string]any{}
	}
	head := len(b)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":{"content":[{"type":"text","text":`...)
	b = action.AppendJSONString(b, Render(obs))
	b = append(b, `}],"structuredContent":`...)
	out, err := appendObservation(b, obs)
	if err != nil {
		return appendToolResponse(b[:head], id, internalError(obs, errUnencodable))
	}
	b = out
	if obs.Status != action.StatusOK {
		b = append(b, `,"isError":true`...)
	}
	return append(b, "}}\n"...)
}

// appendObservation appends obs as encoding/json writes an
// action.Observation (the same fields in the same order), with the payload
// in canonical form.
func appendObservation(b []byte, obs action.Observation) ([]byte, error) {
	if obs.Decision != nil || obs.Approval != nil {
		// Refusals and waits are not the hot path: encoding/json writes them.
		raw, err := json.Marshal(obs)
		if err != nil {
			return b, err
		}
		return append(b, raw...), nil
	}
	b = append(b, `{"action_id":`...)
	b = action.AppendJSONString(b, obs.ActionID)
	b = append(b, `,"action":`...)
	b = action.AppendJSONString(b, obs.Action)
	b = append(b, `,"source":`...)
	b = action.AppendJSONString(b, string(obs.Source))
	b = append(b, `,"status":`...)
	b = action.AppendJSONString(b, string(obs.Status))
	b = append(b, `,"code":`...)
	b = action.AppendJSONString(b, string(obs.Code))
	b = append(b, `,"message":`...)
	b = action.AppendJSONString(b, obs.Message)
	b = append(b, `,"payload":`...)
	b, err := action.AppendCanonical(b, obs.Payload)
	if err != nil {
		return b, err
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendFloat(b, obs.LatencyMS, 'f', -1, 64)
	return append(b, '}'), nil
}
