// Package bridge is the MCP server behind `harness mcp`: Server serves
// every registered action as an MCP tool whose input schema is the
// registry's and whose annotations say the truth about its risk. Every
// call goes through runtime.Harness.Execute, so through the same guard and
// the same events as any other entry point. Trusted actions run directly
// only when auto-approved; those listed in harness.mcp.bridge.trusted-actions
// run after the person confirms their preview through MCP elicitation
// (through a TrustFlow, the trusted package's preview -> token -> execute,
// in `harness mcp`); all others are refused with trust_required and a
// message saying how to allow them.
//
// # One path per call
//
// Every transport (stdio, streamable HTTP, in-process) hands its messages
// to one dispatcher, mcp-go's MCPServer.HandleMessage, which owns the
// protocol (initialize, sessions, cancellation, tools/list) and calls the
// bridge's one tools/call handler. The stdio transport of this package
// differs from mcp-go's only in what a transport owns: it answers the
// calls already read when its input ends, abandons writes to a client that
// stopped reading, gives a call waiting for a confirmation its slot back,
// and writes a tool result through its own encoder (an encoding step, not
// a second dispatcher: the JSON value is the one encoding/json writes).
//
// What the bridge does not do: authenticate (serve HTTP on loopback only,
// as `harness mcp --http` enforces); emit events for a refusal decided while
// previewing an action for confirmation (nothing ran; the observation says
// why).
//
// The bridge negotiates the protocol revision its client speaks: the
// stateless 2026-07-28 core with clients that know it, the initialize
// handshake of 2025-11-25 and earlier otherwise (the official TypeScript
// SDK 1.32 speaks 2025-11-25).
package bridge
