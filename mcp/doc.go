// Package mcp speaks the Model Context Protocol both ways.
//
// As a client, Client is the runtime of the mcp_call action (and, when a
// server's register-tools is set, of one action per allowed tool, named
// mcp.<server>.<tool>). It reaches only the servers configured and enabled
// under harness.mcp.servers, and on them only the tools listed in their
// tools key. Every failure of a server (a tool error, a timeout, a dead
// process, a malformed reply) comes back as an error carrying code
// mcp_error or timeout, which the dispatcher turns into an observation with
// source mcp; nothing a server does escapes the agent's loop.
//
// As a server, Server (the bridge behind `harness mcp`) serves every
// registered action as an MCP tool whose input schema is the registry's and
// whose annotations say the truth about its risk. Every call goes through
// runtime.Harness.Execute, so through the same guard and the same events as
// any other entry point. Trusted actions run directly only when
// auto-approved; those listed in harness.mcp.bridge.trusted-actions run
// after the person confirms their preview through MCP elicitation (through
// a TrustFlow, the trusted package's preview -> token -> execute, in
// `harness mcp`); all others are refused with trust_required and a message
// saying how to allow them.
//
// What the bridge does not do: authenticate (serve HTTP on loopback only,
// as `harness mcp --http` enforces); emit events for a refusal decided while
// previewing an action for confirmation (nothing ran; the observation says
// why). On the client side, a tool a server adds later (announced with
// notifications/tools/list_changed) becomes callable through mcp_call when
// allowed, but is not registered as an mcp.<server>.<tool> action.
//
// Both sides negotiate the protocol revision their peer speaks: the
// stateless 2026-07-28 core with peers that know it, the initialize
// handshake of 2025-11-25 and earlier otherwise (the official TypeScript SDK
// 1.32 speaks 2025-11-25).
//
// # Refusal codes
//
// The guard check returned by AllowlistCheck and Client.Check refuses, with
// source policy and status blocked:
//
//   - action_disabled: the server is not configured under
//     harness.mcp.servers, or is configured with enabled: false;
//   - command_not_allowed: the tool is not in the server's tools list (an
//     empty or missing list allows no tool: the allowlist fails closed);
//   - invalid_input: the arguments do not match the input schema the server
//     published for the tool (checked when the schema is known).
package mcp
