package audit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/harness-runtime/harness/internal/testkit"
)

// forger rewrites records as someone who can write the log would: it
// knows the format, and holds some key or none.
type forger struct {
	name  string
	keyID string                 // the key_id it writes ("" unkeyed)
	mac   func(in []byte) string // how it computes hashes
}

func shaHex(in []byte) string {
	sum := sha256.Sum256(in)
	return hex.EncodeToString(sum[:])
}

// forgers are the ways to rewrite a keyed chain without its key: with no
// key (a valid unkeyed chain), with a key of one's own (and its key_id, or
// claiming ours), with SHA-256 under our key_id, and with the installation
// key used directly, as the sanitizer's markers are computed.
func forgers(t testing.TB) []forger {
	t.Helper()
	ours, err := newChainKey(testKey)
	if err != nil {
		t.Fatal(err)
	}
	other, err := newChainKey(otherKey)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(in []byte) string {
		m := hmac.New(sha256.New, testKey)
		m.Write(in)
		return hex.EncodeToString(m.Sum(nil))
	}
	return []forger{
		{"no key: a valid unkeyed chain", "", shaHex},
		{"another key", other.id, other.sum},
		{"another key claiming our key_id", ours.id, other.sum},
		{"sha-256 claiming our key_id", ours.id, shaHex},
		{"the installation key used directly", ours.id, raw},
	}
}

// forge returns lines with the records from index from on sealed again by
// f, numbered by their place and each linked to the one before, after edit
// (when not nil) has changed the record at index from.
func forge(t testing.TB, lines [][]byte, from int, f forger, edit func(ev []byte) []byte) [][]byte {
	t.Helper()
	out := append([][]byte(nil), lines[:from]...)
	prev := ZeroHash
	if from > 0 {
		var r Record
		if err := json.Unmarshal(bytes.TrimSuffix(lines[from-1], []byte("\n")), &r); err != nil {
			t.Fatal(err)
		}
		prev = r.Hash
	}
	for i := from; i < len(lines); i++ {
		var r Record
		if err := json.Unmarshal(bytes.TrimSuffix(lines[i], []byte("\n")), &r); err != nil {
			t.Fatal(err)
		}
		ev, err := canonicalEvent(r.Event)
		if err != nil {
			t.Fatal(err)
		}
		if i == from && edit != nil {
			ev = edit(ev)
		}
		h := header{seq: uint64(i + 1), ts: formatTime(r.Time), instance: r.Instance, keyID: f.keyID, prevHash: prev}
		sum := f.mac(hashInput(h, ev))
		out = append(out, append(encodeRecord(h, ev, sum), '\n'))
		prev = sum
	}
	return out
}

func editEvent(ev []byte) []byte {
	return bytes.Replace(ev, []byte("workspace_read_file"), []byte("workspace_apply_patch"), 1)
}

func verifyKeyed(t testing.TB, data []byte, opts ...Option) Report {
	t.Helper()
	rep, err := VerifyJSONL(bytes.NewReader(data), append([]Option{WithKey(testKey)}, opts...)...)
	if err != nil {
		t.Fatalf("VerifyJSONL: %v", err)
	}
	return rep
}

