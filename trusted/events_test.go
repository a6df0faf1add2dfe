package trusted

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/testkit"
)

// Keys of the event tests: auditors, one bound to each tenant.
const (
	keyAuditor   = "test-key-auditor-0005" // agent:audit
	keyAuditorT1 = "test-key-auditor-t1"   // agent:audit, tenant t1
	keyAuditorT2 = "test-key-auditor-t2"   // agent:audit, tenant t2
)

func withAuditors(cfg *config.Config) {
	cfg.Harness.Auth.Keys = append(cfg.Harness.Auth.Keys,
		config.AuthKey{Principal: "auditor", SHA256: sha(keyAuditor), Permissions: []string{"agent:audit"}},
		config.AuthKey{Principal: "auditor-t1", Tenant: "t1", SHA256: sha(keyAuditorT1), Permissions: []string{"agent:audit"}},
		config.AuthKey{Principal: "auditor-t2", Tenant: "t2", SHA256: sha(keyAuditorT2), Permissions: []string{"agent:audit"}},
	)
}

// eventsServer is a server that serves only the event routes from src,
// with the fixture's keys and the auditors'. It is built apart from
// NewServer so that these tests do not depend on how NewServer is given
// its EventSource.
func eventsServer(t *testing.T, src EventSource) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.Harness.Auth.Keys = []config.AuthKey{
		{Principal: "alice", SHA256: sha(keyAlice), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "bob", SHA256: sha(keyBob), Permissions: []string{"agent:execute"}},
		{Principal: "root", SHA256: sha(keyAdmin), Permissions: []string{"admin"}},
	}
	withAuditors(cfg)
	keys, err := NewKeys(cfg.Harness.Auth.Keys)
	require.NoError(t, err)
	s := &Server{keys: keys, maxBody: DefaultMaxBodyBytes, metrics: NewMetrics(), log: slog.New(slog.DiscardHandler), mux: http.NewServeMux()}
	s.registerEventRoutes(src)
	return s
}

// serveEvents serves eventsServer(src) and returns its URL.
func serveEvents(t *testing.T, src EventSource) string {
	t.Helper()
	ts := httptest.NewServer(eventsServer(t, src))
	t.Cleanup(ts.Close)
	return ts.URL
}

// replayFixture is a fixture to run actions on, and the URL of the event
// routes over its audit log (opened a second time).
func replayFixture(t *testing.T, hub *audit.Hub) (*fixture, string) {
	t.Helper()
	f := newFixture(t, fixtureOpts{store: NewMemoryStore(0), cfg: withAuditors})
	rl, err := audit.OpenJSONL(f.AuditPath)
	require.NoError(t, err)
	t.Cleanup(func() { rl.Close() })
	return f, serveEvents(t, EventSource{Replay: rl, Hub: hub})
}

func echo(session, task, text string) map[string]any {
	return map[string]any{"name": "echo", "input": map[string]any{"text": text}, "session_id": session, "task_id": task}
}

// getEvents reads every page of a replay route and returns the records'
// events, checking that each page keeps to the limit.
func getEvents(t *testing.T, url, key string, limit int) []map[string]any {
	t.Helper()
	var out []map[string]any
	after := uint64(0)
	for pages := 0; pages < 100; pages++ {
		st, body := call(t, "GET", fmt.Sprintf("%s?after=%d&limit=%d", url, after, limit), key, nil)
		require.Equal(t, 200, st, "%v", body)
		evs, ok := body["events"].([]any)
		require.True(t, ok, "events is a list: %v", body)
		require.LessOrEqual(t, len(evs), limit)
		for _, e := range evs {
			rec := e.(map[string]any)
			for _, k := range []string{"seq", "time", "instance", "prev_hash", "hash"} {
				require.Contains(t, rec, k)
			}
			out = append(out, rec)
		}
		next := uint64(body["next"].(float64))
		if next == 0 {
			return out
		}
		require.Greater(t, next, after)
		after = next
	}
	t.Fatal("replay does not end")
	return nil
}

