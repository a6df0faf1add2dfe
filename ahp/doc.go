// Package ahp speaks the Agent Harness Protocol (AHP v2.4): the events an
// agent sends to the harness that supervises it, and the harness's
// decisions.
//
// Two forms of an event live here. Event is what Harness records for its
// own actions (pre_action, post_action, error) in process and in the
// audit log, with its sanitized ActionPayload. WireEvent is an event as
// it travels between an agent and a harness: JSON-RPC 2.0 over stdio, a
// Unix socket (one message per line), HTTP (one POST per message) or
// WebSocket (one text frame per message), with the methods ahp/handshake,
// ahp/event, ahp/query and ahp/batch.
//
// Client is the agent's side: Dial a harness (a program on stdio, a URL,
// a socket), Send blocking events and get a Decision (allow, block,
// modify, defer, escalate), Notify the rest, Batch and Query. Any error
// means there is no decision; Harness refuses the action then (fail
// closed), whatever the error.
//
// Server is the harness's side: it applies the protocol's rules (version
// compatibility, depth, which events are requests and which
// notifications, batches, the run contracts' payloads) and hands the
// events that pass to a Handler, over any of the four transports.
//
// The shapes follow the protocol's reference implementation (the Rust
// crate a3s-ahp 2.4.0) as it behaves, not as its README says where the
// two differ; where the reference is lax, this package is strict: see
// TestServerRules and testdata/server for every rule.
package ahp
