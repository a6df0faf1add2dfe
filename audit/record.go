package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/harness-runtime/harness/action"
)

// ZeroHash is the prev_hash of the first record of a chain: 64 zeros.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// MaxRecordBytes bounds the text of one record. Append refuses a larger
// event and the verifiers report a longer line as bad, so neither can be
// made to hold an unbounded line in memory.
const MaxRecordBytes = 16 << 20

// maxRecordBytes is MaxRecordBytes, lowered by tests that need a record
// over the limit without building 16 MiB of it.
var maxRecordBytes = MaxRecordBytes

// Record is one entry of the audit chain. Its JSON form (MarshalJSON) is
// exactly the text that is stored and verified.
type Record struct {
	// Seq is 1 for the first record of a chain and grows by exactly 1.
	Seq uint64 `json:"seq"`
	// Time is when the record was written, in UTC. It is informative
	// only: it comes from the writer's clock and is not checked to grow.
	Time time.Time `json:"time"`
	// Instance names the writer. In Postgres each instance has its own
	// chain; in a JSONL file it is a label and may change across restarts.
	Instance string `json:"instance"`
	// PrevHash is the Hash of the record before, ZeroHash for the first.
	PrevHash string `json:"prev_hash"`
	// Event is the audited value in canonical JSON.
	Event json.RawMessage `json:"event"`
	// Hash is the hex SHA-256 of action.Canonical of the record without
	// its "hash" key.
	Hash string `json:"hash"`
}

// MarshalJSON returns the record's stored text: the keys seq, time,
// instance, prev_hash, event, hash in that order, no whitespace, time in
// RFC 3339 with nanoseconds in UTC and the event in canonical JSON. It does
// not check that Hash is right; ComputeHash does that.
func (r Record) MarshalJSON() ([]byte, error) {
	ev, err := canonicalEvent(r.Event)
	if err != nil {
		return nil, err
	}
	return encodeRecord(r.Seq, formatTime(r.Time), r.Instance, r.PrevHash, ev, r.Hash), nil
}