func TestSessionAndTaskEventsReplayInOrder(t *testing.T) {
	f, ev := replayFixture(t, nil)
	script := []map[string]any{
		echo("sess-A", "task-1", "one"),
		echo("sess-B", "task-9", "elsewhere"),
		echo("sess-A", "task-1", "two"),
		echo("sess-A10", "task-1x", "a session whose id starts like sess-A"),
		echo("sess-A", "task-2", "three"),
	}
	for _, a := range script {
		st, body := call(t, "POST", f.URL+"/v1/actions", keyBob, a)
		require.Equal(t, 200, st, "%v", body)
		require.Equal(t, "ok", body["status"], "%v", body)
	}
	type step struct{ typ, text, task string }
	summary := func(recs []map[string]any) []step {
		var out []step
		lastSeq := 0.0
		for _, r := range recs {
			seq := r["seq"].(float64)
			require.Greater(t, seq, lastSeq, "records in the order of the log")
			lastSeq = seq
			ev := r["event"].(map[string]any)
			pl := ev["payload"].(map[string]any)
			text := ""
			if in, ok := pl["input"].(map[string]any); ok {
				text, _ = in["text"].(string)
			}
			out = append(out, step{ev["event_type"].(string), text, pl["task_id"].(string)})
		}
		return out
	}
	want := []step{
		{"pre_action", "one", "task-1"}, {"post_action", "", "task-1"},
		{"pre_action", "two", "task-1"}, {"post_action", "", "task-1"},
		{"pre_action", "three", "task-2"}, {"post_action", "", "task-2"},
	}
	for _, limit := range []int{1, 2, 1000} {
		require.Equal(t, want, summary(getEvents(t, ev+"/v1/sessions/sess-A/events", keyAuditor, limit)), "limit %d", limit)
	}
	require.Equal(t, want[:4], summary(getEvents(t, ev+"/v1/tasks/task-1/events", keyAuditor, 3)))
	require.Equal(t, want[4:], summary(getEvents(t, ev+"/v1/tasks/task-2/events", keyAdmin, 10)), "admin reads events too")
	require.Empty(t, getEvents(t, ev+"/v1/sessions/nobody/events", keyAuditor, 10))

	// The default page and a cursor past the end.
	st, body := call(t, "GET", ev+"/v1/sessions/sess-A/events", keyAuditor, nil)
	require.Equal(t, 200, st)
	require.Len(t, body["events"], 6)
	require.EqualValues(t, 0, body["next"])
	st, body = call(t, "GET", ev+"/v1/sessions/sess-A/events?after=1000000", keyAuditor, nil)
	require.Equal(t, 200, st)
	require.Equal(t, []any{}, body["events"])
}

// A key bound to a tenant replays only its tenant's records.
func TestEventsReplayKeepsToTheKeysTenant(t *testing.T) {
	f, ev := replayFixture(t, nil)
	for _, k := range []string{keyErin1, keyErin2} {
		st, body := call(t, "POST", f.URL+"/v1/actions", k, echo("shared", "", "x"))
		require.Equal(t, 200, st, "%v", body)
	}
	tenants := func(key string) []string {
		var out []string
		for _, r := range getEvents(t, ev+"/v1/sessions/shared/events", key, 100) {
			out = append(out, r["event"].(map[string]any)["payload"].(map[string]any)["tenant"].(string))
		}
		return out
	}
	require.Equal(t, []string{"t1", "t1"}, tenants(keyAuditorT1))
	require.Equal(t, []string{"t2", "t2"}, tenants(keyAuditorT2))
	require.Equal(t, []string{"t1", "t1", "t2", "t2"}, tenants(keyAuditor))
}

