// Package ahp holds the Agent Harness Protocol (AHP v2.4) event types that
// Harness emits for every action, and the sinks that receive them.
//
// On the wire (a later addition: JSON-RPC 2.0 over stdio, HTTP, WebSocket
// or a Unix socket) an event travels as the params of a "harness/event"
// message; in process and in the audit log it is this struct.
package ahp

import (
	"context"
	"time"
)

// Version is the protocol version Harness speaks.
const Version = "2.4"

// EventType names an event.
type EventType string

// Event types Harness emits for each action.
const (
	PreAction  EventType = "pre_action"
	PostAction EventType = "post_action"
	Error      EventType = "error"
)

// Event is one AHP event. Payload is always sanitized before an Event is
// built: no sink ever sees raw input.
type Event struct {
	Version   string         `json:"ahp_version"`
	EventID   string         `json:"event_id"`
	EventType EventType      `json:"event_type"`
	SessionID string         `json:"session_id"`
	AgentID   string         `json:"agent_id"`
	Timestamp time.Time      `json:"timestamp"`
	Depth     int            `json:"depth"`
	Payload   map[string]any `json:"payload"`
}

// Sink receives events. Emit must not keep ev.Payload beyond the call
// unless it copies it. An error from a sink in the fail-closed set (the
// audit log, for trusted actions) refuses the action.
type Sink interface {
	Emit(ctx context.Context, ev Event) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, ev Event) error

// Emit calls f.
func (f SinkFunc) Emit(ctx context.Context, ev Event) error { return f(ctx, ev) }

// Discard is a Sink that drops every event.
var Discard Sink = SinkFunc(func(context.Context, Event) error { return nil })