// ComputeHash returns the hash the record must carry given its other
// fields: the hex SHA-256 of action.Canonical of the record without "hash".
func (r Record) ComputeHash() (string, error) {
	ev, err := canonicalEvent(r.Event)
	if err != nil {
		return "", err
	}
	return hashOf(r.Seq, formatTime(r.Time), r.Instance, r.PrevHash, ev), nil
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func canonicalEvent(ev json.RawMessage) ([]byte, error) {
	if len(ev) == 0 {
		return []byte("null"), nil
	}
	b, err := action.Canonical(ev)
	if err != nil {
		return nil, fmt.Errorf("audit event: %w", err)
	}
	return b, nil
}

// jsonString writes s as action.Canonical does.
func jsonString(buf *bytes.Buffer, s string) {
	buf.Write(action.AppendJSONString(buf.AvailableBuffer(), s))
}

// encodeRecord writes the stored text of a record; event must already be
// canonical JSON.
func encodeRecord(seq uint64, ts, instance, prevHash string, event []byte, hash string) []byte {
	var buf bytes.Buffer
	buf.Grow(200 + len(event) + len(instance))
	buf.WriteString(`{"seq":`)
	buf.WriteString(strconv.FormatUint(seq, 10))
	buf.WriteString(`,"time":`)
	jsonString(&buf, ts)
	buf.WriteString(`,"instance":`)
	jsonString(&buf, instance)
	buf.WriteString(`,"prev_hash":`)
	jsonString(&buf, prevHash)
	buf.WriteString(`,"event":`)
	buf.Write(event)
	buf.WriteString(`,"hash":`)
	jsonString(&buf, hash)
	buf.WriteByte('}')
	return buf.Bytes()
}

// hashInput is action.Canonical of the record without "hash", written
// directly (keys in sorted order) because event is already canonical;
// TestHashInputIsCanonical pins the equality.
func hashInput(seq uint64, ts, instance, prevHash string, event []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(160 + len(event) + len(instance))
	buf.WriteString(`{"event":`)
	buf.Write(event)
	buf.WriteString(`,"instance":`)
	jsonString(&buf, instance)
	buf.WriteString(`,"prev_hash":`)
	jsonString(&buf, prevHash)
	buf.WriteString(`,"seq":`)
	buf.WriteString(strconv.FormatUint(seq, 10))
	buf.WriteString(`,"time":`)
	jsonString(&buf, ts)
	buf.WriteByte('}')
	return buf.Bytes()
}

func hashOf(seq uint64, ts, instance, prevHash string, event []byte) string {
	sum := sha256.Sum256(hashInput(seq, ts, instance, prevHash, event))
	return hex.EncodeToString(sum[:])
}

// seal builds the next record of a chain and its stored text.
func seal(seq uint64, now time.Time, instance, prevHash string, event any) (Record, []byte, error) {
	ev, err := action.Canonical(event)
	if err != nil {
		return Record{}, nil, fmt.Errorf("audit event: %w", err)
	}
	return sealCanonical(seq, now, instance, prevHash, ev)
}

// sealCanonical is seal for an event already in canonical JSON.
func sealCanonical(seq uint64, now time.Time, instance, prevHash string, ev []byte) (Record, []byte, error) {
	now = now.UTC().Round(0)
	ts := formatTime(now)
	h := hashOf(seq, ts, instance, prevHash, ev)
	line := encodeRecord(seq, ts, instance, prevHash, ev, h)
	if len(line) > maxRecordBytes {
		return Record{}, nil, fmt.Errorf("audit event: record of %d bytes exceeds %d", len(line), maxRecordBytes)
	}
	return Record{Seq: seq, Time: now, Instance: instance, PrevHash: prevHash, Event: ev, Hash: h}, line, nil
}

// Problem classifies why a record failed verification.
type Problem string

// Problems reported by the verifiers.
const (
	// ProblemNone: the chain verified.
	ProblemNone Problem = ""
	// ProblemNotRecord: the line is not JSON or not a record's shape.
	ProblemNotRecord Problem = "not_a_record"
	// ProblemTorn: the last line has no newline (a torn write).
	ProblemTorn Problem = "torn_last_line"
	// ProblemNotCanonical: the record decodes but is not in its stored
	// text form (whitespace, key order, number or time spelling changed).
	ProblemNotCanonical Problem = "not_canonical"
	// ProblemHash: the hash does not match the record's content.
	ProblemHash Problem = "hash_mismatch"
	// ProblemSeq: the seq is not the one expected (deleted or reordered).
	ProblemSeq Problem = "seq_mismatch"
	// ProblemPrevHash: prev_hash is not the hash of the record before.
	ProblemPrevHash Problem = "prev_hash_mismatch"
	// ProblemColumns: a Postgres row's columns disagree with its text.
	ProblemColumns Problem = "column_mismatch"
	// ProblemAnchor: the record at the anchor's seq has another hash.
	ProblemAnchor Problem = "anchor_mismatch"
	// ProblemTruncated: the chain ends before the anchor's seq.
	ProblemTruncated Problem = "truncated"
)

// recordError is why one line is not a valid record on its own.
type recordError struct {
	problem Problem
	msg     string
}

func (e *recordError) Error() string { return e.msg }

func badRecord(p Problem, format string, args ...any) *recordError {
	return &recordError{problem: p, msg: fmt.Sprintf(format, args...)}
}

// wireRecord has pointers so that a missing key is told from a zero one.
type wireRecord struct {
	Seq      *uint64         `json:"seq"`
	Time     *string         `json:"time"`
	Instance *string         `json:"instance"`
	PrevHash *string         `json:"prev_hash"`
	Event    json.RawMessage `json:"event"`
	Hash     *string         `json:"hash"`
}

func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseRecord decodes one stored record text (without its newline) and
// checks that it is in stored form and that its hash matches its content.
// It does not check the links to other records.
func parseRecord(line []byte) (Record, *recordError) {
	if len(line) > maxRecordBytes {
		return Record{}, badRecord(ProblemNotRecord, "record of %d bytes exceeds %d", len(line), maxRecordBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var w wireRecord
	if err := dec.Decode(&w); err != nil {
		return Record{}, badRecord(ProblemNotRecord, "not a record: %v", err)
	}
	if _, err := dec.Token(); err == nil {
		return Record{}, badRecord(ProblemNotRecord, "not a record: data after the object")
	}
	switch {
	case w.Seq == nil, w.Time == nil, w.Instance == nil, w.PrevHash == nil, w.Event == nil, w.Hash == nil:
		return Record{}, badRecord(ProblemNotRecord, "not a record: a key of seq, time, instance, prev_hash, event, hash is missing")
	}
	t, err := time.Parse(time.RFC3339Nano, *w.Time)
	if err != nil || formatTime(t) != *w.Time {
		return Record{}, badRecord(ProblemNotCanonical, "seq %d: time %q is not RFC 3339 UTC in stored form", *w.Seq, *w.Time)
	}
	if !isHexHash(*w.PrevHash) {
		return Record{}, badRecord(ProblemNotCanonical, "seq %d: prev_hash is not 64 lower-case hex digits", *w.Seq)
	}
	ev, err := action.Canonical(w.Event)
	if err != nil {
		return Record{}, badRecord(ProblemNotRecord, "seq %d: event: %v", *w.Seq, err)
	}
	if !bytes.Equal(encodeRecord(*w.Seq, *w.Time, *w.Instance, *w.PrevHash, ev, *w.Hash), line) {
		return Record{}, badRecord(ProblemNotCanonical, "seq %d: record text is not in stored form (edited)", *w.Seq)
	}
	want := hashOf(*w.Seq, *w.Time, *w.Instance, *w.PrevHash, ev)
	if want != *w.Hash {
		return Record{}, badRecord(ProblemHash, "seq %d: hash does not match the record's content (edited)", *w.Seq)
	}
	return Record{Seq: *w.Seq, Time: t.UTC(), Instance: *w.Instance, PrevHash: *w.PrevHash, Event: ev, Hash: *w.Hash}, nil
}
