package audit

import (
	"bytes"
	"errors"
	"testing"
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
