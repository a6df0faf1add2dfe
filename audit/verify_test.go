package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func join(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// edit returns line with the first old replaced by new, failing when old
// is not in it.
func edit(t *testing.T, line []byte, old, new string) []byte {
	t.Helper()
	if !bytes.Contains(line, []byte(old)) {
		t.Fatalf("%q not in %s", old, line)
	}
	return bytes.Replace(line, []byte(old), []byte(new), 1)
}

// rehash returns the edited line's record with its hash recomputed, as a
// forger would do.
func rehash(t *testing.T, line []byte) []byte {
	t.Helper()
	var r Record
	if err := json.Unmarshal(bytes.TrimSuffix(line, []byte("\n")), &r); err != nil {
		t.Fatal(err)
	}
	h, err := r.ComputeHash(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Hash = h
	out, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// mapHash returns line with f applied to the value of its hash.
func mapHash(line []byte, f func(string) string) []byte {
	i := bytes.LastIndex(line, []byte(`,"hash":"`)) + len(`,"hash":"`)
	h := string(line[i : i+64])
	return join(line[:i], []byte(f(h)), line[i+64:])
}

func TestVerifyJSONL(t *testing.T) {
	_, L := writeLog(t, 6)
	forgedStart, _, err := sealCanonical(1, time.Now(), "x", strings.Repeat("1", 64), []byte(`{}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	forgedLine, _ := forgedStart.MarshalJSON()
	cases := []struct {
		name     string
		log      []byte
		records  int
		firstBad uint64
		line     int
		problem  Problem
	}{
		{"good chain", join(L...), 6, 0, 0, ProblemNone},
		{"empty log", nil, 0, 0, 0, ProblemNone},
		{"edited event", join(L[0], L[1], edit(t, L[2], "quotes", "quotas"), L[3], L[4], L[5]), 2, 3, 3, ProblemHash},
		{"edited hash", join(L[0], mapHash(L[1], func(h string) string { return h[:63] + string("10"[h[63]&1]) })), 1, 2, 2, ProblemHash},
		{"edited seq", join(L[0], edit(t, L[1], `"seq":2,`, `"seq":3,`), L[2]), 1, 2, 2, ProblemHash},
		{"edited instance", join(L[0], L[1], L[2], L[3], edit(t, L[4], "test-host", "evil-host")), 4, 5, 5, ProblemHash},
		{"edited and rehashed record", join(L[0], L[1], rehash(t, edit(t, L[2], "quotes", "quotas")), L[3]), 3, 4, 4, ProblemPrevHash},
		{"deleted first record", join(L[1:]...), 0, 1, 1, ProblemSeq},
		{"deleted middle record", join(L[0], L[1], L[2], L[4], L[5]), 3, 4, 4, ProblemSeq},
		{"reordered records", join(L[0], L[2], L[1], L[3]), 1, 2, 2, ProblemSeq},
		{"duplicated record", join(L[0], L[1], L[2], L[2], L[3]), 3, 4, 4, ProblemSeq},
		{"truncated record", join(L[0], L[1], L[2], L[3], L[4][:len(L[4])/2], []byte("\n"), L[5]), 4, 5, 5, ProblemNotRecord},
		{"torn last line", join(L[0], L[1], L[2], L[3], L[4], L[5][:len(L[5])/2]), 5, 6, 6, ProblemTorn},
		{"last record without newline", join(L[0], L[1], L[2], L[3], L[4], L[5][:len(L[5])-1]), 5, 6, 6, ProblemTorn},
		{"only a torn line", L[0][:10], 0, 1, 1, ProblemTorn},
		{"blank line", join(L[0], L[1], []byte("\n"), L[2]), 2, 3, 3, ProblemNotRecord},
		{"not json", join(L[0], []byte("hello\n"), L[1]), 1, 2, 2, ProblemNotRecord},
		{"extra key", join(L[0], edit(t, L[1], `{"seq"`, `{"x":1,"seq"`)), 1, 2, 2, ProblemNotRecord},
		{"duplicate key", join(L[0], edit(t, L[1], `{"seq":2,`, `{"seq":2,"seq":2,`)), 1, 2, 2, ProblemNotCanonical},
		{"whitespace added", join(L[0], edit(t, L[1], `"seq":2`, `"seq": 2`)), 1, 2, 2, ProblemNotCanonical},
		{"number respelled", join(L[0], L[1], L[2], edit(t, L[3], `e+21`, `E+21`)), 3, 4, 4, ProblemNotCanonical},
		{"time respelled", join(edit(t, L[0], `Z"`, `+00:00"`)), 0, 1, 1, ProblemNotCanonical},
		{"crlf line ending", join(L[0], edit(t, L[1], "}\n", "}\r\n")), 1, 2, 2, ProblemNotCanonical},
		{"upper-case hash", join(L[0], mapHash(L[1], strings.ToUpper)), 1, 2, 2, ProblemHash},
		{"forged chain start", append(forgedLine, '\n'), 0, 1, 1, ProblemPrevHash},
		{"line too long", join(L[0], bytes.Repeat([]byte("x"), MaxRecordBytes+10), []byte("\n")), 1, 2, 2, ProblemNotRecord},
		{"torn line too long", join(L[0], bytes.Repeat([]byte("x"), MaxRecordBytes+10)), 1, 2, 2, ProblemNotRecord},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep := verifyBytes(t, tc.log)
			if rep.Records != tc.records || rep.FirstBad != tc.firstBad || rep.Line != tc.line || rep.Problem != tc.problem {
				t.Errorf("got records=%d first_bad=%d line=%d problem=%q (%s)\nwant records=%d first_bad=%d line=%d problem=%q",
					rep.Records, rep.FirstBad, rep.Line, rep.Problem, rep.Reason, tc.records, tc.firstBad, tc.line, tc.problem)
			}
			if rep.OK() != (tc.problem == ProblemNone) {
				t.Errorf("OK() = %v", rep.OK())
			}
			if !rep.OK() && rep.Reason == "" {
				t.Error("bad report without a reason")
			}
		})
	}
}

func TestVerifyJSONLReadError(t *testing.T) {
	_, L := writeLog(t, 2)
	boom := errors.New("disk gone")
	r := io.MultiReader(bytes.NewReader(L[0]), iotest.ErrReader(boom))
	if _, err := VerifyJSONL(r); !errors.Is(err, boom) {
		t.Fatalf("VerifyJSONL error = %v, want the read error", err)
	}
}

func TestReportString(t *testing.T) {
	_, L := writeLog(t, 3)
	good := verifyBytes(t, join(L...))
	if want := "ok: 3 records, head seq 3 hash " + good.LastHash + " (unkeyed: SHA-256 only, so anyone who could write the log could have rewritten it)"; good.String() != want {
		t.Errorf("good: %q, want %q", good.String(), want)
	}
	_, K := writeKeyedLog(t, 2)
	keyed, err := VerifyJSONL(bytes.NewReader(join(K...)), WithKey(testKey))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := KeyID(testKey)
	if want := "ok: 2 records, head seq 2 hash " + keyed.LastHash + " (keyed, key_id " + id + ")"; keyed.String() != want {
		t.Errorf("keyed: %q, want %q", keyed.String(), want)
	}
	mixed := Report{Records: 5, Unkeyed: 3, KeyID: id, Chains: 1, LastSeq: 5, LastHash: ZeroHash}
	if want := "(keyed, key_id " + id + ", after 3 unkeyed records)"; !strings.HasSuffix(mixed.String(), want) {
		t.Errorf("mixed: %q, want suffix %q", mixed.String(), want)
	}
	if empty := verifyBytes(t, nil); empty.String() != "ok: 0 records, head seq 0 hash "+ZeroHash {
		t.Errorf("empty: %q", empty.String())
	}
	bad := verifyBytes(t, join(L[0], L[2]))
	if s := bad.String(); !strings.HasPrefix(s, "bad: seq 2 (line 2): seq_mismatch: ") {
		t.Errorf("bad: %q", s)
	}
}

func TestVerifyJSONLWithAnchor(t *testing.T) {
	_, L := writeLog(t, 5)
	head := verifyBytes(t, join(L...))
	at3 := verifyBytes(t, join(L[:3]...))
	other := verifyBytes(t, join(writeLogLines(t, "other-host", 5)...))
	cases := []struct {
		name     string
		log      []byte
		anchor   Anchor
		firstBad uint64
		line     int
		problem  Problem
	}{
		{"whole log at its head", join(L...), Anchor{5, head.LastHash}, 0, 0, ProblemNone},
		{"grown since the anchor", join(L...), Anchor{3, at3.LastHash}, 0, 0, ProblemNone},
		{"seq only", join(L...), Anchor{Seq: 5}, 0, 0, ProblemNone},
		{"last record removed", join(L[:4]...), Anchor{5, head.LastHash}, 5, 5, ProblemTruncated},
		{"last two removed, seq only", join(L[:3]...), Anchor{Seq: 5}, 4, 4, ProblemTruncated},
		{"emptied", nil, Anchor{Seq: 1}, 1, 1, ProblemTruncated},
		{"rewritten log", join(L...), Anchor{5, other.LastHash}, 5, 5, ProblemAnchor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := VerifyJSONL(bytes.NewReader(tc.log), WithAnchor(tc.anchor))
			if err != nil {
				t.Fatal(err)
			}
			if rep.FirstBad != tc.firstBad || rep.Line != tc.line || rep.Problem != tc.problem {
				t.Errorf("got first_bad=%d line=%d problem=%q (%s), want %d %d %q",
					rep.FirstBad, rep.Line, rep.Problem, rep.Reason, tc.firstBad, tc.line, tc.problem)
			}
		})
	}
}

func TestParseAnchor(t *testing.T) {
	h := strings.Repeat("ab", 32)
	cases := []struct {
		in   string
		want Anchor
		ok   bool
	}{
		{"12", Anchor{Seq: 12}, true},
		{"12:" + h, Anchor{12, h}, true},
		{"0", Anchor{}, false},
		{"-1", Anchor{}, false},
		{"x:" + h, Anchor{}, false},
		{"12:" + strings.ToUpper(h), Anchor{}, false},
		{"12:abc", Anchor{}, false},
		{"", Anchor{}, false},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseAnchor(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("ParseAnchor(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}
