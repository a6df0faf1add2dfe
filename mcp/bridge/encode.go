package bridge

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-runtime/harness/action"
)

// The encoding step of the stdio transport. encoding/json writes a tool
// result by encoding the observation, then compacting it again at every
// level that has its own MarshalJSON (the result, then the response), which
// for a 64 KiB read cost more than the call itself. appendMessageParts writes
// the tool results the bridge makes directly (the observation with
// action.AppendCanonical, the text once) and leaves every other message,
// and any result it does not recognise exactly, to encoding/json. The
// bytes differ only in key order and number spelling: the JSON value is
// the same (TestAppendMessageMatchesEncodingJSON).

// maxPooledResponse is the largest response buffer kept for reuse.
const maxPooledResponse = 4 << 20

var responseBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// memoText is the place of a text left out of a line because the bridge
// remembers its JSON (see appendTextOrMemo): text goes at offset at of
// the line.
type memoText struct {
	at   int
	text []byte
}

// appendMessageParts appends msg as one JSON line (with its newline),
// except that the text of a tool result whose JSON the bridge remembers is
// left out: it goes at m.at (m.text is nil when nothing was left out). The
// transport sends it from the memo, so that a file read again costs no
// copy of its text.
func appendMessageParts(b []byte, msg mcpgo.JSONRPCMessage) (out []byte, m memoText, err error) {
	if r, ok := msg.(mcpgo.JSONRPCResponse); ok {
		if res, ok := r.Result.(*mcpgo.CallToolResult); ok {
			if out, m, ok := appendToolResponse(b, r.ID, res); ok {
				return out, m, nil
			}
		}
	}
	defer func() {
		if r := recover(); r != nil {
			out, m, err = b, memoText{}, fmt.Errorf("encode %T: %v", msg, r)
		}
	}()
	raw, err := json.Marshal(msg)
	if err != nil {
		return b, memoText{}, err
	}
	return append(append(b, raw...), '\n'), memoText{}, nil
}

// appendToolResponse appends the response line answering request id with
// res, when res is a tool result as toolResult makes them (one plain text
// block, an action.Observation as structured content, no metadata),
// leaving out a text whose JSON the bridge remembers (see
// appendMessageParts); it reports false, having appended nothing, for any
// other result, or when the observation cannot be written this way
// (encoding/json then writes the response, or says why it cannot).
func appendToolResponse(b []byte, id mcpgo.RequestId, res *mcpgo.CallToolResult) (out []byte, m memoText, ok bool) {
	obs, isObs := res.StructuredContent.(action.Observation)
	if !isObs || res.Meta != nil || len(res.InputRequests) > 0 || res.RequestState != "" ||
		len(res.RawStructuredContent) > 0 || len(res.Content) != 1 {
		return b, memoText{}, false
	}
	text, isText := res.Content[0].(mcpgo.TextContent)
	if !isText || text.Meta != nil || text.Annotations != nil || text.Type != mcpgo.ContentTypeText {
		return b, memoText{}, false
	}
	rawID, err := json.Marshal(id)
	if err != nil {
		return b, memoText{}, false
	}
	head := len(b)
	defer func() {
		if recover() != nil {
			out, m, ok = b[:head], memoText{}, false
		}
	}()
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, rawID...)
	b = append(b, `,"result":{`...)
	if res.ResultType != "" {
		b = append(b, `"resultType":`...)
		b = action.AppendJSONString(b, string(res.ResultType))
		b = append(b, ',')
	}
	b = append(b, `"content":[{"type":"text","text":`...)
	b, m.text = appendTextOrMemo(b, text.Text)
	m.at = len(b)
	b = append(b, `}],"structuredContent":`...)
	b, err = appendObservation(b, obs)
	if err != nil {
		return b[:head], memoText{}, false
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	return append(b, "}}\n"...), m, true
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
	var err error
	if obs.Payload == nil {
		b = append(b, "null"...)
	} else if b, err = action.AppendCanonical(b, obs.Payload); err != nil {
		return b, err
	}
	b = append(b, `,"latency_ms":`...)
	b = strconv.AppendFloat(b, obs.LatencyMS, 'f', -1, 64)
	return append(b, '}'), nil
}
