package audit

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/internal/testkit"
)

// replayLog is what the replay tests need of a log.
type replayLog interface {
	Appender
	Replayer
}

// scriptStep is one record of a scripted run: what is appended, and which
// of the queries below it must come back for.
type scriptStep struct {
	event any
	in    []string // names of the queries that return it
}

// event builds an AHP event as the dispatcher records it.
func event(typ ahp.EventType, session, task, tenant, act string, input any) ahp.Event {
	return ahp.Event{
		Version: ahp.Version, EventID: fmt.Sprintf("ev-%s-%s-%s", typ, session, act), EventType: typ,
		SessionID: session, AgentID: "agent-1", Timestamp: time.Date(2026, 11, 23, 22, 0, 0, 0, time.UTC),
		Payload: &ahp.ActionPayload{ActionID: "a-" + act, Action: act, Tenant: tenant, TaskID: task, StepID: "step", Input: input},
	}
}

// replayQueries are the queries the script is checked against, by name.
var replayQueries = map[string]Query{
	"session":        {SessionID: "s-1"},
	"task":           {TaskID: "t-2"},
	"session+task":   {SessionID: "s-1", TaskID: "t-1"},
	"session+tenant": {SessionID: "s-1", Tenant: "acme"},
	"other":          {SessionID: "s-2"},
}

// script interleaves session s-1 (tasks t-1 then t-2, a token record, a
// record of another tenant) with other sessions and with records that
// only look like s-1's: a session "s-10" (its id starts like s-1's) and a
// session whose input holds the text "s-1".
func script() []scriptStep {
	read := map[string]any{"path": "a.txt"}
	return []scriptStep{
		{event(ahp.PreAction, "s-1", "t-1", "acme", "workspace_read_file", read), []string{"session", "session+task", "session+tenant"}},
		{event(ahp.PreAction, "s-2", "t-3", "acme", "workspace_read_file", read), []string{"other"}},
		{event(ahp.PostAction, "s-1", "t-1", "acme", "workspace_read_file", nil), []string{"session", "session+task", "session+tenant"}},
		{event(ahp.PreAction, "s-10", "t-2x", "acme", "workspace_search", map[string]any{"query": "t-2"}), nil},
		{event(ahp.PreAction, "s-3", "t-9", "acme", "workspace_read_file", map[string]any{"path": "s-1"}), nil},
		{map[string]any{"kind": "trusted_token", "event": "minted", "session_id": "s-1", "tenant": "acme", "action": "workspace_apply_patch"}, []string{"session", "session+tenant"}},
		{"a record that is not an object, naming s-1", nil},
		{map[string]any{"kind": "audit_torn_tail", "bytes": 3}, nil},
		{event(ahp.PreAction, "s-1", "t-2", "acme", "workspace_apply_patch", map[string]any{"path": "b.txt", "content": "x\u0000y \u2028 \"s-1\""}), []string{"session", "task", "session+tenant"}},
		{event(ahp.PreAction, "s-1", "t-2", "other-tenant", "workspace_read_file", read), []string{"session", "task"}},
		{event(ahp.PostAction, "s-2", "t-3", "acme", "workspace_read_file", nil), []string{"other"}},
		{event(ahp.PostAction, "s-1", "t-2", "acme", "workspace_apply_patch", nil), []string{"session", "task", "session+tenant"}},
	}
}

// runScript appends the script to l and returns, per query name, the
// records each must return, in order.
func runScript(t *testing.T, l Appender) map[string][]Record {
	t.Helper()
	want := map[string][]Record{}
	for _, s := range script() {
		rec, err := l.Append(context.Background(), s.event, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range s.in {
			want[q] = append(want[q], rec)
		}
	}
	return want
}

// replayAll pages through q with the given page size and returns every
// record, checking each page's bound.
func replayAll(t *testing.T, r Replayer, q Query) []Record {
	t.Helper()
	var all []Record
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("%+v: replay does not end", q)
		}
		page, err := r.Replay(context.Background(), q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if q.Limit > 0 && len(page.Events) > q.Limit {
			t.Fatalf("%+v: page of %d records", q, len(page.Events))
		}
		all = append(all, page.Events...)
		if page.Next == 0 {
			return all
		}
		if page.Next <= q.After {
			t.Fatalf("%+v: cursor does not move: next %d", q, page.Next)
		}
		q.After = page.Next
	}
}

