package audit

import (
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