// TestKeyedChainFindsEveryRewrite: each record of a keyed log carries its
// key_id and an HMAC, and every edit, removal, reordering and rewrite
// without the key is found at the record where it starts.
func TestKeyedChainFindsEveryRewrite(t *testing.T) {
	_, L := writeKeyedLog(t, 6)
	id, err := KeyID(testKey)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range L {
		if !bytes.Contains(line, []byte(`,"key_id":"`+id+`","prev_hash":`)) {
			t.Fatalf("line %d does not name key_id %s: %s", i+1, id, line)
		}
	}
	good := verifyKeyed(t, join(L...))
	if !good.OK() || good.Records != 6 || good.KeyID != id || good.Unkeyed != 0 {
		t.Fatalf("good keyed log: %+v", good)
	}

	type tcase struct {
		name     string
		log      [][]byte
		firstBad uint64
		problem  Problem
	}
	cases := []tcase{
		{"edited event", [][]byte{L[0], L[1], edit(t, L[2], "quotes", "quotas"), L[3]}, 3, ProblemHash},
		{"key_id removed", [][]byte{L[0], edit(t, L[1], `,"key_id":"`+id+`"`, ""), L[2]}, 2, ProblemHash},
		{"removed record", [][]byte{L[0], L[1], L[3], L[4]}, 3, ProblemSeq},
		{"removed first record", L[1:], 1, ProblemSeq},
		{"reordered records", [][]byte{L[0], L[2], L[1], L[3]}, 2, ProblemSeq},
	}
	for _, f := range forgers(t) {
		want := ProblemHash
		switch {
		case f.keyID == "":
			want = ProblemUnkeyed
		case f.keyID != id:
			want = ProblemWrongKey
		}
		cases = append(cases,
			tcase{"record edited, chain re-sealed from it, " + f.name, forge(t, L, 2, f, editEvent), 3, want},
			tcase{"whole log re-sealed, " + f.name, forge(t, L, 0, f, nil), 1, want},
			tcase{"whole log edited and re-sealed, " + f.name, forge(t, L, 0, f, editEvent), 1, want},
			tcase{"record removed, rest renumbered and re-sealed, " + f.name, forge(t, append(append([][]byte(nil), L[:3]...), L[4:]...), 3, f, nil), 4, want},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyKeyed(t, join(tc.log...))
			if rep.OK() || rep.FirstBad != tc.firstBad || rep.Problem != tc.problem {
				t.Errorf("got first_bad=%d problem=%q (%s), want %d %q", rep.FirstBad, rep.Problem, rep.Reason, tc.firstBad, tc.problem)
			}
			// AllowUnkeyed is for logs written before keying: it does not
			// let a rewrite of a keyed log through, except a whole log
			// re-sealed without a key, which it then reports as unkeyed.
			rep = verifyKeyed(t, join(tc.log...), AllowUnkeyed())
			if rep.OK() && (rep.Unkeyed != rep.Records || rep.KeyID != "" || !strings.Contains(rep.String(), "unkeyed")) {
				t.Errorf("AllowUnkeyed passed a rewrite without saying it is unkeyed: %s", rep)
			}
		})
	}
}

// TestChainKeyIsNotTheInstallationKey: the chain's hashes are not what an
// HMAC under the installation key gives, which the sanitizer's markers
// are; nor does the key_id give away either key.
func TestChainKeyIsNotTheInstallationKey(t *testing.T) {
	_, L := writeKeyedLog(t, 1)
	var r Record
	if err := json.Unmarshal(bytes.TrimSuffix(L[0], []byte("\n")), &r); err != nil {
		t.Fatal(err)
	}
	in := hashInput(r.header(), r.Event)
	m := hmac.New(sha256.New, testKey)
	m.Write(in)
	if hex.EncodeToString(m.Sum(nil)) == r.Hash {
		t.Fatal("the chain's HMAC is keyed with the installation key itself")
	}
	if h, err := r.ComputeHash(testKey); err != nil || h != r.Hash {
		t.Fatalf("ComputeHash(testKey) = %s, %v; record says %s", h, err, r.Hash)
	}
	if _, err := r.ComputeHash(otherKey); !errors.Is(err, ErrWrongKey) {
		t.Errorf("ComputeHash(otherKey) = %v, want ErrWrongKey", err)
	}
	if _, err := r.ComputeHash(nil); !errors.Is(err, ErrKeyRequired) {
		t.Errorf("ComputeHash(nil) = %v, want ErrKeyRequired", err)
	}
	if strings.Contains(hex.EncodeToString(testKey), r.KeyID) {
		t.Error("key_id is a piece of the key")
	}
}

func TestVerifyKeyedLogWithoutOrWithWrongKey(t *testing.T) {
	_, L := writeKeyedLog(t, 3)
	rep, err := VerifyJSONL(bytes.NewReader(join(L...)))
	if !errors.Is(err, ErrKeyRequired) || rep.Records != 0 {
		t.Errorf("no key: %+v, %v; want ErrKeyRequired", rep, err)
	}
	rep, err = VerifyJSONL(bytes.NewReader(join(L...)), WithKey(otherKey))
	if err != nil || rep.Problem != ProblemWrongKey || rep.FirstBad != 1 {
		t.Errorf("other key: %s, %v; want wrong_key at seq 1", rep, err)
	}
	if _, err := VerifyJSONL(bytes.NewReader(join(L...)), WithKey(testKey[:MinKeyLen-1])); err == nil {
		t.Error("a key shorter than MinKeyLen was accepted")
	}
	if _, err := OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"), WithKey([]byte("short"))); err == nil {
		t.Error("OpenJSONL accepted a short key")
	}
}