func sameRecords(t *testing.T, what string, got, want []Record) {
	t.Helper()
	key := func(rs []Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, fmt.Sprintf("%s/%d/%s", r.Instance, r.Seq, r.Hash))
		}
		return out
	}
	if !slices.Equal(key(got), key(want)) {
		t.Fatalf("%s:\n got  %v\n want %v", what, key(got), key(want))
	}
	for i := range got {
		g, _ := got[i].MarshalJSON()
		w, _ := want[i].MarshalJSON()
		if string(g) != string(w) {
			t.Fatalf("%s: record %d differs from the one appended:\n got  %s\n want %s", what, i, g, w)
		}
	}
}

// checkReplay checks every query against what the script appended, with
// pages of 1, 2 and the default size.
func checkReplay(t *testing.T, r Replayer, want map[string][]Record) {
	t.Helper()
	for name, q := range replayQueries {
		for _, limit := range []int{1, 2, 0} {
			q.Limit = limit
			sameRecords(t, fmt.Sprintf("%s, limit %d", name, limit), replayAll(t, r, q), want[name])
		}
	}
}

func TestReplayJSONLScriptedSession(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path, WithKey(testKey), WithClock(fixedClock()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	want := runScript(t, l)
	if len(want["session"]) != 6 || len(want["task"]) != 3 {
		t.Fatalf("script: %d session records, %d task records", len(want["session"]), len(want["task"]))
	}
	checkReplay(t, l, want)

	// A log opened later (another process) replays the same.
	l2, err := OpenJSONL(path, WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	checkReplay(t, l2, want)
	// Records appended by the other log are seen by the first.
	rec, err := l2.Append(context.Background(), event(ahp.PreAction, "s-2", "t-3", "acme", "workspace_list", nil), false)
	if err != nil {
		t.Fatal(err)
	}
	want["other"] = append(want["other"], rec)
	checkReplay(t, l, want)
	if rep, err := VerifyJSONLFile(context.Background(), path, WithKey(testKey)); err != nil || !rep.OK() || rep.Records != len(script())+1 {
		t.Fatalf("verify after replays: %s %v", rep, err)
	}
}

func TestReplayPostgresScriptedSession(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	a := openPG(t, dsn, table, "replica-a")
	b := openPG(t, dsn, table, "replica-b")
	// The session is served by two replicas, turn about: it replays as
	// one, in the order the records were written.
	want := map[string][]Record{}
	for i, s := range script() {
		l := a
		if i%2 == 1 {
			l = b
		}
		rec, err := l.Append(context.Background(), s.event, i%3 == 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range s.in {
			want[q] = append(want[q], rec)
		}
	}
	checkReplay(t, a, want)
	checkReplay(t, b, want)
	if rep := verifyPG(t, dsn, table, ""); !rep.OK() || rep.Records != len(script()) {
		t.Fatalf("verify: %s", rep)
	}
}

// A table made before replay existed gets its columns when a log opens
// it; its old rows replay by their text, with the new ones after them,
// and the chain still verifies.
func TestReplayPostgresMigratesOldTable(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	old := openPG(t, dsn, table, "replica-a")
	steps := script()
	want := map[string][]Record{}
	add := func(l *Postgres, s scriptStep) {
		rec, err := l.Append(context.Background(), s.event, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range s.in {
			want[q] = append(want[q], rec)
		}
	}
	for _, s := range steps[:7] {
		add(old, s)
	}
	old.Close()
	// What the table looked like before: no replay columns or indexes.
	sfx := ""
	for _, ix := range old.replayIndexes() {
		sfx += ", " + ix.name
	}
	adminExec(t, dsn, `DROP INDEX `+sfx[2:],
		`ALTER TABLE `+table+` DROP COLUMN pos, DROP COLUMN replay_keys, DROP COLUMN session_id, DROP COLUMN task_id, DROP COLUMN tenant`)
	if _, err := openPG(t, dsn, table, "replica-a").Replay(context.Background(), Query{SessionID: "s-1"}); err != nil {
		t.Fatal(err)
	}
	l := openPG(t, dsn, table, "replica-a")
	for _, s := range steps[7:] {
		add(l, s)
	}
	checkReplay(t, l, want)
	if rep := verifyPG(t, dsn, table, "replica-a"); !rep.OK() || rep.Records != len(steps) {
		t.Fatalf("verify after the migration: %s", rep)
	}
}

// A table the log's role may not alter keeps working for appends;
// Replay says what is missing.
func TestReplayPostgresWithoutColumns(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	p := openPG(t, dsn, table, "replica-a")
	p.replayCols = false
	if _, err := p.Append(context.Background(), steps0(), false); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Replay(context.Background(), Query{SessionID: "s-1"}); !errors.Is(err, ErrNoReplayColumns) {
		t.Fatalf("replay without columns: %v", err)
	}
	// The row appended without keys replays by its text once they exist.
	l := openPG(t, dsn, table, "replica-a")
	page, err := l.Replay(context.Background(), Query{SessionID: "s-1"})
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("replay: %d records, %v", len(page.Events), err)
	}
}

func steps0() any { return script()[0].event }

func TestReplayBadQuery(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	long := string(make([]byte, MaxReplayID+1))
	for name, q := range map[string]Query{
		"nothing named":  {},
		"tenant only":    {Tenant: "acme"},
		"long session":   {SessionID: long},
		"nul in task":    {TaskID: "a\x00b"},
		"invalid utf-8":  {SessionID: "\xff"},
		"long tenant":    {SessionID: "s", Tenant: long},
		"negative after": {SessionID: "s", After: 0, Limit: -1},
	} {
		_, err := l.Replay(context.Background(), q)
		if name == "negative after" {
			if err != nil {
				t.Errorf("%s: a negative limit is the default: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrBadQuery) {
			t.Errorf("%s: %v, want ErrBadQuery", name, err)
		}
	}
}

func TestReplayLimitIsBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range MaxReplayLimit + 5 {
		if _, err := l.Append(context.Background(), map[string]any{"session_id": "s", "i": i}, false); err != nil {
			t.Fatal(err)
		}
	}
	for limit, want := range map[int]int{0: DefaultReplayLimit, 5000: MaxReplayLimit, 7: 7} {
		page, err := l.Replay(context.Background(), Query{SessionID: "s", Limit: limit})
		if err != nil || len(page.Events) != want || page.Next != page.Events[len(page.Events)-1].Seq {
			t.Fatalf("limit %d: %d records, next %d, %v", limit, len(page.Events), page.Next, err)
		}
	}
}

// The sparse index of a large file gives the same pages as a scan from
// the start, from any cursor.
func TestReplayJSONLMarks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 5*markEvery + 17
	var want []uint64
	for i := range n {
		s := fmt.Sprintf("s-%d", i%7)
		rec, err := l.Append(context.Background(), map[string]any{"session_id": s, "i": i}, false)
		if err != nil {
			t.Fatal(err)
		}
		if s == "s-3" {
			want = append(want, rec.Seq)
		}
	}
	seqs := func(rs []Record) []uint64 {
		var out []uint64
		for _, r := range rs {
			out = append(out, r.Seq)
		}
		return out
	}
	if got := seqs(replayAll(t, l, Query{SessionID: "s-3", Limit: 50})); !slices.Equal(got, want) {
		t.Fatalf("first replay: %d records, want %d", len(got), len(want))
	}
	l.marks.mu.Lock()
	marks := len(l.marks.marks)
	l.marks.mu.Unlock()
	if marks < 5 {
		t.Fatalf("%d marks after reading %d records", marks, n)
	}
	for _, after := range []uint64{0, 1, markEvery - 1, markEvery, markEvery + 1, 3*markEvery + 5, n - 3, n, n + 10} {
		var tail []uint64
		for _, s := range want {
			if s > after {
				tail = append(tail, s)
			}
		}
		if got := seqs(replayAll(t, l, Query{SessionID: "s-3", After: after, Limit: 1000})); !slices.Equal(got, tail) {
			t.Fatalf("after %d: %v, want %v", after, got, tail)
		}
	}
}

// A file whose seqs do not grow by one (edited) is read from the start:
// the index is not trusted.
func TestReplayJSONLEditedFileIgnoresMarks(t *testing.T) {
	var m replayMarks
	m.note(1, 0)
	m.note(markEvery+1, 100)
	if off, _ := m.start(markEvery+5, 1000); off != 100 {
		t.Fatalf("mark not used: %d", off)
	}
	if off, _ := m.start(markEvery+5, 50); off != 0 {
		t.Fatalf("truncated file: start at %d", off)
	}
	m.note(1, 0)
	m.note(markEvery+1, 100)
	m.breakIndex()
	if off, _ := m.start(markEvery+5, 1000); off != 0 {
		t.Fatalf("broken index used: %d", off)
	}
}

// A page never holds more than the bounds allow, and a replay of a large
// log resumes where the bounded scan stopped.
func TestReplayJSONLBoundedScan(t *testing.T) {
	oldScan, oldPage := replayScanBytes, replayPageBytes
	replayScanBytes, replayPageBytes = 4<<10, 2<<10
	t.Cleanup(func() { replayScanBytes, replayPageBytes = oldScan, oldPage })
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var want []uint64
	for i := range 300 {
		s := "busy"
		if i%50 == 0 {
			s = "rare"
		}
		rec, err := l.Append(context.Background(), map[string]any{"session_id": s, "pad": fmt.Sprintf("%0100d", i)}, false)
		if err != nil {
			t.Fatal(err)
		}
		if s == "rare" {
			want = append(want, rec.Seq)
		}
	}
	page, err := l.Replay(context.Background(), Query{SessionID: "rare"})
	if err != nil || page.Next == 0 || len(page.Events) > 1 {
		t.Fatalf("bounded scan: %d records, next %d, %v", len(page.Events), page.Next, err)
	}
	var got []uint64
	for _, r := range replayAll(t, l, Query{SessionID: "rare"}) {
		got = append(got, r.Seq)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("resumed scans: %v, want %v", got, want)
	}
	page, err = l.Replay(context.Background(), Query{SessionID: "busy", Limit: 1000})
	if err != nil || len(page.Events) == 0 || len(page.Events) > 12 || page.Next == 0 {
		t.Fatalf("page bytes bound: %d records, next %d, %v", len(page.Events), page.Next, err)
	}
}

// A last line still being written is not a record yet; a line that is
// not a record is skipped; a cancelled context stops the scan.
func TestReplayJSONLTailAndJunk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rec, err := l.Append(context.Background(), map[string]any{"session_id": "s"}, false)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("not a record \"s\"\n{\"seq\":2,\"event\":{\"session_id\":\"s\"}") // junk, then a torn line
	f.Close()
	page, err := l.Replay(context.Background(), Query{SessionID: "s"})
	if err != nil || len(page.Events) != 1 || page.Events[0].Hash != rec.Hash || page.Next != 0 {
		t.Fatalf("replay: %+v, %v", page, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Replay(ctx, Query{SessionID: "s"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled replay: %v", err)
	}
	l.Close()
	if _, err := l.Replay(context.Background(), Query{SessionID: "s"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("replay after close: %v", err)
	}
}

// keysOf reads the keys from where the records put them.
func TestKeysOf(t *testing.T) {
	for name, tc := range map[string]struct {
		event any
		want  recordKeys
	}{
		"ahp event":   {event(ahp.PreAction, "s", "t", "acme", "x", nil), recordKeys{"s", "t", "acme"}},
		"token":       {map[string]any{"session_id": "s", "tenant": "acme"}, recordKeys{session: "s", tenant: "acme"}},
		"payload":     {map[string]any{"payload": map[string]any{"session_id": "s", "task_id": "t"}}, recordKeys{session: "s", task: "t"}},
		"not object":  {[]any{"session_id", "s"}, recordKeys{}},
		"wrong types": {map[string]any{"session_id": 5, "payload": "x", "task_id": []any{"t"}}, recordKeys{}},
		"own first":   {map[string]any{"session_id": "a", "payload": map[string]any{"session_id": "b"}}, recordKeys{session: "a"}},
	} {
		ev, err := action.Canonical(tc.event)
		if err != nil {
			t.Fatal(err)
		}
		if got := keysOf(ev); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

// A table in a schema of its own gets its replay indexes in that schema.
func TestReplayPostgresSchemaQualifiedTable(t *testing.T) {
	dsn := testkit.Postgres(t)
	schema := "harness_replay_" + randomHex(t)
	adminExec(t, dsn, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { adminExec(t, dsn, "DROP SCHEMA "+schema+" CASCADE") })
	p := openPG(t, dsn, schema+".audit", "replica-a")
	want := runScript(t, p)
	checkReplay(t, p, want)
	// Opened again, nothing is missing and nothing is added twice.
	cols, idx, err := p.missingReplay(context.Background(), p.conn)
	if err != nil || len(cols) != 0 || len(idx) != 0 {
		t.Fatalf("after open: missing columns %v, indexes %v, %v", cols, idx, err)
	}
	checkReplay(t, openPG(t, dsn, schema+".audit", "replica-b"), want)
}

// A role that may only read and append to an old table opens it, appends
// and refuses to replay; once the owner has added the replay columns the
// role goes on appending (the migration lets it draw positions), and
// every record replays.
func TestReplayPostgresAppendingRole(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := testTable(t, dsn)
	owner := openPG(t, dsn, table, "replica-a")
	steps := script()
	want := map[string][]Record{}
	add := func(l *Postgres, s scriptStep) {
		t.Helper()
		rec, err := l.Append(context.Background(), s.event, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range s.in {
			want[q] = append(want[q], rec)
		}
	}
	add(owner, steps[0])
	owner.Close()
	var names []string
	for _, ix := range owner.replayIndexes() {
		names = append(names, ix.name)
	}
	adminExec(t, dsn, `DROP INDEX `+strings.Join(names, ", "),
		`ALTER TABLE `+table+` DROP COLUMN pos, DROP COLUMN replay_keys, DROP COLUMN session_id, DROP COLUMN task_id, DROP COLUMN tenant`)
	role := "harness_appender_" + randomHex(t)
	adminExec(t, dsn, `CREATE ROLE `+role+` LOGIN`, `GRANT SELECT, INSERT ON `+table+` TO `+role)
	t.Cleanup(func() { adminExec(t, dsn, `DROP OWNED BY `+role, `DROP ROLE `+role) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	roleDSN := u.String()

	appender := openPG(t, roleDSN, table, "replica-a")
	add(appender, steps[1])
	if _, err := appender.Replay(context.Background(), Query{SessionID: "s-1"}); !errors.Is(err, ErrNoReplayColumns) {
		t.Fatalf("replay without the columns: %v", err)
	}
	migrated := openPG(t, dsn, table, "replica-b") // the owner
	add(appender, steps[2])                        // still appending, now with pos
	add(migrated, steps[5])
	add(openPG(t, roleDSN, table, "replica-c"), steps[8])
	checkReplay(t, migrated, want)
	if rep := verifyPG(t, dsn, table, ""); !rep.OK() || rep.Records != 5 {
		t.Fatalf("verify: %s", rep)
	}
}
