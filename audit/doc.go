// Package audit is Harness's append-only, hash-chained audit log (SPEC
// section 6) and its verifier.
//
// Every record carries a sequence number, the hash of the record before it
// and its own hash, so that an edited, removed or reordered record is found
// by VerifyJSONL, VerifyPostgres or `harness audit verify`:
//
//	{"seq":1,"time":"2026-11-21T23:05:00.123456789Z","instance":"host-a",
//	 "prev_hash":"000…000","event":{…},"hash":"…"}
//
// hash is the hex SHA-256 of action.Canonical of the record without its
// "hash" key; prev_hash of the first record is 64 zeros. A record is stored
// as exactly one line of text in the fixed key order shown above, with the
// event in canonical JSON (see Record.MarshalJSON), and the verifier insists
// on that exact text, so any change of any byte of a log is detected, even
// one that would leave the decoded values equal.
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
// # What the chain does not prove
//
// A hash chain without an outside anchor cannot show that whole records
// were removed from its end, nor stop someone who can rewrite the whole
// file from recomputing every hash. Report.LastSeq and Report.LastHash are
// the head to keep elsewhere (a ticket, another system's log); verifying
// later WithAnchor (or `harness audit verify --head SEQ:HASH`) finds both.
// The Postgres table refuses UPDATE, DELETE and TRUNCATE with triggers,
// which a superuser can still disable.
package audit
