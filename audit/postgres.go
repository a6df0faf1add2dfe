package audit

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/jackc/pgx/v5"
)

// DefaultTable is the Postgres table audit records go to by default.
const DefaultTable = "harness_audit"

// TableParam is the DSN parameter that names the table
// (postgres://…/db?harness_audit_table=name); it is removed before the DSN
// reaches the server.
const TableParam = "harness_audit_table"

var tableName = regexp.MustCompile(`^([a-z_][a-z0-9_]{0,62}\.)?[a-z_][a-z0-9_]{0,62}$`)

// Postgres is an audit log in a PostgreSQL table shared by many replicas:
// one chain per instance, rows keyed by (instance, seq). Each row keeps the
// record's exact text in the column "record", which is what is verified;
// the other columns are for queries.
//
// A *Postgres holds one connection, serialises its appends on it and
// reconnects after the connection breaks. Processes that share an instance
// name take turns on its chain (see Append), so they write one valid chain
// between them; give each replica its own name to keep them apart. The table refuses UPDATE, DELETE and
// TRUNCATE with triggers; that stops mistakes and ordinary roles, not a
// superuser, who can disable triggers (the verifier then finds the change).
type Postgres struct {
	mu       sync.Mutex
	cc       *pgx.ConnConfig
	conn     *pgx.Conn // reopened by connect after it broke
	table    string    // as configured
	ident    string    // quoted for SQL
	instance string
	key      *chainKey // nil: records are unkeyed
	lockKey  int64     // advisory lock of this instance's chain
	now      func() time.Time
	log      *slog.Logger
	closed   bool
	hub      *Hub // nil: records are not published

	// replayCols says that the table has the replay columns (pos,
	// session_id, task_id, tenant, replay_keys); see ensureReplay.
	replayCols bool
	// Replays read on their own connection, so that they never hold up
	// an append.
	rmu   sync.Mutex
	rconn *pgx.Conn
}

var _ Log = (*Postgres)(nil)

// pgConfig parses dsn and takes the table name out of it: from the
// TableParam parameter, else the WithTable option, else DefaultTable.
func pgConfig(dsn string, cfg config) (*pgx.ConnConfig, string, error) {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		// pgx's error quotes the DSN with its password masked.
		return nil, "", fmt.Errorf("audit: postgres dsn: %w", err)
	}
	table := cfg.table
	if t, ok := pc.RuntimeParams[TableParam]; ok {
		table = t
		delete(pc.RuntimeParams, TableParam)
	}
	if table == "" {
		table = DefaultTable
	}
	if !tableName.MatchString(table) {
		return nil, "", fmt.Errorf("audit: postgres table %q: want [schema.]name of lower-case letters, digits and _", table)
	}
	return pc, table, nil
}

func quoteTable(table string) string {
	return pgx.Identifier(strings.Split(table, ".")).Sanitize()
}