func TestEventsRoutesRefuseBadRequests(t *testing.T) {
	url := serveEvents(t, EventSource{Replay: noReplay{}, Hub: audit.NewHub(audit.HubOptions{})})
	long := strings.Repeat("x", audit.MaxReplayID+1)
	for _, tc := range []struct {
		name, method, path, key string
		status                  int
		code                    string
	}{
		{"no key", "GET", "/v1/sessions/s/events", "", 401, CodeUnauthorized},
		{"no key, stream", "GET", "/v1/events", "", 401, CodeUnauthorized},
		{"wrong permission", "GET", "/v1/sessions/s/events", keyAlice, 403, CodeForbidden},
		{"wrong permission, task", "GET", "/v1/tasks/t/events", keyBob, 403, CodeForbidden},
		{"wrong permission, stream", "GET", "/v1/events", keyAlice, 403, CodeForbidden},
		{"wrong method", "POST", "/v1/sessions/s/events", keyAuditor, 405, CodeMethodNotAllowed},
		{"limit 0", "GET", "/v1/sessions/s/events?limit=0", keyAuditor, 400, "invalid_input"},
		{"limit too large", "GET", "/v1/sessions/s/events?limit=1001", keyAuditor, 400, "invalid_input"},
		{"limit not a number", "GET", "/v1/tasks/t/events?limit=ten", keyAuditor, 400, "invalid_input"},
		{"negative cursor", "GET", "/v1/sessions/s/events?after=-1", keyAuditor, 400, "invalid_input"},
		{"cursor not a number", "GET", "/v1/sessions/s/events?after=abc", keyAuditor, 400, "invalid_input"},
		{"id too long", "GET", "/v1/sessions/" + long + "/events", keyAuditor, 400, "invalid_input"},
		{"id not utf-8", "GET", "/v1/tasks/%ff/events", keyAuditor, 400, "invalid_input"},
		{"id with nul", "GET", "/v1/sessions/a%00b/events", keyAuditor, 400, "invalid_input"},
		{"stream filter too long", "GET", "/v1/events?session_id=" + long, keyAuditor, 400, "invalid_input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := call(t, tc.method, url+tc.path, tc.key, nil)
			require.Equal(t, tc.status, st, "%v", body)
			require.Equal(t, tc.code, errCode(body))
		})
	}
}

func TestEventsRoutesWithoutASource(t *testing.T) {
	url := serveEvents(t, EventSource{})
	for _, p := range []string{"/v1/sessions/s/events", "/v1/tasks/t/events", "/v1/events"} {
		st, body := call(t, "GET", url+p, keyAuditor, nil)
		require.Equal(t, 404, st, "%s: %v", p, body)
		require.Equal(t, "not_found", errCode(body))
	}
}

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	id, event, data string
	comment         bool
}

// sseReader reads a stream's events on its own goroutine.
type sseReader struct {
	events chan sseEvent
	resp   *http.Response
}

func openStream(t *testing.T, ctx context.Context, url, key string) *sseReader {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	r := &sseReader{events: make(chan sseEvent, 100), resp: resp}
	go func() {
		defer close(r.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				r.events <- ev
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ev.comment = true
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return r
}

// next returns the next event that is not a comment, or fails.
func (r *sseReader) next(t *testing.T) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-r.events:
			if !ok {
				t.Fatal("stream ended")
			}
			if !ev.comment {
				return ev
			}
		case <-timeout:
			t.Fatal("no event within 10s")
		}
	}
}

// ended waits for the stream to end.
func (r *sseReader) ended(t *testing.T) []sseEvent {
	t.Helper()
	var rest []sseEvent
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-r.events:
			if !ok {
				return rest
			}
			if !ev.comment {
				rest = append(rest, ev)
			}
		case <-timeout:
			t.Fatal("stream did not end")
		}
	}
}