// TestJSONLContinuesWithItsKeyOnly: a keyed log cannot be continued
// without its key or with another one, and nothing is written trying.
func TestJSONLContinuesWithItsKeyOnly(t *testing.T) {
	path, L := writeKeyedLog(t, 3)
	for _, tc := range []struct {
		name string
		opts []Option
		want error
	}{
		{"no key", nil, ErrKeyRequired},
		{"another key", []Option{WithKey(otherKey)}, ErrWrongKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := OpenJSONL(path, tc.opts...)
			if !errors.Is(err, tc.want) {
				if l != nil {
					l.Close()
				}
				t.Fatalf("OpenJSONL = %v, want %v", err, tc.want)
			}
			if got := readAll(t, path); !bytes.Equal(got, join(L...)) {
				t.Error("the log changed")
			}
		})
	}
	l, err := OpenJSONL(path, WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), "more", true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	if rep := verifyKeyed(t, readAll(t, path)); !rep.OK() || rep.Records != 4 {
		t.Fatalf("continued with its key: %s", rep)
	}
}

// TestLegacyLogContinuedKeyed: a log written before keying is continued
// with keyed records. Its unkeyed start verifies only when allowed, is
// reported as such, and is pinned by the first keyed record after it.
func TestLegacyLogContinuedKeyed(t *testing.T) {
	path, legacy := writeLog(t, 3)
	l, err := OpenJSONL(path, WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []string{"keyed 4", "keyed 5"} {
		if _, err := l.Append(context.Background(), ev, false); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data := readAll(t, path)
	L := bytes.SplitAfter(data, []byte("\n"))[:5]
	if !bytes.Equal(join(L[:3]...), join(legacy...)) {
		t.Fatal("continuing the log changed its records")
	}

	if rep := verifyKeyed(t, data); rep.Problem != ProblemUnkeyed || rep.FirstBad != 1 {
		t.Errorf("with the key: %s, want unkeyed at seq 1", rep)
	}
	rep := verifyKeyed(t, data, AllowUnkeyed())
	id, _ := KeyID(testKey)
	if !rep.OK() || rep.Records != 5 || rep.Unkeyed != 3 || rep.KeyID != id || !strings.Contains(rep.String(), "after 3 unkeyed records") {
		t.Errorf("with the key, unkeyed allowed: %+v", rep)
	}
	if rep, err := VerifyJSONL(bytes.NewReader(data)); !errors.Is(err, ErrKeyRequired) || rep.Records != 3 {
		t.Errorf("without a key: %+v, %v; want 3 records then ErrKeyRequired", rep, err)
	}

	unkeyed := forgers(t)[0]
	for _, tc := range []struct {
		name     string
		log      [][]byte
		firstBad uint64
		problem  Problem
	}{
		{"unkeyed start rewritten", forge(t, L[:3], 1, unkeyed, func(ev []byte) []byte { return []byte(`"rewritten"`) }), 4, ProblemPrevHash},
		{"unkeyed record appended after keyed ones", forge(t, append(L, L[4]), 5, unkeyed, nil), 6, ProblemUnkeyed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := tc.log
			if len(log) == 3 {
				log = append(log, L[3:]...)
			}
			rep := verifyKeyed(t, join(log...), AllowUnkeyed())
			if rep.OK() || rep.FirstBad != tc.firstBad || rep.Problem != tc.problem {
				t.Errorf("got first_bad=%d problem=%q (%s), want %d %q", rep.FirstBad, rep.Problem, rep.Reason, tc.firstBad, tc.problem)
			}
		})
	}
	// Rewritten without the key from the first keyed record on, the log
	// holds no keyed record at all: refused with the key, and reported
	// as wholly unkeyed when unkeyed records are allowed.
	rewritten := join(forge(t, L, 3, unkeyed, nil)...)
	if rep := verifyKeyed(t, rewritten); rep.Problem != ProblemUnkeyed || rep.FirstBad != 1 {
		t.Errorf("keyed part rewritten without the key: %s, want unkeyed at seq 1", rep)
	}
	if rep := verifyKeyed(t, rewritten, AllowUnkeyed()); !rep.OK() || rep.Unkeyed != 5 || rep.KeyID != "" || !strings.Contains(rep.String(), "(unkeyed: ") {
		t.Errorf("keyed part rewritten, unkeyed allowed: %s", rep)
	}
}

// TestJSONLRefusesUnkeyedAppendBehindIt: a writer without the key that
// appends after this log's keyed records stops this log (fail closed)
// instead of being hidden behind new keyed records.
func TestJSONLRefusesUnkeyedAppendBehindIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.jsonl")
	l, err := OpenJSONL(path, WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Append(context.Background(), "first", true); err != nil {
		t.Fatal(err)
	}
	L := bytes.SplitAfter(readAll(t, path), []byte("\n"))[:1]
	forged := forge(t, append(L, L[0]), 1, forgers(t)[0], nil)[1]
	forged = bytes.Replace(forged, []byte(`"seq":1,`), []byte(`"seq":2,`), 1)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(forged)
	f.Close()
	if _, err := l.Append(context.Background(), "next", true); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Append after an unkeyed record = %v, want ErrCorrupt", err)
	}
}