// OpenPostgres connects to the database at dsn, creates the audit table and
// its append-only triggers when they are missing, and continues the chain
// of instance (DefaultInstance when empty). Creating the table needs the
// CREATE privilege; a table that exists with its triggers only needs
// SELECT and INSERT.
func OpenPostgres(ctx context.Context, dsn, instance string, opts ...Option) (*Postgres, error) {
	cfg := newConfig(opts)
	if instance == "" {
		instance = cfg.instance
	}
	if instance == "" {
		instance = DefaultInstance()
	}
	pc, table, err := pgConfig(dsn, cfg)
	if err != nil {
		return nil, err
	}
	key, err := chainKeyOf(cfg)
	if err != nil {
		return nil, fmt.Errorf("audit: open postgres: %w", err)
	}
	p := &Postgres{cc: pc, table: table, ident: quoteTable(table), instance: instance, key: key, now: cfg.now, log: cfg.log,
		lockKey: lockKey("chain", table, instance), hub: cfg.hub}
	if err := p.connect(ctx); err != nil {
		return nil, err
	}
	err = p.ensureTable(ctx)
	if err == nil {
		err = p.ensureReplay(ctx)
	}
	if err == nil {
		err = p.checkHead(ctx)
	}
	if err != nil {
		p.conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return p, nil
}

// checkHead checks that the last record of the instance's chain can be
// continued with this log's key, as OpenJSONL does for its last line.
// Appends do not look again: every writer of one chain must hold its key.
func (p *Postgres) checkHead(ctx context.Context) error {
	var text string
	err := p.conn.QueryRow(ctx, `SELECT record FROM `+p.ident+` WHERE instance = $1 ORDER BY seq DESC LIMIT 1`, p.instance).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: read the head of %s (instance %q): %w", p.table, p.instance, err)
	}
	rec, bad := parseRecord([]byte(text), p.key)
	switch {
	case bad != nil && bad.needKey:
		return fmt.Errorf("%w: %s (instance %q): %s (open the log with its key)", ErrKeyRequired, p.table, p.instance, bad.msg)
	case bad != nil && bad.problem == ProblemWrongKey:
		return fmt.Errorf("%w: %s (instance %q): %s", ErrWrongKey, p.table, p.instance, bad.msg)
	case bad != nil:
		return fmt.Errorf("%w: %s (instance %q): last record: %s (run harness audit verify)", ErrCorrupt, p.table, p.instance, bad.msg)
	case p.key != nil && rec.KeyID == "":
		p.log.Warn("audit chain was written without a key; continuing it with keyed records (the earlier ones stay unkeyed, and verifying them needs --allow-unkeyed)",
			"table", p.table, "instance", p.instance, "unkeyed_up_to_seq", rec.Seq, "key_id", p.key.id)
	}
	return nil
}

// connect (re)opens the connection when there is none. Caller holds p.mu
// or owns p.
func (p *Postgres) connect(ctx context.Context) error {
	if p.conn != nil && !p.conn.IsClosed() {
		return nil
	}
	conn, err := pgx.ConnectConfig(ctx, p.cc)
	if err != nil {
		return fmt.Errorf("audit: postgres connect: %w", err)
	}
	p.conn = conn
	return nil
}