// The live stream sends each record the log appends, id = seq, filtered
// by session and by the key's tenant, and ends when the client goes.
func TestEventsStreamLive(t *testing.T) {
	hub := audit.NewHub(audit.HubOptions{})
	log, err := audit.OpenJSONL(filepath.Join(t.TempDir(), "live.jsonl"), audit.WithHub(hub))
	require.NoError(t, err)
	defer log.Close()
	url := serveEvents(t, EventSource{Hub: hub, KeepAlive: 20 * time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	all := openStream(t, ctx, url+"/v1/events", keyAuditor)
	one := openStream(t, ctx, url+"/v1/events?session_id=s-2", keyAuditor)
	t1 := openStream(t, ctx, url+"/v1/events", keyAuditorT1)
	require.Eventually(t, func() bool { return hub.Subscribers() == 3 }, 5*time.Second, 5*time.Millisecond)

	events := []map[string]any{
		{"session_id": "s-1", "tenant": "t1", "text": "line\nbreak and \u2028"},
		{"session_id": "s-2", "tenant": "t2"},
		{"session_id": "s-2", "payload": map[string]any{"tenant": "t1"}},
	}
	for _, e := range events {
		_, err := log.Append(context.Background(), e, false)
		require.NoError(t, err)
	}
	check := func(r *sseReader, seqs ...int) {
		t.Helper()
		for _, seq := range seqs {
			ev := r.next(t)
			require.Equal(t, fmt.Sprint(seq), ev.id)
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(ev.data), &rec), ev.data)
			require.EqualValues(t, seq, rec["seq"])
			require.Equal(t, events[seq-1]["session_id"], rec["event"].(map[string]any)["session_id"])
		}
	}
	check(all, 1, 2, 3)
	check(one, 2, 3)
	check(t1, 1, 3)
	// An idle stream gets keep-alive comments.
	select {
	case ev := <-all.events:
		require.True(t, ev.comment, "%+v", ev)
	case <-time.After(5 * time.Second):
		t.Fatal("no keep-alive")
	}
	cancel()
	require.Eventually(t, func() bool { return hub.Subscribers() == 0 }, 5*time.Second, 5*time.Millisecond, "streams of gone clients end")
}

func TestEventsStreamEnds(t *testing.T) {
	hub := audit.NewHub(audit.HubOptions{MaxSubscribers: 2})
	url := serveEvents(t, EventSource{Hub: hub, MaxStream: 300 * time.Millisecond})

	short := openStream(t, context.Background(), url+"/v1/events", keyAuditor)
	require.Empty(t, short.ended(t), "a stream ends after MaxStream")

	a := openStream(t, context.Background(), url+"/v1/events?task_id=t", keyAuditor)
	_ = openStream(t, context.Background(), url+"/v1/events", keyAuditor)
	require.Eventually(t, func() bool { return hub.Subscribers() == 2 }, 5*time.Second, 5*time.Millisecond)
	st, body := call(t, "GET", url+"/v1/events", keyAuditor, nil)
	require.Equal(t, 429, st, "%v", body)
	require.Equal(t, CodeRateLimited, errCode(body))

	hub.Close() // the server shuts down
	require.Empty(t, a.ended(t))
	st, body = call(t, "GET", url+"/v1/events", keyAuditor, nil)
	require.Equal(t, 503, st, "%v", body)
}

// A stream outlives the server's read timeout (harness serve sets one).
func TestEventsStreamOutlivesReadTimeout(t *testing.T) {
	hub := audit.NewHub(audit.HubOptions{})
	ts := httptest.NewUnstartedServer(eventsServer(t, EventSource{Hub: hub, KeepAlive: time.Hour}))
	ts.Config.ReadTimeout = 200 * time.Millisecond
	ts.Start()
	defer ts.Close()
	defer hub.Close() // first: the stream ends, then the server closes
	r := openStream(t, context.Background(), ts.URL+"/v1/events", keyAuditor)
	require.Eventually(t, func() bool { return hub.Subscribers() == 1 }, 5*time.Second, 5*time.Millisecond)
	time.Sleep(600 * time.Millisecond)
	hub.Publish(audit.Record{Seq: 7, Event: json.RawMessage(`{"k":1}`), PrevHash: audit.ZeroHash})
	require.Equal(t, "7", r.next(t).id)
}

