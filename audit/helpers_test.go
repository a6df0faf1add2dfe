package audit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// fixedClock returns a clock that starts at a fixed time and ticks one
// millisecond per call, so records are reproducible.
func fixedClock() func() time.Time {
	t := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Millisecond)
		return t
	}
}

// sampleEvents exercise the encoding: numbers, unicode, nesting, escapes.
var sampleEvents = []any{
	map[string]any{"kind": "pre_action", "action": "workspace_read_file", "input": map[string]any{"path": "src/main.go"}},
	map[string]any{"kind": "post_action", "latency_ms": 0.25, "status": "ok", "payload_keys": []any{"content", "size"}},
	"a plain string with \"quotes\", a tab\t and ünïcödé \u2028",
	[]any{1, 2.5, -3e21, true, nil},
	map[string]any{"big": 12345678901234, "nested": map[string]any{"z": 1, "a": []any{map[string]any{"b": false}}}},
	nil,
}

// writeLog writes n records to a new log in a temporary directory and
// returns its path and its lines (each with its newline).
func writeLog(t testing.TB, n int) (string, [][]byte) {
	t.Helper()
	return writeLogAs(t, "test-host", n)
}

// writeLogLines is writeLog for another instance name, lines only.
func writeLogLines(t testing.TB, instance string, n int) [][]byte {
	t.Helper()
	_, lines := writeLogAs(t, instance, n)
	return lines
}

func writeLogAs(t testing.TB, instance string, n int) (string, [][]byte) {
	t.Helper()
	return writeLogWith(t, n, WithInstance(instance))
}

// testKey and otherKey are installation keys as sanitize.LoadOrCreateKey
// makes them.
var (
	testKey  = bytes.Repeat([]byte{0x5a, 0x17, 0xc3, 0x88}, 8)
	otherKey = bytes.Repeat([]byte{0x01, 0x9e, 0x44, 0xd2}, 8)
)

// writeKeyedLog is writeLog with every record keyed under testKey.
func writeKeyedLog(t testing.TB, n int) (string, [][]byte) {
	t.Helper()
	return writeLogWith(t, n, WithInstance("test-host"), WithKey(testKey))
}

// writeLogWith writes n records with opts (after a fixed clock) to a new
// log in a temporary directory and returns its path and its lines.
func writeLogWith(t testing.TB, n int, opts ...Option) (string, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := OpenJSONL(path, append([]Option{WithClock(fixedClock())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(context.Background(), sampleEvents[i%len(sampleEvents)], false); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, bytes.SplitAfter(data, []byte("\n"))[:n]
}

func verifyBytes(t testing.TB, data []byte) Report {
	t.Helper()
	rep, err := VerifyJSONL(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("VerifyJSONL: %v", err)
	}
	return rep
}

func readAll(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func verifyFile(t testing.TB, path string) Report {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return verifyBytes(t, data)
}

func randomHex(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[:])
}

// testTable returns a table name unique to this run, dropped at the end.
func testTable(t testing.TB, dsn string) string {
	t.Helper()
	name := "harness_audit_test_" + randomHex(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Errorf("drop %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+name); err != nil {
			t.Errorf("drop %s: %v", name, err)
		}
	})
	return name
}

// adminExec runs SQL as the test database's (super)user.
func adminExec(t testing.TB, dsn string, sqls ...string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, s := range sqls {
		if _, err := conn.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
