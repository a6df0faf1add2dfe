package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/harness-runtime/harness/internal/testkit"
)

func openPG(t *testing.T, dsn, table, instance string) *Postgres {
	t.Helper()
	p, err := OpenPostgres(context.Background(), dsn, instance, WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func appendN(t *testing.T, p *Postgres, n int) Record {
	t.Helper()
	var rec Record
	for i := range n {
		var err error
		rec, err = p.Append(context.Background(), sampleEvents[i%len(sampleEvents)], i%2 == 0)
		if err != nil {
			t.Fatal(err)
		}
	}
	return rec
}

func verifyPG(t *testing.T, dsn, table, instance string) Report {
	t.Helper()
	rep, err := VerifyPostgres(context.Background(), dsn, instance, WithTable(table))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestPostgresContinuesAfterReopen(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	var last Record
	for round := range 3 {
		p := openPG(t, dsn, table, "replica-a")
		rec := appendN(t, p, 4)
		if rec.Seq != uint64(4*(round+1)) {
			t.Fatalf("round %d: last seq %d", round, rec.Seq)
		}
		last = rec
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rep := verifyPG(t, dsn, table, "replica-a")
	if !rep.OK() || rep.Records != 12 || rep.LastHash != last.Hash {
		t.Fatalf("after 3 restarts: %s", rep)
	}
}

func TestPostgresOneChainPerInstance(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	a := openPG(t, dsn, table, "replica-a")
	b := openPG(t, dsn, table, "replica-b")
	for range 3 {
		appendN(t, a, 2)
		appendN(t, b, 1)
	}
	for inst, want := range map[string]int{"replica-a": 6, "replica-b": 3} {
		rep := verifyPG(t, dsn, table, inst)
		if !rep.OK() || rep.Records != want || rep.LastSeq != uint64(want) {
			t.Errorf("%s: %s, want %d records", inst, rep, want)
		}
	}
	all := verifyPG(t, dsn, table, "")
	if !all.OK() || all.Records != 9 || all.Chains != 2 {
		t.Errorf("all chains: %+v", all)
	}
}

func TestPostgresConcurrentAppenders(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	// Two logs for one instance, as two processes sharing a name would be:
	// their appends race on the database, not on a Go mutex.
	logs := []*Postgres{openPG(t, dsn, table, "shared"), openPG(t, dsn, table, "shared")}
	const writers, each = 8, 200
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			p := logs[w%2]
			for i := range each {
				if _, err := p.Append(context.Background(), map[string]any{"writer": w, "i": i}, i%50 == 0); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rep := verifyPG(t, dsn, table, "shared")
	if !rep.OK() || rep.Records != writers*each {
		t.Fatalf("concurrent chain: %s", rep)
	}
}

func TestPostgresRefusesUpdateDeleteTruncate(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	appendN(t, openPG(t, dsn, table, "a"), 3)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		"UPDATE " + table + " SET record = 'x' WHERE seq = 2",
		"UPDATE " + table + " SET seq = seq + 10",
		"DELETE FROM " + table + " WHERE seq = 3",
		"TRUNCATE " + table,
	} {
		t.Run(strings.Fields(q)[0], func(t *testing.T) {
			_, err := conn.Exec(ctx, q)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "42501" || !strings.Contains(pe.Message, "append-only") {
				t.Fatalf("%s: err = %v, want the append-only refusal", q, err)
			}
		})
	}
	if rep := verifyPG(t, dsn, table, "a"); !rep.OK() || rep.Records != 3 {
		t.Fatalf("after refused changes: %s", rep)
	}
}

func TestVerifyPostgresDetectsTampering(t *testing.T) {
	dsn := testkit.Postgres(t)
	cases := []struct {
		name     string
		sql      string // %[1]s is the table
		records  int
		firstBad uint64
		problem  Problem
	}{
		{"edited record text", `UPDATE %[1]s SET record = replace(record, '"quotes\"', '"quotas\"') WHERE seq = 3`, 2, 3, ProblemHash},
		{"deleted record", `DELETE FROM %[1]s WHERE seq = 4`, 3, 4, ProblemSeq},
		{"deleted first record", `DELETE FROM %[1]s WHERE seq = 1`, 0, 1, ProblemSeq},
		{"reordered records", `UPDATE %[1]s SET seq = 100 WHERE seq = 2; UPDATE %[1]s SET seq = 2 WHERE seq = 3; UPDATE %[1]s SET seq = 3 WHERE seq = 100`, 1, 2, ProblemColumns},
		{"edited hash column", `UPDATE %[1]s SET hash = repeat('0', 64) WHERE seq = 5`, 4, 5, ProblemColumns},
		{"record moved to another instance", `UPDATE %[1]s SET instance = 'other' WHERE seq = 5`, 4, 5, ProblemSeq},
		{"torn record text", `UPDATE %[1]s SET record = left(record, 40) WHERE seq = 6`, 5, 6, ProblemNotRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			table := testTable(t, dsn)
			appendN(t, openPG(t, dsn, table, "a"), 6)
			if rep := verifyPG(t, dsn, table, "a"); !rep.OK() {
				t.Fatalf("before tampering: %s", rep)
			}
			// A superuser can switch the append-only triggers off.
			adminExec(t, dsn,
				"ALTER TABLE "+table+" DISABLE TRIGGER USER",
				strings.ReplaceAll(tc.sql, "%[1]s", table),
				"ALTER TABLE "+table+" ENABLE TRIGGER USER")
			rep := verifyPG(t, dsn, table, "a")
			if rep.Records != tc.records || rep.FirstBad != tc.firstBad || rep.Problem != tc.problem || rep.Instance != "a" {
				t.Errorf("got records=%d first_bad=%d problem=%q instance=%q (%s)\nwant records=%d first_bad=%d problem=%q",
					rep.Records, rep.FirstBad, rep.Problem, rep.Instance, rep.Reason, tc.records, tc.firstBad, tc.problem)
			}
		})
	}
}

func TestPostgresFailsClosed(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	p := openPG(t, dsn, table, "a")
	appendN(t, p, 1)
	adminExec(t, dsn, "DROP TABLE "+table)
	if _, err := p.Append(context.Background(), "trusted action", true); err == nil {
		t.Fatal("append to a dropped table succeeded")
	}
	p.Close()
	if _, err := p.Append(context.Background(), "x", true); !errors.Is(err, ErrClosed) {
		t.Errorf("Append after Close = %v, want ErrClosed", err)
	}
}

func TestPostgresReconnectsAfterConnectionLoss(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	p := openPG(t, dsn, table, "a")
	appendN(t, p, 2)
	var pid uint32
	p.mu.Lock()
	pid = p.conn.PgConn().PID()
	p.mu.Unlock()
	adminExec(t, dsn, fmt.Sprintf("SELECT pg_terminate_backend(%d)", pid))
	// The first append after the loss may fail (the caller fails closed);
	// one after it must work again and continue the chain.
	_, _ = p.Append(context.Background(), "maybe lost", true)
	rec, err := p.Append(context.Background(), "after reconnect", true)
	if err != nil {
		t.Fatalf("append after reconnect: %v", err)
	}
	rep := verifyPG(t, dsn, table, "a")
	if !rep.OK() || rep.LastSeq != rec.Seq {
		t.Fatalf("chain after reconnect: %s (last append seq %d)", rep, rec.Seq)
	}
}

func TestPostgresTableFromDSN(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	withTable := dsn + sep + TableParam + "=" + table
	l, err := Open(context.Background(), withTable, "dsn-test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Append(context.Background(), "x", true)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if pg, ok := l.(*Postgres); !ok || pg.Table() != table || pg.Instance() != "dsn-test" {
		t.Fatalf("Open(%q) = %T", withTable, l)
	}
	rep, err := VerifyPostgres(context.Background(), withTable, "dsn-test")
	if err != nil || !rep.OK() || rep.Records != 1 {
		t.Fatalf("verify via DSN table: %s, %v", rep, err)
	}
}

func TestPostgresBadTableName(t *testing.T) {
	for _, name := range []string{"Audit", "a;drop table x", "a.b.c", `a"b`, ""} {
		t.Run(name, func(t *testing.T) {
			_, _, err := pgConfig("postgres://u@127.0.0.1/db", config{table: name})
			if name == "" {
				if err != nil {
					t.Fatalf("empty name should mean the default: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("table %q accepted", name)
			}
		})
	}
}

// TestSyncCommitSetting pins what the first statement of an append's
// transaction leaves synchronous_commit at, from each starting value.
func TestSyncCommitSetting(t *testing.T) {
	dsn := testkit.Postgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	cases := []struct {
		name, query, before, want string
	}{
		{"fast", syncCommitFast, "on", "off"},
		{"durable from off", syncCommitDurable, "off", "on"},
		{"durable keeps on", syncCommitDurable, "on", "on"},
		{"durable keeps remote_apply", syncCommitDurable, "remote_apply", "remote_apply"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tx, err := conn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit TO "+tc.before); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, tc.query); err != nil {
				t.Fatal(err)
			}
			var got string
			if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("synchronous_commit = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestVerifyPostgresWithAnchor(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	last := appendN(t, openPG(t, dsn, table, "a"), 5)
	anchor := Anchor{Seq: last.Seq, Hash: last.Hash}
	rep, err := VerifyPostgres(context.Background(), dsn, "a", WithTable(table), WithAnchor(anchor))
	if err != nil || !rep.OK() {
		t.Fatalf("anchored at the head: %s, %v", rep, err)
	}
	if _, err := VerifyPostgres(context.Background(), dsn, "", WithTable(table), WithAnchor(anchor)); err == nil {
		t.Error("an anchor without an instance was accepted")
	}
	adminExec(t, dsn,
		"ALTER TABLE "+table+" DISABLE TRIGGER USER",
		"DELETE FROM "+table+" WHERE seq >= 4",
		"ALTER TABLE "+table+" ENABLE TRIGGER USER")
	if rep := verifyPG(t, dsn, table, "a"); !rep.OK() {
		t.Fatalf("without an anchor a cut chain still verifies: %s", rep)
	}
	rep, err = VerifyPostgres(context.Background(), dsn, "a", WithTable(table), WithAnchor(anchor))
	if err != nil || rep.Problem != ProblemTruncated || rep.FirstBad != 4 {
		t.Fatalf("cut chain against the anchor: %s, %v", rep, err)
	}
}

func TestPostgresReplicasCreateTableAtOnce(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	const replicas = 4
	var wg sync.WaitGroup
	for r := range replicas {
		wg.Go(func() {
			p, err := OpenPostgres(context.Background(), dsn, fmt.Sprintf("replica-%d", r), WithTable(table))
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close()
			if _, err := p.Append(context.Background(), "started", true); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rep := verifyPG(t, dsn, table, "")
	if !rep.OK() || rep.Chains != replicas || rep.Records != replicas {
		t.Fatalf("after %d replicas started at once: %+v", replicas, rep)
	}
}
