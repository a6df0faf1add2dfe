package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ErrNoReplayColumns is returned by Postgres.Replay when the audit table
// lacks the replay columns and this process could not add them (its role
// does not own the table): open the log once with the table's owner.
var ErrNoReplayColumns = errors.New("audit: the postgres audit table has no replay columns")

// Replay columns of the audit table. pos orders the rows of every chain
// of the table in one sequence (the replay cursor); session_id, task_id
// and tenant are read from each event when it is appended (see keysOf);
// replay_keys is 1 on rows appended with them and NULL on rows from
// before they existed, which a replay finds by their text instead.
var replayColumns = []struct{ name, ddl string }{
	{"pos", "bigserial"},
	{"replay_keys", "smallint"},
	{"session_id", "text"},
	{"task_id", "text"},
	{"tenant", "text"},
}

// replayIndex is one index a replay reads, named after the table so that
// tables in one schema do not share names.
type replayIndex struct{ name, ddl string }

func (p *Postgres) replayIndexes() []replayIndex {
	sum := sha256.Sum256([]byte(p.table))
	suffix := hex.EncodeToString(sum[:5])
	def := func(kind, body string) replayIndex {
		name := "harness_audit_" + kind + "_" + suffix
		return replayIndex{name: name, ddl: "INDEX IF NOT EXISTS " + pgx.Identifier{name}.Sanitize() + " ON " + p.ident + " " + body}
	}
	ix := []replayIndex{
		def("pos", "(pos)"),
		def("session", "(session_id, pos) WHERE session_id IS NOT NULL"),
		def("task", "(task_id, pos) WHERE task_id IS NOT NULL"),
		def("legacy", "(pos) WHERE replay_keys IS NULL"),
	}
	ix[0].ddl = "UNIQUE " + ix[0].ddl
	return ix
}

// qualified names an index in the table's schema, for to_regclass.
func (p *Postgres) qualified(index string) string {
	if i := strings.IndexByte(p.table, '.'); i >= 0 {
		return p.table[:i] + "." + index
	}
	return index
}

// missingReplay lists the replay columns and indexes the table lacks.
func (p *Postgres) missingReplay(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}) (cols []string, indexes []replayIndex, err error) {
	rows, err := q.Query(ctx, `SELECT attname::text FROM pg_attribute WHERE attrelid = to_regclass($1) AND attnum > 0 AND NOT attisdropped`, p.table)
	if err != nil {
		return nil, nil, err
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, nil, err
	}
	for _, c := range replayColumns {
		found := false
		for _, h := range have {
			found = found || h == c.name
		}
		if !found {
			cols = append(cols, c.name)
		}
	}
	for _, ix := range p.replayIndexes() {
		var exists bool
		if err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, p.qualified(ix.name)).Scan(&exists); err != nil {
			return nil, nil, err
		}
		if !exists {
			indexes = append(indexes, ix)
		}
	}
	return cols, indexes, nil
}

// ensureReplay adds the replay columns and indexes to a table that lacks
// them (a table made before replay existed). Adding pos numbers the rows
// already there in the table's physical order, which for an append-only
// table is the order they were inserted; no row's record, hash or seq
// changes, so the chain verifies as before, and the append-only triggers
// are left as they are (a table rewrite fires no row trigger). A role
// that cannot alter the table leaves it as it is: appends go on without
// the columns and Replay fails with ErrNoReplayColumns until the owner
// has opened the log once.
func (p *Postgres) ensureReplay(ctx context.Context) error {
	cols, idx, err := p.missingReplay(ctx, p.conn)
	if err != nil {
		return fmt.Errorf("audit: postgres table %s: %w", p.table, err)
	}
	if len(cols) == 0 && len(idx) == 0 {
		p.replayCols = true
		return nil
	}
	err = pgx.BeginFunc(ctx, p.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, ddlLockKey); err != nil {
			return err
		}
		// Another replica may have done it while this one waited.
		cols, idx, err := p.missingReplay(ctx, tx)
		if err != nil {
			return err
		}
		for _, c := range replayColumns {
			for _, m := range cols {
				if m == c.name {
					if _, err := tx.Exec(ctx, `ALTER TABLE `+p.ident+` ADD COLUMN `+c.name+` `+c.ddl); err != nil {
						return err
					}
				}
			}
		}
		for _, ix := range idx {
			if _, err := tx.Exec(ctx, `CREATE `+ix.ddl); err != nil {
				return err
			}
		}
		return p.grantPos(ctx, tx)
	})
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("audit: postgres table %s: add replay columns: %w", p.table, err)
		}
		p.log.Warn("audit: could not add the replay columns to the audit table; replay is unavailable until its owner opens the log",
			"table", p.table, "err", err)
		return nil
	}
	p.replayCols = true
	return nil
}

