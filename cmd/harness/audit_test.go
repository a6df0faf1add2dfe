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
	"github.com/harness-runtime/harness/sanitize"
)

// auditLog writes a log of n records (with opts) and returns its path and
// content.
func auditLog(t *testing.T, n int, opts ...audit.Option) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.OpenJSONL(path, append([]audit.Option{audit.WithInstance("cli-test")}, opts...)...)
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

// isolateKey points the default key path at an empty temporary directory
// and returns that path, so no test reads the machine's own key.
func isolateKey(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	return filepath.Join(dir, "harness", "hmac.key")
}

func TestAuditVerifyCommand(t *testing.T) {
	isolateKey(t)
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
	isolateKey(t)
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
	isolateKey(t)
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

// keyedAuditLog writes a log of n records (keyed when opts give a key) and returns its
// path and lines.
func keyedAuditLog(t *testing.T, n int, opts ...audit.Option) (string, [][]byte) {
	t.Helper()
	path, data := auditLog(t, n, opts...)
	return path, bytes.SplitAfter(data, []byte("\n"))[:n]
}

// TestAuditVerifyKeyed: the command finds the installation's key where
// Harness keeps it (or at --key-path), verifies a keyed log with it, and
// names the first bad record of every rewrite made without it.
func TestAuditVerifyKeyed(t *testing.T) {
	keyPath := isolateKey(t)
	key, err := sanitize.LoadOrCreateKey(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	id, err := audit.KeyID(key)
	if err != nil {
		t.Fatal(err)
	}
	otherKey := bytes.Repeat([]byte{9}, 32)
	good, L := keyedAuditLog(t, 4, audit.WithKey(key))
	join := func(parts ...[]byte) string { return writeTemp(t, bytes.Join(parts, nil)) }
	// Rewrites by a writer without the key: the same events, written as a
	// fresh chain unkeyed or under a key of its own.
	_, unkeyedL := keyedAuditLog(t, 4)
	_, otherL := keyedAuditLog(t, 4, audit.WithKey(otherKey))
	legacy, _ := keyedAuditLog(t, 3)
	dir := t.TempDir()
	linkedLog := filepath.Join(dir, "linked.jsonl")
	if err := os.Symlink(good, linkedLog); err != nil {
		t.Fatal(err)
	}
	linkedKey := filepath.Join(dir, "linked.key")
	if err := os.Symlink(keyPath, linkedKey); err != nil {
		t.Fatal(err)
	}
	openKey := filepath.Join(dir, "open.key")
	if err := os.WriteFile(openKey, key, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(openKey, 0o644)
	keyCopy := filepath.Join(dir, "copy.key")
	if err := os.WriteFile(keyCopy, key, 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name       string
		args       []string
		code       int
		stdout     string
		stderrPart string
	}{
		{"keyed log, key where Harness keeps it", []string{good}, 0, "ok: 4 records, head seq 4 hash ", ""},
		{"keyed log, --key-path", []string{good, "--key-path", keyCopy}, 0, "ok: 4 records", ""},
		{"edited record", []string{join(L[0], bytes.Replace(L[1], []byte(`"i":1`), []byte(`"i":7`), 1), L[2])}, 1, "bad: seq 2 (line 2): hash_mismatch: ", ""},
		{"removed record", []string{join(L[0], L[2], L[3])}, 1, "bad: seq 2 (line 2): seq_mismatch: ", ""},
		{"reordered records", []string{join(L[0], L[1], L[3], L[2])}, 1, "bad: seq 3 (line 3): seq_mismatch: ", ""},
		{"re-chained without a key", []string{join(unkeyedL...)}, 1, "bad: seq 1 (line 1): unkeyed: ", ""},
		{"re-chained with another key", []string{join(otherL...)}, 1, "bad: seq 1 (line 1): wrong_key: ", ""},
		{"tail re-chained without a key", []string{join(L[0], L[1], unkeyedL[2])}, 1, "bad: seq 3 (line 3): ", ""},
		{"wrong key given", []string{good, "--key-path", writeKeyFile(t, otherKey)}, 1, "bad: seq 1 (line 1): wrong_key: ", ""},
		{"older unkeyed log", []string{legacy}, 1, "bad: seq 1 (line 1): unkeyed: ", "--allow-unkeyed"},
		{"older unkeyed log, allowed", []string{legacy, "--allow-unkeyed"}, 0, "ok: 3 records", ""},
		{"log is a symbolic link", []string{linkedLog}, 2, "", "symbolic link"},
		{"key is a symbolic link", []string{good, "--key-path", linkedKey}, 2, "", "symbolic link"},
		{"key readable by others", []string{good, "--key-path", openKey}, 2, "", "chmod 600"},
		{"key missing at --key-path", []string{good, "--key-path", filepath.Join(dir, "none.key")}, 2, "", "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runHarness(append([]string{"audit", "verify"}, tc.args...)...)
			if code != tc.code || !strings.HasPrefix(stdout, tc.stdout) || (tc.stdout == "" && stdout != "") {
				t.Errorf("exit %d, want %d\nstdout: %q, want prefix %q\nstderr: %s", code, tc.code, stdout, tc.stdout, stderr)
			}
			if !strings.Contains(stdout+stderr, tc.stderrPart) {
				t.Errorf("output %q %q, want it to contain %q", stdout, stderr, tc.stderrPart)
			}
		})
	}

	_, stdout, _ := runHarness("audit", "verify", good)
	if !strings.Contains(stdout, "(keyed, key_id "+id+")") {
		t.Errorf("a keyed log does not say it is keyed and with which key: %q", stdout)
	}
	_, stdout, _ = runHarness("audit", "verify", legacy, "--allow-unkeyed")
	if !strings.Contains(stdout, "(unkeyed: ") {
		t.Errorf("an unkeyed log does not say it is unkeyed: %q", stdout)
	}
}

// TestAuditVerifyWithoutKey: with no key anywhere, an unkeyed log verifies
// (saying it is unkeyed), a keyed one cannot be verified, and no key is
// created by verifying.
func TestAuditVerifyWithoutKey(t *testing.T) {
	keyPath := isolateKey(t)
	key := bytes.Repeat([]byte{3}, 32)
	keyed, _ := keyedAuditLog(t, 2, audit.WithKey(key))
	unkeyed, _ := keyedAuditLog(t, 2)

	code, stdout, stderr := runHarness("audit", "verify", unkeyed)
	if code != 0 || !strings.Contains(stdout, "(unkeyed: ") || !strings.Contains(stderr, "no key at "+keyPath) {
		t.Errorf("unkeyed log without a key: exit %d, %q, %q", code, stdout, stderr)
	}
	code, stdout, stderr = runHarness("audit", "verify", keyed)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "keyed") || !strings.Contains(stderr, "--key-path") {
		t.Errorf("keyed log without a key: exit %d, %q, %q", code, stdout, stderr)
	}
	if _, err := os.Lstat(keyPath); err == nil {
		t.Error("verifying created a key")
	}
	code, stdout, _ = runHarness("audit", "verify", keyed, "--key-path", writeKeyFile(t, key))
	if code != 0 || !strings.HasPrefix(stdout, "ok: 2 records") {
		t.Errorf("keyed log with --key-path: exit %d, %q", code, stdout)
	}
}

func TestAuditVerifyKeyedPostgres(t *testing.T) {
	isolateKey(t)
	dsn := testkit.Postgres(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	table := "harness_audit_cli_key_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	t.Cleanup(func() {
		if conn, err := pgx.Connect(ctx, dsn); err == nil {
			conn.Exec(ctx, "DROP TABLE IF EXISTS "+table)
			conn.Close(ctx)
		}
	})
	key := bytes.Repeat([]byte{5}, 32)
	p, err := audit.OpenPostgres(ctx, dsn, "keyed", audit.WithTable(table), audit.WithKey(key))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := p.Append(ctx, map[string]any{"i": i}, true); err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	kp := writeKeyFile(t, key)
	code, stdout, stderr := runHarness("audit", "verify", dsn, "--table", table, "--key-path", kp)
	if code != 0 || !strings.HasPrefix(stdout, "ok: 3 records") || !strings.Contains(stdout, "keyed, key_id") {
		t.Fatalf("keyed chain: exit %d, %q %q", code, stdout, stderr)
	}
	code, _, stderr = runHarness("audit", "verify", dsn, "--table", table)
	if code != 2 || !strings.Contains(stderr, "--key-path") {
		t.Fatalf("keyed chain without a key: exit %d, %q", code, stderr)
	}
	code, stdout, _ = runHarness("audit", "verify", dsn, "--table", table, "--key-path", writeKeyFile(t, bytes.Repeat([]byte{6}, 32)))
	if code != 1 || !strings.Contains(stdout, "wrong_key") {
		t.Fatalf("keyed chain with another key: exit %d, %q", code, stdout)
	}
}

// writeKeyFile stores key in a private file and returns its path.
func writeKeyFile(t *testing.T, key []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hmac.key")
	if err := os.WriteFile(path, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
