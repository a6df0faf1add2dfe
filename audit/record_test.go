package audit

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/action"
)

func TestHashInputIsCanonical(t *testing.T) {
	for _, keyID := range []string{"", "0123456789abcdef"} {
		for i, ev := range sampleEvents {
			raw, err := action.Canonical(ev)
			if err != nil {
				t.Fatal(err)
			}
			fields := map[string]any{
				"seq": uint64(i + 7), "time": "2026-11-21T23:00:00.000000001Z", "instance": "h\"ost",
				"prev_hash": ZeroHash, "event": json.RawMessage(raw),
			}
			if keyID != "" {
				fields["key_id"] = keyID
			}
			want, err := action.Canonical(fields)
			if err != nil {
				t.Fatal(err)
			}
			got := hashInput(header{seq: uint64(i + 7), ts: "2026-11-21T23:00:00.000000001Z", instance: "h\"ost", keyID: keyID, prevHash: ZeroHash}, raw)
			if string(got) != string(want) {
				t.Errorf("key_id %q, event %d: hashInput\n got %s\nwant %s", keyID, i, got, want)
			}
		}
	}
}

func TestRecordMarshalJSONIsStoredText(t *testing.T) {
	_, lines := writeLog(t, len(sampleEvents))
	for i, line := range lines {
		text := line[:len(line)-1]
		var rec Record
		if err := json.Unmarshal(text, &rec); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		got, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(text) {
			t.Errorf("line %d: Marshal(Unmarshal(line))\n got %s\nwant %s", i+1, got, text)
		}
		h, err := rec.ComputeHash(nil)
		if err != nil {
			t.Fatal(err)
		}
		if h != rec.Hash {
			t.Errorf("line %d: ComputeHash = %s, record says %s", i+1, h, rec.Hash)
		}
	}
}

func TestRecordFieldOrderMatchesSpec(t *testing.T) {
	rec, line, err := seal(1, time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("X", 3600)), "i", ZeroHash, map[string]any{"b": 1, "a": 2.0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"seq":1,"time":"2026-01-02T02:04:05.0000006Z","instance":"i","prev_hash":"` + ZeroHash + `","event":{"a":2,"b":1},"hash":"` + rec.Hash + `"}`
	if string(line) != want {
		t.Errorf("stored text\n got %s\nwant %s", line, want)
	}
}

func TestSealRefusesUnencodableEvent(t *testing.T) {
	cases := []struct {
		name  string
		event any
	}{
		{"channel", make(chan int)},
		{"function", func() {}},
		{"NaN", map[string]any{"x": math.NaN()}},
		{"over the size limit", map[string]any{"s": strings.Repeat("x", 5000)}},
	}
	defer func(n int) { maxRecordBytes = n }(maxRecordBytes)
	maxRecordBytes = 4096
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := seal(1, time.Now(), "i", ZeroHash, tc.event, nil); err == nil {
				t.Fatal("seal accepted an event it cannot store")
			}
		})
	}
}

// TestSealerMatchesSealCanonical seals a chain of records of every size
// with one sealer into one reused buffer, as a log's writer does, and
// checks each record and its text against sealCanonical's, keyed and
// unkeyed: the reused hash input and the buffer carry nothing from one
// record to the next, a buffer grown by a large record is let go, and a
// record refused for its size leaves the buffer as it was.
func TestSealerMatchesSealCanonical(t *testing.T) {
	key, err := newChainKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	var events [][]byte
	for _, ev := range sampleEvents {
		raw, err := action.Canonical(ev)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, raw)
	}
	for _, n := range []int{0, 1, 300, keptBufferBytes - 400, keptBufferBytes, 3 * keptBufferBytes, 5} {
		raw, err := action.Canonical(map[string]any{"s": strings.Repeat("y", n)})
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, raw)
	}
	now := time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)
	for _, k := range []*chainKey{nil, key} {
		var s sealer
		buf := []byte("earlier records\n")
		prev := ZeroHash
		for i := range 3 * len(events) {
			ev := events[(i*5)%len(events)] // big and small interleaved
			seq := uint64(i + 1)
			at := now.Add(time.Duration(i) * time.Microsecond)
			wantRec, wantLine, err := sealCanonical(seq, at, "host-\u00e9", prev, ev, k)
			if err != nil {
				t.Fatal(err)
			}
			mark := len(buf)
			rec, out, err := s.appendSealed(buf, seq, at, "host-\u00e9", prev, ev, k)
			if err != nil {
				t.Fatal(err)
			}
			if string(out[:mark]) != string(buf[:mark]) {
				t.Fatalf("record %d: appendSealed changed what the buffer held before", seq)
			}
			if got := out[mark:]; string(got) != string(wantLine) {
				t.Fatalf("keyed %v, record %d: text\n got %.300s\nwant %.300s", k != nil, seq, got, wantLine)
			}
			if rec.Hash != wantRec.Hash || rec.Seq != seq || rec.PrevHash != prev || string(rec.Event) != string(ev) || !rec.Time.Equal(wantRec.Time) || rec.KeyID != wantRec.KeyID {
				t.Fatalf("keyed %v, record %d: %+v, want %+v", k != nil, seq, rec, wantRec)
			}
			if cap(s.in) > keptBufferBytes {
				t.Fatalf("record %d: the sealer keeps a hash buffer of %d bytes", seq, cap(s.in))
			}
			prev = rec.Hash
			if len(out) > 4*keptBufferBytes {
				out = out[:0]
			}
			buf = out
		}
	}

	defer func(n int) { maxRecordBytes = n }(maxRecordBytes)
	maxRecordBytes = 4096
	var s sealer
	buf := []byte("kept")
	_, out, err := s.appendSealed(buf, 1, now, "i", ZeroHash, events[len(events)-2], nil)
	if err == nil {
		t.Fatal("appendSealed took a record over the size limit")
	}
	if string(out) != "kept" {
		t.Fatalf("a refused record left %q in the buffer", out)
	}
}