// grantPos lets every role that may insert into the table draw from
// the sequence of pos, which every insert now does: an appending role of
// a table made before replay existed goes on appending after the owner's
// migration. (A role granted INSERT later needs USAGE on the sequence.)
func (p *Postgres) grantPos(ctx context.Context, tx pgx.Tx) error {
	var seq string
	if err := tx.QueryRow(ctx, `SELECT pg_get_serial_sequence($1, 'pos')`, p.table).Scan(&seq); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT DISTINCT coalesce(r.rolname, '') FROM pg_class c
		CROSS JOIN LATERAL aclexplode(c.relacl) a LEFT JOIN pg_roles r ON r.oid = a.grantee
		WHERE c.oid = to_regclass($1) AND a.privilege_type = 'INSERT'`, p.table)
	if err != nil {
		return err
	}
	roles, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, r := range roles {
		to := "PUBLIC"
		if r != "" {
			to = pgx.Identifier{r}.Sanitize()
		}
		if _, err := tx.Exec(ctx, `GRANT USAGE ON SEQUENCE `+seq+` TO `+to); err != nil {
			return err
		}
	}
	return nil
}

// pgKeys are a record's replay columns: NULL for an absent value, and for
// one holding a NUL, which PostgreSQL's text cannot hold and no Query may
// name.
type pgKeys struct{ session, task, tenant any }

func columnKeys(k recordKeys) pgKeys {
	col := func(s string) any {
		if s == "" || strings.IndexByte(s, 0) >= 0 {
			return nil
		}
		return s
	}
	return pgKeys{col(k.session), col(k.task), col(k.tenant)}
}

var _ Replayer = (*Postgres)(nil)

// Replay returns the records of q's session or task after the cursor
// q.After, across every instance's chain in the table, in the order of
// the column pos (the order the rows were inserted in; within one chain,
// the order of seq). Rows appended since replay existed are found by
// their indexed columns; rows from before, by a scan of those rows only
// for the id's text, then checked as JSONL's are. Replays use a
// connection of their own, one at a time per log, and never hold up an
// append.
//
// Rows are numbered when they are inserted, and a transaction commits
// after it took its number: a reader paging while several replicas
// append may pass a row that commits just after it read; replaying once
// the writes are done is complete.
func (p *Postgres) Replay(ctx context.Context, q Query) (Page, error) {
	q, err := q.normalize()
	if err != nil {
		return Page{}, err
	}
	p.mu.Lock()
	closed, ok := p.closed, p.replayCols
	p.mu.Unlock()
	switch {
	case closed:
		return Page{}, ErrClosed
	case !ok:
		return Page{}, fmt.Errorf("%w: %s", ErrNoReplayColumns, p.table)
	}
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if p.rconn == nil || p.rconn.IsClosed() {
		if p.rconn, err = pgx.ConnectConfig(ctx, p.cc); err != nil {
			return Page{}, fmt.Errorf("audit replay: postgres connect: %w", err)
		}
	}
	needle := q.needle()
	args := []any{int64(min(q.After, 1<<63-1)), q.Limit + 1, string(needle)}
	var cond []string
	for _, f := range []struct{ col, v string }{{"session_id", q.SessionID}, {"task_id", q.TaskID}, {"tenant", q.Tenant}} {
		if f.v != "" {
			args = append(args, f.v)
			cond = append(cond, f.col+" = $"+strconv.Itoa(len(args)))
		}
	}
	from := `SELECT pos, record FROM ` + p.ident + ` WHERE pos > $1 AND `
	sql := `(` + from + `replay_keys IS NOT NULL AND ` + strings.Join(cond, " AND ") + ` ORDER BY pos LIMIT $2)
		UNION ALL (` + from + `replay_keys IS NULL AND strpos(record, $3) > 0 ORDER BY pos LIMIT $2)
		ORDER BY pos LIMIT $2`
	rows, err := p.rconn.Query(ctx, sql, args...)
	if err != nil {
		return Page{}, fmt.Errorf("audit replay from %s: %w", p.table, err)
	}
	defer rows.Close()
	var (
		page      Page
		seen      int
		pageBytes int
		lastPos   int64
	)
	for rows.Next() {
		var pos int64
		var text string
		if err := rows.Scan(&pos, &text); err != nil {
			return Page{}, fmt.Errorf("audit replay from %s: %w", p.table, err)
		}
		if seen == q.Limit || (len(page.Events) > 0 && pageBytes+len(text) > replayPageBytes) {
			// There is more: resume after the last row looked at.
			page.Next = uint64(lastPos)
			return page, nil
		}
		seen++
		lastPos = pos
		rec, err := decodeStored([]byte(text))
		if err != nil || !q.matchesText(rec.Event, needle) {
			continue
		}
		page.Events = append(page.Events, rec)
		pageBytes += len(text)
	}
	if err := rows.Err(); err != nil {
		return Page{}, fmt.Errorf("audit replay from %s: %w", p.table, err)
	}
	return page, nil
}

// closeReplay closes the replay connection, waiting for a replay in
// progress.
func (p *Postgres) closeReplay(ctx context.Context) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	if p.rconn != nil {
		p.rconn.Close(ctx)
		p.rconn = nil
	}
}