// TestPostgresKeyedChain: the same guarantees in a Postgres table.
func TestPostgresKeyedChain(t *testing.T) {
	dsn := testkit.Postgres(t)
	ctx := context.Background()
	table := testTable(t, dsn)
	p, err := OpenPostgres(ctx, dsn, "k", WithTable(table), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, p, 4)
	p.Close()
	verify := func(opts ...Option) (Report, error) {
		return VerifyPostgres(ctx, dsn, "k", append([]Option{WithTable(table)}, opts...)...)
	}
	id, _ := KeyID(testKey)
	if rep, err := verify(WithKey(testKey)); err != nil || !rep.OK() || rep.Records != 4 || rep.KeyID != id {
		t.Fatalf("keyed chain: %s, %v", rep, err)
	}
	if _, err := verify(); !errors.Is(err, ErrKeyRequired) {
		t.Errorf("verify without a key: %v, want ErrKeyRequired", err)
	}
	if rep, err := verify(WithKey(otherKey)); err != nil || rep.Problem != ProblemWrongKey {
		t.Errorf("verify with another key: %s, %v", rep, err)
	}
	for _, tc := range []struct {
		opts []Option
		want error
	}{{nil, ErrKeyRequired}, {[]Option{WithKey(otherKey)}, ErrWrongKey}} {
		if q, err := OpenPostgres(ctx, dsn, "k", append([]Option{WithTable(table)}, tc.opts...)...); !errors.Is(err, tc.want) {
			if q != nil {
				q.Close()
			}
			t.Errorf("OpenPostgres = %v, want %v", err, tc.want)
		}
	}

	// Rewrite every row as a valid unkeyed chain, as a superuser without
	// the key could.
	rows := readRows(t, dsn, table, "k")
	for _, f := range forgers(t) {
		forged := forge(t, rows, 0, f, editEvent)
		stmts := []string{"ALTER TABLE " + table + " DISABLE TRIGGER USER"}
		for i, line := range forged {
			var r Record
			if err := json.Unmarshal(bytes.TrimSuffix(line, []byte("\n")), &r); err != nil {
				t.Fatal(err)
			}
			stmts = append(stmts, "UPDATE "+table+" SET hash = '"+r.Hash+"', record = "+sqlQuote(string(bytes.TrimSuffix(line, []byte("\n"))))+
				" WHERE instance = 'k' AND seq = "+strconv.Itoa(i+1))
		}
		stmts = append(stmts, "ALTER TABLE "+table+" ENABLE TRIGGER USER")
		adminExec(t, dsn, stmts...)
		rep, err := verify(WithKey(testKey))
		if err != nil || rep.OK() || rep.FirstBad != 1 {
			t.Errorf("%s: %s, %v; want seq 1 bad", f.name, rep, err)
		}
	}
}

// readRows returns the record texts of a Postgres chain as lines.
func readRows(t *testing.T, dsn, table, instance string) [][]byte {
	t.Helper()
	ctx := context.Background()
	rep, err := VerifyPostgres(ctx, dsn, instance, WithTable(table), WithKey(testKey))
	if err != nil || !rep.OK() {
		t.Fatalf("before: %s %v", rep, err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	r, err := conn.Query(ctx, "SELECT record FROM "+table+" WHERE instance = $1 ORDER BY seq", instance)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for r.Next() {
		var s string
		if err := r.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, []byte(s+"\n"))
	}
	return out
}

func sqlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// TestKeyedTornTailRepair: the record that states a torn tail was moved
// aside is keyed like every other record of a keyed log.
func TestKeyedTornTailRepair(t *testing.T) {
	path, L := writeKeyedLog(t, 3)
	if err := os.WriteFile(path, join(L[0], L[1], L[2][:len(L[2])/2]), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := OpenJSONL(path, WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(context.Background(), "after", true); err != nil {
		t.Fatal(err)
	}
	l.Close()
	rep := verifyKeyed(t, readAll(t, path))
	if !rep.OK() || rep.Records != 4 || rep.Unkeyed != 0 {
		t.Fatalf("after repair: %s", rep)
	}
}