// blockingWriter is a client that stops reading: its writes wait until
// it is released.
type blockingWriter struct {
	header  http.Header
	mu      sync.Mutex
	buf     strings.Builder
	release chan struct{}
	writes  chan struct{}
}

func (w *blockingWriter) Header() http.Header { return w.header }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Write(b []byte) (int, error) {
	select {
	case w.writes <- struct{}{}:
	default:
	}
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}
func (w *blockingWriter) Flush() {}

// A client that reads too slowly is dropped by the hub: the publisher
// never waits for it, and its stream ends with a "dropped" event.
func TestEventsStreamDropsSlowClient(t *testing.T) {
	hub := audit.NewHub(audit.HubOptions{Buffer: 2})
	srv := eventsServer(t, EventSource{Hub: hub})
	w := &blockingWriter{header: http.Header{}, release: make(chan struct{}), writes: make(chan struct{}, 1)}
	req := httptest.NewRequest("GET", "/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+keyAuditor)
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeHTTP(w, req)
	}()
	<-w.writes // the stream's first write waits on the client
	published := make(chan struct{})
	go func() {
		defer close(published)
		for i := range 50 {
			hub.Publish(audit.Record{Seq: uint64(i + 1), Event: json.RawMessage(`{}`), PrevHash: audit.ZeroHash})
		}
	}()
	select {
	case <-published:
	case <-time.After(10 * time.Second):
		t.Fatal("Publish waited for a client that does not read")
	}
	require.EqualValues(t, 1, hub.Dropped())
	close(w.release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the dropped stream did not end")
	}
	out := w.buf.String()
	require.Contains(t, out, "id: 1\n")
	require.Contains(t, out, "id: 2\n")
	require.NotContains(t, out, "id: 3\n", "only what the buffer held")
	require.True(t, strings.HasSuffix(out, "\n\n") && strings.Contains(out, "event: dropped\n"), out)
}

// The same replay over HTTP from a PostgreSQL audit table that two
// replicas write: one session, in the order written, page by page.
func TestSessionEventsReplayFromPostgres(t *testing.T) {
	dsn := testkit.Postgres(t)
	table := fmt.Sprintf("harness_audit_events_test_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+table)
			conn.Close(context.Background())
		}
	})
	var logs []*audit.Postgres
	for _, inst := range []string{"replica-a", "replica-b"} {
		l, err := audit.OpenPostgres(context.Background(), dsn, inst, audit.WithTable(table))
		require.NoError(t, err)
		t.Cleanup(func() { l.Close() })
		logs = append(logs, l)
	}
	var want []string
	for i := range 7 {
		session := "sess-pg"
		if i%3 == 2 {
			session = "other"
		}
		ev := map[string]any{"event_type": "pre_action", "session_id": session, "payload": map[string]any{"step_id": fmt.Sprint(i), "task_id": "task-pg"}}
		rec, err := logs[i%2].Append(context.Background(), ev, false)
		require.NoError(t, err)
		if session == "sess-pg" {
			want = append(want, fmt.Sprintf("%s/%d", rec.Instance, rec.Seq))
		}
	}
	url := serveEvents(t, EventSource{Replay: logs[0]})
	var got []string
	for _, r := range getEvents(t, url+"/v1/sessions/sess-pg/events", keyAuditor, 2) {
		got = append(got, fmt.Sprintf("%s/%.0f", r["instance"], r["seq"]))
	}
	require.Equal(t, want, got)
	require.Len(t, getEvents(t, url+"/v1/tasks/task-pg/events", keyAuditor, 3), 7)
}

// noReplay is a Replayer with nothing to replay.
type noReplay struct{}

func (noReplay) Replay(context.Context, audit.Query) (audit.Page, error) { return audit.Page{}, nil }
