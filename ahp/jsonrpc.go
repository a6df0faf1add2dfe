package ahp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// The protocol's JSON-RPC methods.
const (
	MethodHandshake = "ahp/handshake"
	MethodEvent     = "ahp/event"
	MethodQuery     = "ahp/query"
	MethodBatch     = "ahp/batch"
)

// JSON-RPC error codes the protocol uses.
const (
	CodeParseError      = -32700
	CodeInvalidRequest  = -32600
	CodeMethodNotFound  = -32601
	CodeInvalidParams   = -32602 // bad params, depth, request/notification mismatch, batch rules, bad contract payload
	CodeInternalError   = -32603 // the handler failed
	CodeVersionMismatch = -32000 // handshake with another major version
)

// RPCError is a JSON-RPC error object. A peer's error answer reaches the
// client's caller as an *RPCError (errors.As), so its code can be checked.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("ahp error %d: %s", e.Code, e.Message) }

// rpcMessage is any JSON-RPC message as read: a request (method and id),
// a notification (method, no id or a null id) or a response (result or
// error). A nil field was absent.
type rpcMessage struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// hasID reports whether the message carries an id that is not null.
func (m *rpcMessage) hasID() bool { return !isNull(m.ID) }

// validID reports whether the id is a string or a number, the kinds of
// id answered as sent.
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"':
		var s string
		return json.Unmarshal(id, &s) == nil
	case c == '-' || (c >= '0' && c <= '9'):
		var n json.Number
		return json.Unmarshal(id, &n) == nil
	}
	return false
}

// parseMessage reads a message. A message that is not JSON, not an
// object, has no method, or has an id that is neither a string nor a
// number nor null, is refused with the error a transport may report
// (stream transports drop it: the protocol answers no message it cannot
// attribute).
func parseMessage(msg []byte) (*rpcMessage, *RPCError) {
	var m rpcMessage
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, &RPCError{Code: CodeParseError, Message: "Parse error: " + err.Error()}
	}
	if m.Method == nil {
		return nil, &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request: no method"}
	}
	if m.hasID() && !validID(m.ID) {
		return nil, &RPCError{Code: CodeInvalidRequest, Message: "Invalid Request: id must be a string or a number"}
	}
	return &m, nil
}

var nullID = json.RawMessage("null")

// appendResponse appends a success response carrying result to b.
func appendResult(b []byte, id, result json.RawMessage) []byte {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}')
}

// appendError appends an error response to b.
func appendError(b []byte, id json.RawMessage, code int, msg string) []byte {
	if len(id) == 0 {
		id = nullID
	}
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	m, _ := json.Marshal(msg)
	b = append(b, m...)
	return append(b, "}}"...)
}

// appendRequest appends a request (id given) or a notification (id
// empty) to b.
func appendRequest(b []byte, id, method string, params []byte) []byte {
	b = appendRequestHead(b, id, method)
	b = append(b, params...)
	return append(b, '}')
}

// appendRequestHead appends a request up to its params' value, which the
// caller appends, followed by '}'.
func appendRequestHead(b []byte, id, method string) []byte {
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id != "" {
		b = append(b, `"id":`...)
		b = appendJSONString(b, id)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = appendJSONString(b, method)
	return append(b, `,"params":`...)
}

// Errors a client returns; each wraps the cause, and the message says why.
var (
	// ErrUnavailable: the harness could not be reached, or the connection
	// to it was lost before it answered.
	ErrUnavailable = errors.New("ahp: harness unavailable")
	// ErrTimeout: the harness did not answer in time.
	ErrTimeout = errors.New("ahp: harness timed out")
	// ErrProtocol: the harness answered something the protocol does not
	// allow (wrong jsonrpc, id, a missing or malformed result, a legacy
	// dialect).
	ErrProtocol = errors.New("ahp: protocol violation")
	// ErrIncompatible: the harness speaks another major protocol version.
	ErrIncompatible = errors.New("ahp: incompatible protocol version")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("ahp: client closed")
)
