package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

// FuzzVerifyJSONL feeds arbitrary bytes to the verifier, without a key and
// with one: it must not panic, and its report must be consistent with the
// input. Without a key, a keyed record ends the check with ErrKeyRequired.
func FuzzVerifyJSONL(f *testing.F) {
	_, L := writeLog(f, 4)
	_, K := writeKeyedLog(f, 3)
	f.Add(join(L...))
	f.Add(join(L[0], L[2]))
	f.Add(L[0][:30])
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"seq":1}` + "\n"))
	f.Add(join(K...))
	f.Add(join(L[0], K[1]))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, opts := range [][]Option{nil, {WithKey(testKey)}, {WithKey(testKey), AllowUnkeyed()}} {
			rep, err := VerifyJSONL(bytes.NewReader(data), opts...)
			if errors.Is(err, ErrKeyRequired) && opts == nil {
				if !rep.OK() || rep.Unkeyed != rep.Records {
					t.Fatalf("ErrKeyRequired after a bad or keyed record: %+v", rep)
				}
				continue
			}
			if err != nil {
				t.Fatalf("error from an in-memory reader: %v", err)
			}
			lines := bytes.Count(data, []byte("\n"))
			if rep.OK() {
				if rep.Records != lines || (len(data) > 0 && data[len(data)-1] != '\n') {
					t.Fatalf("good report with %d records for %d lines", rep.Records, lines)
				}
				if len(opts) == 1 && rep.Unkeyed != 0 {
					t.Fatalf("unkeyed records passed with a key: %+v", rep)
				}
				continue
			}
			if rep.FirstBad != uint64(rep.Records)+1 || rep.Line != rep.Records+1 || rep.Reason == "" || rep.Problem == ProblemNone {
				t.Fatalf("inconsistent bad report %+v", rep)
			}
		}
	})
}

// FuzzVerifyJSONLSingleByteChange changes one byte of a valid log: the
// verifier must report exactly the record that holds the changed byte.
func FuzzVerifyJSONLSingleByteChange(f *testing.F) {
	_, L := writeLog(f, len(sampleEvents))
	log := join(L...)
	for _, pos := range []uint{0, 1, 9, 40, 120, 200, uint(len(L[0])) - 1, uint(len(log)) - 1, uint(len(log)) - 5} {
		for _, b := range []byte{'0', 'a', 'f', '"', '\\', '\n', ' ', '}', 0xff} {
			f.Add(pos, b)
		}
	}
	f.Fuzz(func(t *testing.T, pos uint, b byte) {
		i := int(pos % uint(len(log)))
		if log[i] == b {
			return
		}
		changed := bytes.Clone(log)
		changed[i] = b
		rep := verifyBytes(t, changed)
		line := bytes.Count(log[:i], []byte("\n")) + 1
		if rep.OK() {
			t.Fatalf("byte %d (line %d) changed from %q to %q: not detected", i, line, log[i], b)
		}
		if rep.Line != line || rep.FirstBad != uint64(line) {
			t.Fatalf("byte %d changed on line %d, but the report names line %d, seq %d: %s", i, line, rep.Line, rep.FirstBad, rep.Reason)
		}
	})
}

// TestEverySingleByteChangeIsDetected is the fuzz property above over every
// byte of a log, unkeyed and keyed, with a few replacement values per byte.
func TestEverySingleByteChangeIsDetected(t *testing.T) {
	_, unkeyed := writeLog(t, len(sampleEvents))
	_, keyed := writeKeyedLog(t, len(sampleEvents))
	for _, tc := range []struct {
		name string
		L    [][]byte
		opts []Option
	}{{"unkeyed", unkeyed, nil}, {"keyed", keyed, []Option{WithKey(testKey)}}} {
		t.Run(tc.name, func(t *testing.T) {
			log := join(tc.L...)
			line := 1
			for i, old := range log {
				for _, b := range []byte{old ^ 0x01, old ^ 0x20, '\n', '"'} {
					if b == old {
						continue
					}
					changed := bytes.Clone(log)
					changed[i] = b
					rep, err := VerifyJSONL(bytes.NewReader(changed), tc.opts...)
					if err != nil || rep.OK() || rep.Line != line || rep.FirstBad != uint64(line) {
						t.Fatalf("byte %d (line %d) %q -> %q: report %s, %v", i, line, old, b, rep, err)
					}
				}
				if old == '\n' {
					line++
				}
			}
		})
	}
}

// FuzzSealedRecordsAreCanonical seals two records in a row with one
// sealer into one buffer, as a log's writer does, from an event string
// and an instance name of any bytes: each line must decode to exactly the
// fields sealed, and its hash must be the HMAC of action.Canonical of the
// record without its hash, computed apart from the sealer's own text.
func FuzzSealedRecordsAreCanonical(f *testing.F) {
	f.Add("hello", "host-1", uint64(1))
	f.Add("quote \" backslash \\ tab \t nul \x00 bidi \u202e line sep \u2028", "h\"ost\n", uint64(7))
	f.Add(strings.Repeat("x", 3000), "", uint64(1<<63))
	f.Add("\xff\xfe not utf-8", "\xc3", uint64(42))
	k, err := newChainKey(testKey)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 123456789, time.UTC)
	f.Fuzz(func(t *testing.T, text, instance string, seq uint64) {
		// Up to 2^53: action.Canonical writes larger integers as doubles,
		// where the record writes its seq in full (see hashInput).
		seq = 1 + seq%(1<<53-2)
		var s sealer
		buf := []byte{}
		prev := ZeroHash
		for i := uint64(0); i < 2; i++ {
			ev, err := action.Canonical(map[string]any{"text": text, "i": i})
			if err != nil {
				t.Skip() // not representable (the event side refuses it before sealing)
			}
			start := len(buf)
			var rec Record
			rec, buf, err = s.appendSealed(buf, seq+i, now, instance, prev, ev, k)
			if err != nil {
				t.Fatal(err)
			}
			line := buf[start:]
			var got map[string]any
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("record %d does not decode: %v\n%s", i, err, line)
			}
			var wantEvent any
			if err := json.Unmarshal(ev, &wantEvent); err != nil {
				t.Fatal(err)
			}
			var gotEvent any
			if err := json.Unmarshal(mustMarshal(t, got["event"]), &gotEvent); err != nil {
				t.Fatal(err)
			}
			if got["seq"] != json.Number(strconv.FormatUint(seq+i, 10)) || got["instance"] != asJSONString(t, instance) ||
				got["prev_hash"] != prev || got["key_id"] != k.id || got["time"] != formatTime(now) || !reflect.DeepEqual(gotEvent, wantEvent) {
				t.Fatalf("record %d: fields %v", i, got)
			}
			fields := map[string]any{"seq": seq + i, "time": formatTime(now), "instance": instance, "key_id": k.id,
				"prev_hash": prev, "event": json.RawMessage(ev)}
			in, err := action.Canonical(fields)
			if err != nil {
				t.Fatal(err)
			}
			if want := k.sum(in); rec.Hash != want || got["hash"] != want {
				t.Fatalf("record %d: hash %s (line %v), want the HMAC of the canonical record %s", i, rec.Hash, got["hash"], want)
			}
			prev = rec.Hash
			buf = append(buf, '\n')
		}
	})
}

// asJSONString is s as encoding/json gives it back from its JSON (each
// byte of invalid UTF-8 a U+FFFD).
func asJSONString(t *testing.T, s string) string {
	var out string
	if err := json.Unmarshal(mustMarshal(t, s), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
