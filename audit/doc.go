// Package audit is Harness's append-only, hash-chained audit log (SPEC
// section 6) and its verifier.
//
// Every record carries a sequence number, the hash of the record before it
// and its own hash, so that an edited, removed or reordered record is found
// by VerifyJSONL, VerifyPostgres or `harness audit verify`:
//
//	{"seq":1,"time":"2026-11-21T23:05:00.123456789Z","instance":"host-a",
//	 "key_id":"3f0c…","prev_hash":"000…000","event":{…},"hash":"…"}
//
// hash is computed over action.Canonical of the record without its "hash"
// key; prev_hash of the first record is 64 zeros. A record is stored as
// exactly one line of text in the fixed key order shown above, with the
// event in canonical JSON (see Record.MarshalJSON), and the verifier insists
// on that exact text, so any change of any byte of a log is detected, even
// one that would leave the decoded values equal.
//
// # Keyed chains
//
// A log opened WithKey (the installation's secret key, the one the
// sanitizer uses) writes keyed records: hash is the hex HMAC-SHA-256 of
// that canonical text, so rewriting the log with a chain that verifies
// needs the key, not just write access to the log. Each keyed record
// names its key with "key_id" (16 hex digits: an HMAC of a fixed label
// under the chain key, which tells keys apart and reveals nothing of
// them). The chain key is derived from the installation key with HKDF
// (SHA-256, salt "github.com/harness-runtime/harness/audit chain key",
// info "hmac-sha256 v1"), so it is never the key the sanitizer computes
// its "hmac-sha256:" markers with, and no marker an agent can obtain is a
// valid record hash.
//
// A record without "key_id" is unkeyed: its hash is the hex SHA-256 of the
// same text. That is the format of logs written before chains were keyed,
// and of logs opened without a key. A chain may start unkeyed and become
// keyed (a writer with the key continuing an older log), never the other
// way round: an unkeyed record after a keyed one is refused by the
// verifiers (ProblemUnkeyed) and by a writer that finds one at the end of
// its log. A verifier given the key refuses unkeyed records altogether,
// since a valid unkeyed chain is exactly what someone without the key can
// write, unless AllowUnkeyed says the log is known to predate keying; the
// Report then counts them (Report.Unkeyed), and its String says the log is
// unkeyed. The first keyed record after unkeyed ones pins them: its hash
// covers prev_hash, so they cannot be changed afterwards without the key.
// A verifier without a key checks unkeyed records and stops with
// ErrKeyRequired at the first keyed one.
//
// # Harness's own files
//
// The log must live where the workspace cannot reach it: CheckOutside
// refuses, at start, a log or key path inside the workspace root. A JSONL
// log is opened without following a symbolic link at its path (the
// open fails with ErrNotLogFile and the link's target is neither created
// nor written), and must be a regular file.
//
// Two stores write the same records: JSONL (a local file, one record per
// line) and Postgres (one append-only table, one chain per instance). Both
// are safe for concurrent use by many goroutines and by several processes
// (JSONL through a flock around each write of a batch of records, Postgres
// through an advisory lock per chain). Open picks one from a configured
// target.
//
// # Durability and failing closed
//
// Append with durable=true returns only after the record is on stable
// storage (fsync for JSONL, a synchronous commit for Postgres); callers use
// it for trusted actions and must not run the action when Append returns an
// error. With durable=false the record has been handed to the operating
// system (JSONL) or committed without waiting for the WAL flush (Postgres),
// so a machine crash may lose the records written since the last durable
// one (and leave a torn line, see below), never a durable one. A JSONL log
// commits in groups: concurrent durable appends share one fsync, taken
// without holding the log's lock, and each returns only once an fsync
// that started after its own record was written has succeeded. After a
// failed write or fsync, every append still waiting for that fsync fails,
// and a JSONL log refuses every further Append until it is reopened,
// because the file's tail is then unknown.
//
// # Torn last line
//
// A crash in the middle of a write can leave a last line without its
// newline. Such a line is never silently accepted:
//
//   - the verifiers report it as the first bad record (naming its line and
//     the seq that was expected there);
//   - a JSONL log repairs it when it is opened, or before an append when
//     another process left it: it copies the torn bytes to a file beside the
//     log named "<log>.torn-<unix nanoseconds>" (mode 0600, fsync'd), then
//     writes over the torn bytes a chain record whose event is
//     {"kind":"audit_torn_tail","bytes":N,"sha256":"<hex of the dropped
//     bytes>","saved_to":"<name of that file>"}, and continues the chain.
//     The log thus states in the chain itself that bytes were dropped and
//     where they went.
//
// If the last complete line is not a valid record, OpenJSONL refuses to
// open the log instead of guessing where the chain goes on.
//
// # Postgres
//
// OpenPostgres creates, when missing, a table (default DefaultTable, or
// WithTable, or ?harness_audit_table= in the URL):
//
//	instance text, seq bigint, time timestamptz, hash text, record text,
//	PRIMARY KEY (instance, seq)
//
// with triggers that refuse UPDATE, DELETE and TRUNCATE. The column record
// holds the record's text exactly as hashed (jsonb would reorder its keys);
// the verifier checks that text and that the other columns agree with it.
// Each instance is one chain. An append is one transaction that takes an
// advisory lock on (table, instance), reads the head and inserts, so
// processes that share an instance name take turns instead of forking the
// chain.
//
// Besides these, the table has replay columns, added to an older table
// when a log opens it (see Replay below): pos bigserial (one order across
// the table's chains), and session_id, task_id, tenant and replay_keys,
// which an append fills from its event. No record text, hash or seq
// changes, so the chain verifies as before. Adding them to a large table
// rewrites it once, under a lock that holds appends meanwhile. Roles
// that may insert into the table are granted USAGE on the pos sequence
// then; a role granted INSERT later needs that grant too.
//
// # Replay and live events
//
// Replay (*JSONL and *Postgres are Replayers) reads the records of one
// session or task back in the order of the log, one bounded page at a
// time: AHP events by their session_id and payload.task_id, other records
// (token mints, approvals) by the session_id they carry. A Hub, given to
// a log WithHub (or wrapped around an Appender with Publishing), hands
// each record appended to live subscribers without ever waiting for
// them: a subscriber that falls behind is dropped.
//
// # What the chain does not prove
//
// A hash chain without an outside anchor cannot show that whole records
// were removed from its end. Report.LastSeq and Report.LastHash are the
// head to keep elsewhere (a ticket, another system's log); verifying later
// WithAnchor (or `harness audit verify --head SEQ:HASH`) finds both a
// removal and a rewrite up to the head. Whoever holds the key can rewrite
// a keyed chain; whoever can write an unkeyed one can rewrite it. The
// Postgres table refuses UPDATE, DELETE and TRUNCATE with triggers, which
// a superuser can still disable.
package audit