// lockKey names a Postgres advisory lock of this package.
func lockKey(parts ...string) int64 {
	sum := sha256.Sum256([]byte("github.com/harness-runtime/harness/audit\x00" + strings.Join(parts, "\x00")))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// ddlLockKey serialises schema setup between replicas that start at once;
// CREATE … IF NOT EXISTS alone races on the catalog.
var ddlLockKey = lockKey("ddl")

const (
	triggerRows     = "harness_audit_no_update_delete"
	triggerTruncate = "harness_audit_no_truncate"
)

func (p *Postgres) ready(ctx context.Context, q pgx.Tx) (bool, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT count(*) FROM pg_trigger WHERE tgrelid = to_regclass($1) AND tgname IN ($2, $3)`,
		p.table, triggerRows, triggerTruncate).Scan(&n)
	return n == 2, err
}

func (p *Postgres) ensureTable(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, p.conn, func(tx pgx.Tx) error {
		if ok, err := p.ready(ctx, tx); err != nil || ok {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, ddlLockKey); err != nil {
			return err
		}
		fn := "harness_audit_append_only"
		if i := strings.IndexByte(p.table, '.'); i >= 0 {
			fn = p.table[:i] + "." + fn
		}
		fn = quoteTable(fn)
		stmts := []string{
			`CREATE TABLE IF NOT EXISTS ` + p.ident + ` (
				instance text NOT NULL,
				seq bigint NOT NULL CHECK (seq > 0),
				time timestamptz NOT NULL,
				hash text NOT NULL,
				record text NOT NULL,
				PRIMARY KEY (instance, seq))`,
			`CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				RAISE EXCEPTION 'audit table %.% is append-only: % refused', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP
					USING ERRCODE = 'insufficient_privilege';
			END $$`,
			`DROP TRIGGER IF EXISTS ` + triggerRows + ` ON ` + p.ident,
			`CREATE TRIGGER ` + triggerRows + ` BEFORE UPDATE OR DELETE ON ` + p.ident +
				` FOR EACH ROW EXECUTE FUNCTION ` + fn + `()`,
			`DROP TRIGGER IF EXISTS ` + triggerTruncate + ` ON ` + p.ident,
			`CREATE TRIGGER ` + triggerTruncate + ` BEFORE TRUNCATE ON ` + p.ident +
				` FOR EACH STATEMENT EXECUTE FUNCTION ` + fn + `()`,
		}
		for _, s := range stmts {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("audit: create postgres table %s: %w", p.table, err)
	}
	return nil
}

// syncCommit decides, for the append's transaction only, how it commits:
// "off" lets a non-durable append return before the WAL flush; a durable
// one turns an "off" inherited from the server or role back on and keeps
// any other setting (local, on, remote_write, remote_apply), all of which
// flush the WAL locally before the commit returns.
const (
	syncCommitFast    = `SELECT set_config('synchronous_commit', 'off', true)`
	syncCommitDurable = `SELECT CASE WHEN current_setting('synchronous_commit') = 'off'
		THEN set_config('synchronous_commit', 'on', true) ELSE current_setting('synchronous_commit') END`
)

// Append inserts event as the next record of the instance's chain. With
// durable=true it returns after a synchronous commit; otherwise after a
// commit that may not survive a database crash. The context bounds the
// whole call. After a lost connection Append fails once and reconnects on
// the next call.
//
// Each append is one transaction that takes a transaction-scoped advisory
// lock on (table, instance), reads the chain's head and inserts the next
// record, so writers of one instance in any number of processes take turns
// and the chain never forks; the primary key (instance, seq) backs that up.
func (p *Postgres) Append(ctx context.Context, event any, durable bool) (Record, error) {
	ev, err := action.Canonical(event)
	if err != nil {
		return Record{}, fmt.Errorf("audit append: event: %w", err)
	}
	keys := columnKeys(keysOf(ev))
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return Record{}, ErrClosed
	}
	if err := p.connect(ctx); err != nil {
		return Record{}, fmt.Errorf("audit append: %w", err)
	}
	sc := syncCommitFast
	if durable {
		sc = syncCommitDurable
	}
	var rec Record
	err = pgx.BeginFunc(ctx, p.conn, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(sc)
		b.Queue(`SELECT pg_advisory_xact_lock($1)`, p.lockKey)
		b.Queue(`SELECT seq, hash FROM `+p.ident+` WHERE instance = $1 ORDER BY seq DESC LIMIT 1`, p.instance)
		br := tx.SendBatch(ctx, b)
		_, err1 := br.Exec()
		_, err2 := br.Exec()
		var seq int64
		hash := ZeroHash
		err3 := br.QueryRow().Scan(&seq, &hash)
		if errors.Is(err3, pgx.ErrNoRows) {
			err3 = nil
		}
		if err := errors.Join(err1, err2, err3, br.Close()); err != nil {
			return fmt.Errorf("read head: %w", err)
		}
		var line []byte
		rec, line, err = sealCanonical(uint64(seq)+1, p.now(), p.instance, hash, ev, p.key)
		if err != nil {
			return err
		}
		if !p.replayCols {
			_, err = tx.Exec(ctx, `INSERT INTO `+p.ident+` (instance, seq, time, hash, record) VALUES ($1, $2, $3, $4, $5)`,
				p.instance, int64(rec.Seq), rec.Time, rec.Hash, string(line))
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO `+p.ident+` (instance, seq, time, hash, record, replay_keys, session_id, task_id, tenant)
			VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8)`,
			p.instance, int64(rec.Seq), rec.Time, rec.Hash, string(line), keys.session, keys.task, keys.tenant)
		return err
	})
	if err != nil {
		return Record{}, fmt.Errorf("audit append to %s (instance %q): %w", p.table, p.instance, err)
	}
	if p.hub != nil {
		// Under mu: the hub sees this process's records in chain order.
		p.hub.Publish(rec)
	}
	return rec, nil
}

