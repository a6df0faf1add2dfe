// Package trusted runs dangerous ("trusted") actions only after a preview:
// preview -> one-time confirmation token -> execute (SPEC section 5), and
// serves that flow, with plain untrusted execution and the schema
// registry, as an HTTP API.
//
// # The flow
//
// Service.Preview runs the policy guard on the action as if it were
// trusted, computes what it would do without doing it (for a patch the
// unified diff and the SHA-256 of every file it touches; for a command the
// argv, working directory, limits and sandbox; for anything else the
// sanitized input) and mints a token: 256 bits from crypto/rand, returned
// once and stored only as its SHA-256, bound to the canonical action hash,
// the principal, the tenant, an expiry and the file preconditions.
//
// Service.Execute consumes the token atomically (exactly one of any number
// of concurrent redeemers wins, across processes when the store is Redis),
// checks the principal and tenant, checks that every file is still as
// previewed (else stale_preview, and nothing is touched), and runs the
// stored action with trust through the Harness, which runs the guard again
// and records the events. An unknown, used, expired, malformed or foreign
// token gets the same not_found answer.
//
// With an audit log (Options.Audit), every token minted or refused as
// stale is recorded as a TokenRecord naming the token only by the first 16
// hex digits of its SHA-256, and naming the action_id its run will carry
// ("tok-<that ref>" unless the action has its own id), so the run's
// pre_action/post_action events link back to the preview that was
// approved. A preview whose record cannot be written mints nothing.
//
// # Approvals
//
// When a guard step answers "ask", the Harness plans the action and
// stores it as a pending approval (an ApprovalStore: MemoryApprovals, or
// RedisApprovals shared by replicas, chosen like the token store by
// harness.trusted.store); the caller gets needs_confirmation with the
// approval's id. A principal with agent:approve decides it
// (Service.DecideApproval; POST /v1/approvals/{id}/approve or /deny; the
// console): approve with scope once, or session (the same action hash in
// the same tenant's session then runs without asking again), or deny with
// a reason. Each approval is decided exactly once, across replicas; the
// requester never decides its own request unless
// harness.approvals.allow-self-approval; an approval nobody decides
// expires (approval_expired). The requester's poll (GET
// /v1/approvals/{id}?wait=S) of an approved approval claims it, once, and
// carries a one-time token bound to the requester that runs exactly the
// stored plan (its preconditions: a file changed since answers
// stale_preview); the library's AwaitApproval waits and runs it. Every
// request, decision and expiry is an ApprovalRecord in the audit log
// (approver, scope, method, action hash, approval id), the token minted
// for an approval names it, and the run's events carry its approval_id.
//
// What approvals do not guarantee: an approval's expiry is judged by the
// clock of the replica that looks (replicas' clocks should agree); an
// approved action whose token is claimed and then lost (a dropped
// connection) is not handed out again: ask again.
//
// # What it does not guarantee
//
//   - The file check and the write are serialised per file within one
//     process. Across processes sharing one workspace, a single-file apply
//     also hands the previewed hash to the workspace as expected_sha256,
//     which re-checks it just before writing; a multi-file patch relies on
//     the check alone, so a write by another process in the instant between
//     check and write is not detected. Commands carry no file precondition.
//   - A token is consumed before the action is checked again, so a token
//     whose action is then refused (stale, or blocked by a guard whose
//     configuration changed) is spent: preview again.
//   - The memory store lives and dies with the process and is not shared;
//     replicas must share a RedisStore. The record (with the action's
//     input) is kept in the store in clear; only the token is hashed.
//
// # HTTP
//
// Server is an http.Handler on the standard library's ServeMux: bearer
// authentication against hashed keys (constant-time), permissions
// agent:execute, agent:trusted, agent:approve, agent:audit and admin
// (which implies the others), capped
// bodies (413, on the Content-Length alone when it is too big), JSON
// errors {"error":{"code","message"}}, /healthz, /readyz, /metrics
// (Prometheus) and /openapi.json. Access logs name the route pattern,
// never the path (which holds the token), headers or bodies.
package trusted
