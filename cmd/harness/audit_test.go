package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/internal/testkit"
)

// auditLog writes a log of n records and returns its path and content.
func auditLog(t *testing.T, n int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.OpenJSONL(path, audit.WithInstance("cli-test"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := l.Append(context.Background(), map[string]any{"kind": "pre_action", "i": i}, false); err != nil {
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
	return path, data
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runHarness(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = dispatch(context.Background(), args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
	return code, out.String(), errb.String()
}

func TestAuditVerifyCommand(t *testing.T) {
	good, data := auditLog(t, 4)
	lines := bytes.SplitAfter(data, []byte("\n"))
	edited := writeTemp(t, bytes.Replace(data, []byte(`"i":2`), []byte(`"i":9`), 1))
	deleted := writeTemp(t, bytes.Join([][]byte{lines[0], lines[2], lines[3]}, nil))
	reordered := writeTemp(t, bytes.Join([][]byte{lines[0], lines[1], lines[3], lines[2]}, nil))
	torn := writeTemp(t, data[:len(data)-20])
	empty := writeTemp(t, nil)
	cut := writeTemp(t, bytes.Join(lines[:3], nil))
	goodRep, err := audit.VerifyJSONL(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("%d:%s", goodRep.LastSeq, goodRep.LastHash)
	cfg := filepath.Join(t.TempDir(), "harness.yaml")
	if err := os.WriteFile(cfg, []byte("harness:\n  audit:\n    path: "+edited+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     string // prefix of stdout
		stderrPart string
	}{
		{"good chain", []string{"audit", "verify", good}, 0, "ok: 4 records, head seq 4 hash ", ""},
		{"flags after the file", []string{"audit", "verify", good, "--json"}, 0, `{"records":4,`, ""},
		{"edited record", []string{"audit", "verify", edited}, 1, "bad: seq 3 (line 3): hash_mismatch: ", ""},
		{"deleted record", []string{"audit", "verify", deleted}, 1, "bad: seq 2 (line 2): seq_mismatch: ", ""},
		{"reordered records", []string{"audit", "verify", reordered}, 1, "bad: seq 3 (line 3): seq_mismatch: ", ""},
		{"torn last line", []string{"audit", "verify", torn}, 1, "bad: seq 4 (line 4): torn_last_line: ", ""},
		{"empty log", []string{"audit", "verify", empty}, 0, "ok: 0 records", "no records"},
		{"cut log without a head", []string{"audit", "verify", cut}, 0, "ok: 3 records", ""},
		{"cut log against its head", []string{"audit", "verify", cut, "--head", head}, 1, "bad: seq 4 (line 4): truncated: ", ""},
		{"good log against its head", []string{"audit", "verify", "--head", head, good}, 0, "ok: 4 records", ""},
		{"bad head", []string{"audit", "verify", good, "--head", "4:xyz"}, 2, "", "--head"},
		{"log from --config", []string{"audit", "verify", "--config", cfg}, 1, "bad: seq 3 ", ""},
		{"missing file", []string{"audit", "verify", filepath.Join(t.TempDir(), "nope.jsonl")}, 2, "", "no such file"},
		{"no sub-command", []string{"audit"}, 2, "", "Usage: harness audit verify"},
		{"unknown sub-command", []string{"audit", "check", good}, 2, "", `unknown sub-command "check"`},
		{"two files", []string{"audit", "verify", good, good}, 2, "", "Usage:"},
		{"instance for a file", []string{"audit", "verify", good, "--instance", "x"}, 2, "", "postgres:// logs only"},
		{"unknown flag", []string{"audit", "verify", "--frobnicate", good}, 2, "", "frobnicate"},
		{"help", []string{"audit", "--help"}, 0, "", "Exit codes: 0 the chain is good"},
		{"verify help", []string{"audit", "verify", "-h"}, 0, "", "Usage: harness audit verify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runHarness(tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			if !strings.HasPrefix(stdout, tc.stdout) || (tc.stdout == "" && stdout != "") {
				t.Errorf("stdout %q, want prefix %q", stdout, tc.stdout)
			}
			if stdout != "" && strings.Count(stdout, "\n") != 1 {
				t.Errorf("stdout is not one line: %q", stdout)
			}
			if !strings.Contains(stderr, tc.stderrPart) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tc.stderrPart)
			}
		})
	}
}

func TestAuditVerifyCommandJSON(t *testing.T) {
	path, data := auditLog(t, 3)
	bad := writeTemp(t, bytes.Replace(data, []byte(`"i":1`), []byte(`"i":7`), 1))
	for _, tc := range []struct {
		path     string
		code     int
		firstBad uint64
	}{{path, 0, 0}, {bad, 1, 2}} {
		code, stdout, _ := runHarness("audit", "verify", "--json", tc.path)
		var rep audit.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("--json output %q: %v", stdout, err)
		}
		if code != tc.code || rep.FirstBad != tc.firstBad {
			t.Errorf("%s: exit %d first_bad %d, want %d and %d", filepath.Base(tc.path), code, rep.FirstBad, tc.code, tc.firstBad)
		}
	}
}

func TestAuditVerifyCommandPostgres(t *testing.T) {
	dsn := testkit.Postgres(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	table := "harness_audit_cli_test_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	t.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
			conn.Close(ctx)
		}
	})
	for _, inst := range []string{"replica-a", "replica-b"} {
		p, err := audit.OpenPostgres(ctx, dsn, inst, audit.WithTable(table))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := p.Append(ctx, map[string]any{"i": i}, true); err != nil {
				t.Fatal(err)
			}
		}
		p.Close()
	}

	code, stdout, stderr := runHarness("audit", "verify", dsn, "--table", table, "--instance", "replica-b")
	if code != 0 || !strings.HasPrefix(stdout, "ok: 3 records") {
		t.Fatalf("one chain: exit %d, %q %q", code, stdout, stderr)
	}
	code, stdout, _ = runHarness("audit", "verify", dsn, "--table", table)
	if code != 0 || !strings.HasPrefix(stdout, "ok: 6 records") {
		t.Fatalf("all chains: exit %d, %q", code, stdout)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for _, q := range []string{
		"ALTER TABLE " + table + " DISABLE TRIGGER USER",
		"DELETE FROM " + table + " WHERE instance = 'replica-b' AND seq = 2",
		"ALTER TABLE " + table + " ENABLE TRIGGER USER",
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, _ = runHarness("audit", "verify", dsn, "--table", table, "--instance", "replica-b")
	if code != 1 || !strings.HasPrefix(stdout, `bad: seq 2 (instance "replica-b", row 2): seq_mismatch`) {
		t.Fatalf("deleted row: exit %d, %q", code, stdout)
	}
	code, _, stderr = runHarness("audit", "verify", dsn, "--table", table, "--head", "3")
	if code != 2 || !strings.Contains(stderr, "--head needs --instance") {
		t.Fatalf("head without instance: exit %d, %q", code, stderr)
	}
	code, _, stderr = runHarness("audit", "verify", dsn, "--table", "no_such_table_here")
	if code != 2 || !strings.Contains(stderr, "no_such_table_here") {
		t.Fatalf("missing table: exit %d, %q", code, stderr)
	}
}