// Instance returns the name of the chain this log appends to.
func (p *Postgres) Instance() string { return p.instance }

// Table returns the table this log appends to, as configured.
func (p *Postgres) Table() string { return p.table }

// Close closes the connection. Append after Close returns ErrClosed;
// closing twice is not an error.
func (p *Postgres) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p.closeReplay(ctx)
	if p.conn == nil {
		return nil
	}
	if err := p.conn.Close(ctx); err != nil {
		return fmt.Errorf("audit close %s: %w", p.table, err)
	}
	return nil
}

// VerifyPostgres verifies the chain of instance in the audit table at dsn
// (the table as for OpenPostgres), or every chain in the table when
// instance is empty, stopping at the first bad record. Rows are read in
// seq order and the text of each record is verified as VerifyJSONL does,
// plus that the row's instance, seq and hash columns agree with it. The
// options that apply are WithTable and, with an instance, WithAnchor. The
// error is only for a failure to read the table.
func VerifyPostgres(ctx context.Context, dsn, instance string, opts ...Option) (Report, error) {
	cfg := newConfig(opts)
	pc, table, err := pgConfig(dsn, cfg)
	if err != nil {
		return Report{}, err
	}
	if cfg.anchor.Seq != 0 && instance == "" {
		return Report{}, errors.New("audit verify: an anchor belongs to one chain: name its instance")
	}
	if _, err := chainKeyOf(cfg); err != nil {
		return Report{}, fmt.Errorf("audit verify: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return Report{}, fmt.Errorf("audit verify: postgres connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ident := quoteTable(table)

	instances := []string{instance}
	if instance == "" {
		rows, err := conn.Query(ctx, `SELECT DISTINCT instance FROM `+ident+` ORDER BY instance`)
		if err == nil {
			instances, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			return Report{}, fmt.Errorf("audit verify: list instances in %s: %w", table, err)
		}
	}
	total := Report{LastHash: ZeroHash}
	for _, inst := range instances {
		rep, err := verifyChain(ctx, conn, ident, inst, cfg)
		total.Records += rep.Records
		total.Unkeyed += rep.Unkeyed
		total.Chains++
		total.Instance, total.LastSeq, total.LastHash = inst, rep.LastSeq, rep.LastHash
		if rep.KeyID != "" {
			total.KeyID = rep.KeyID
		}
		if err != nil {
			return total, fmt.Errorf("audit verify: %s: %w", table, err)
		}
		if !rep.OK() {
			total.FirstBad, total.Line, total.Problem, total.Reason = rep.FirstBad, rep.Line, rep.Problem, rep.Reason
			return total, nil
		}
	}
	if total.Chains != 1 {
		total.Instance = ""
	}
	return total, nil
}

func verifyChain(ctx context.Context, conn *pgx.Conn, ident, instance string, cfg config) (Report, error) {
	rep := Report{Chains: 1, Instance: instance, LastHash: ZeroHash}
	c, err := newChain(cfg)
	if err != nil {
		return rep, err
	}
	rows, err := conn.Query(ctx, `SELECT instance, seq, hash, record FROM `+ident+` WHERE instance = $1 ORDER BY seq`, instance)
	if err != nil {
		return rep, err
	}
	defer rows.Close()
	for rows.Next() {
		var inst, hash, text string
		var seq int64
		if err := rows.Scan(&inst, &seq, &hash, &text); err != nil {
			return rep, err
		}
		check := func(rec Record) *recordError {
			if rec.Instance != inst || rec.Seq != uint64(seq) || rec.Hash != hash {
				return badRecord(ProblemColumns, "seq %d: the row's instance, seq or hash columns differ from its record text", rec.Seq)
			}
			return nil
		}
		if ok, err := c.add([]byte(text), &rep, check); !ok {
			return rep, err
		}
	}
	if err := rows.Err(); err != nil {
		return rep, err
	}
	c.end(&rep)
	return rep, nil
}
