// Package mcp is the Model Context Protocol client runtime: Client runs the
// mcp_call action (and, when a server's register-tools is set, one action
// per allowed tool, named mcp.<server>.<tool>). It reaches only the
// servers configured and enabled under harness.mcp.servers, and on them
// only the tools listed in their tools key. Every failure of a server (a
// tool error, a timeout, a dead process, a malformed reply) comes back as
// an error carrying code mcp_error or timeout, which the dispatcher turns
// into an observation with source mcp; nothing a server does escapes the
// agent's loop.
//
// The other direction, Harness's actions served as MCP tools (`harness
// mcp`), is package mcp/bridge.
//
// What the client does not do: a tool a server adds later (announced with
// notifications/tools/list_changed) becomes callable through mcp_call when
// allowed, but is not registered as an mcp.<server>.<tool> action.
//
// The client negotiates the protocol revision its peer speaks: the
// stateless 2026-07-28 core with peers that know it, the initialize
// handshake of 2025-11-25 and earlier otherwise.
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
