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
	// KeyID names the key of a keyed record (see WithKey and KeyID);
	// empty for an unkeyed one.
	KeyID string `json:"key_id,omitempty"`
	// PrevHash is the Hash of the record before, ZeroHash for the first.
	PrevHash string `json:"prev_hash"`
	// Event is the audited value in canonical JSON.
	Event json.RawMessage `json:"event"`
	// Hash is the hex HMAC-SHA-256 (keyed record) or SHA-256 (unkeyed) of
	// action.Canonical of the record without its "hash" key.
	Hash string `json:"hash"`
}

// MarshalJSON returns the record's stored text: the keys seq, time,
// instance, key_id (keyed records only), prev_hash, event, hash in that
// order, no whitespace, time in RFC 3339 with nanoseconds in UTC and the
// event in canonical JSON. It does not check that Hash is right;
// ComputeHash does that.
func (r Record) MarshalJSON() ([]byte, error) {
	ev, err := canonicalEvent(r.Event)
	if err != nil {
		return nil, err
	}
	return encodeRecord(r.header(), ev, r.Hash), nil
}

// ComputeHash returns the hash the record must carry given its other
// fields. For an unkeyed record (KeyID empty) that is the hex SHA-256 of
// action.Canonical of the record without "hash", and key is not used. For
// a keyed record it is the hex HMAC-SHA-256 of the same text under the
// chain key derived from key (the installation key, as for WithKey); it
// fails when key is missing or is not the key KeyID names.
func (r Record) ComputeHash(key []byte) (string, error) {
	ev, err := canonicalEvent(r.Event)
	if err != nil {
		return "", err
	}
	var k *chainKey
	if r.KeyID != "" {
		if key == nil {
			return "", fmt.Errorf("%w: seq %d has key_id %s", ErrKeyRequired, r.Seq, r.KeyID)
		}
		if k, err = newChainKey(key); err != nil {
			return "", err
		}
		if k.id != r.KeyID {
			return "", fmt.Errorf("%w: seq %d has key_id %s, the key given has %s", ErrWrongKey, r.Seq, r.KeyID, k.id)
		}
	}
	return hashOf(r.header(), ev, k), nil
}

// header is what a record's hash covers besides its event.
type header struct {
	seq      uint64
	ts       string // formatTime of the record's time
	instance string
	keyID    string // "" for an unkeyed record
	prevHash string
}

func (r Record) header() header {
	return header{seq: r.Seq, ts: formatTime(r.Time), instance: r.Instance, keyID: r.KeyID, prevHash: r.PrevHash}
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

// recordBytes and hashInputBytes are room for a record's text and for its
// hash input besides the event and the instance (keys, a 20-digit seq,
// the time, key id and hashes, quoted), so that either is written without
// growing its buffer.
const (
	recordBytes    = 280
	hashInputBytes = 210
)

// encodeRecord returns the stored text of a record; event must already
// be canonical JSON.
func encodeRecord(h header, event []byte, hash string) []byte {
	return appendRecord(make([]byte, 0, recordBytes+len(event)+len(h.instance)), h, event, hash)
}

// appendRecord appends the stored text of a record to dst.
func appendRecord(dst []byte, h header, event []byte, hash string) []byte {
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendUint(dst, h.seq, 10)
	dst = append(dst, `,"time":`...)
	dst = action.AppendJSONString(dst, h.ts)
	dst = append(dst, `,"instance":`...)
	dst = action.AppendJSONString(dst, h.instance)
	if h.keyID != "" {
		dst = append(dst, `,"key_id":`...)
		dst = action.AppendJSONString(dst, h.keyID)
	}
	dst = append(dst, `,"prev_hash":`...)
	dst = action.AppendJSONString(dst, h.prevHash)
	dst = append(dst, `,"event":`...)
	dst = append(dst, event...)
	dst = append(dst, `,"hash":`...)
	dst = action.AppendJSONString(dst, hash)
	return append(dst, '}')
}

// hashInput is action.Canonical of the record without "hash", written
// directly (keys in sorted order) because event is already canonical;
// TestHashInputIsCanonical and FuzzSealedRecordsAreCanonical pin the
// equality. The seq is written in full, as in the record, where
// action.Canonical would write an integer above 2^53 as a double: a chain
// never gets there.
func hashInput(h header, event []byte) []byte {
	return appendHashInput(make([]byte, 0, hashInputBytes+len(event)+len(h.instance)), h, event)
}

// appendHashInput appends hashInput(h, event) to dst.
func appendHashInput(dst []byte, h header, event []byte) []byte {
	dst = append(dst, `{"event":`...)
	dst = append(dst, event...)
	dst = append(dst, `,"instance":`...)
	dst = action.AppendJSONString(dst, h.instance)
	if h.keyID != "" {
		dst = append(dst, `,"key_id":`...)
		dst = action.AppendJSONString(dst, h.keyID)
	}
	dst = append(dst, `,"prev_hash":`...)
	dst = action.AppendJSONString(dst, h.prevHash)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, h.seq, 10)
	dst = append(dst, `,"time":`...)
	dst = action.AppendJSONString(dst, h.ts)
	return append(dst, '}')
}

// hashOf is the hash a record must carry: HMAC under k for a keyed
// record, SHA-256 for an unkeyed one (k is then not used). The caller has
// checked that k is the key h.keyID names.
func hashOf(h header, event []byte, k *chainKey) string {
	return sumOf(hashInput(h, event), h.keyID != "", k)
}

// sumOf is hashOf of the text in.
func sumOf(in []byte, keyed bool, k *chainKey) string {
	if keyed {
		return k.sum(in)
	}
	sum := sha256.Sum256(in)
	return hex.EncodeToString(sum[:])
}

// seal builds the next record of a chain and its stored text, keyed under
// k when k is not nil.
func seal(seq uint64, now time.Time, instance, prevHash string, event any, k *chainKey) (Record, []byte, error) {
	ev, err := action.Canonical(event)
	if err != nil {
		return Record{}, nil, fmt.Errorf("audit event: %w", err)
	}
	return sealCanonical(seq, now, instance, prevHash, ev, k)
}

// sealCanonical is seal for an event already in canonical JSON.
func sealCanonical(seq uint64, now time.Time, instance, prevHash string, ev []byte, k *chainKey) (Record, []byte, error) {
	var s sealer
	return s.appendSealed(make([]byte, 0, recordBytes+len(ev)+len(instance)), seq, now, instance, prevHash, ev, k)
}

// A sealer seals records as sealCanonical does, reusing one buffer for
// the text each hash covers, so that a writer sealing record after record
// allocates for neither. It is not safe for concurrent use.
type sealer struct {
	in []byte
}

// keptBufferBytes bounds a buffer kept for reuse: one made for a rare
// large record is let go rather than held for the life of the log.
const keptBufferBytes = 64 << 10

// appendSealed appends the stored text of the next record (without a
// newline) to dst, and returns the record and the extended dst. On error
// dst is returned as it was.
func (s *sealer) appendSealed(dst []byte, seq uint64, now time.Time, instance, prevHash string, ev []byte, k *chainKey) (Record, []byte, error) {
	now = now.UTC().Round(0)
	h := header{seq: seq, ts: formatTime(now), instance: instance, prevHash: prevHash}
	if k != nil {
		h.keyID = k.id
	}
	if need := hashInputBytes + len(ev) + len(instance); cap(s.in) < need {
		s.in = make([]byte, 0, need)
	}
	s.in = appendHashInput(s.in[:0], h, ev)
	sum := sumOf(s.in, k != nil, k)
	if cap(s.in) > keptBufferBytes {
		s.in = nil
	}
	start := len(dst)
	dst = appendRecord(dst, h, ev, sum)
	if n := len(dst) - start; n > maxRecordBytes {
		return Record{}, dst[:start], fmt.Errorf("audit event: record of %d bytes exceeds %d", n, maxRecordBytes)
	}
	return Record{Seq: seq, Time: now, Instance: instance, KeyID: h.keyID, PrevHash: prevHash, Event: ev, Hash: sum}, dst, nil
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
	// ProblemWrongKey: the record is keyed with another key than the one
	// given (its key_id differs): the wrong key was given, or the chain
	// was rewritten by someone with a key of their own.
	ProblemWrongKey Problem = "wrong_key"
	// ProblemUnkeyed: an unkeyed record where a keyed one is required:
	// after a keyed record (a downgrade), or, when a key was given
	// without AllowUnkeyed, anywhere. A chain rewritten by someone who
	// cannot read the key ends up here.
	ProblemUnkeyed Problem = "unkeyed"
)

// recordError is why one line is not a valid record on its own.
type recordError struct {
	problem Problem
	msg     string
	// needKey: the record is keyed and no key was given; not a verdict
	// on the record, the verifiers turn it into ErrKeyRequired.
	needKey bool
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
	KeyID    *string         `json:"key_id"`
	PrevHash *string         `json:"prev_hash"`
	Event    json.RawMessage `json:"event"`
	Hash     *string         `json:"hash"`
}

func isHexHash(s string) bool { return isHex(s, 64) }

// isHex reports whether s is n lower-case hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
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
// checks that it is in stored form and that its hash matches its content:
// its HMAC under k when it is keyed, its SHA-256 when not. A keyed record
// with k nil is a recordError with needKey set. It does not check the
// links to other records, nor whether an unkeyed record is acceptable
// where it is.
func parseRecord(line []byte, k *chainKey) (Record, *recordError) {
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
	h := header{seq: *w.Seq, ts: *w.Time, instance: *w.Instance, prevHash: *w.PrevHash}
	if w.KeyID != nil {
		// An empty key_id is not in stored form: the text check below
		// refuses it, since encodeRecord leaves the key out.
		h.keyID = *w.KeyID
		if h.keyID != "" && !isHex(h.keyID, KeyIDLen) {
			return Record{}, badRecord(ProblemNotCanonical, "seq %d: key_id is not %d lower-case hex digits", *w.Seq, KeyIDLen)
		}
	}
	ev, err := action.Canonical(w.Event)
	if err != nil {
		return Record{}, badRecord(ProblemNotRecord, "seq %d: event: %v", *w.Seq, err)
	}
	if !bytes.Equal(encodeRecord(h, ev, *w.Hash), line) {
		return Record{}, badRecord(ProblemNotCanonical, "seq %d: record text is not in stored form (edited)", *w.Seq)
	}
	if h.keyID != "" {
		switch {
		case k == nil:
			e := badRecord(ProblemNone, "seq %d is keyed (key_id %s) and no key was given", *w.Seq, h.keyID)
			e.needKey = true
			return Record{}, e
		case h.keyID != k.id:
			return Record{}, badRecord(ProblemWrongKey, "seq %d: keyed with key_id %s, but the key given has key_id %s (the wrong key, or the chain was rewritten with another key)", *w.Seq, h.keyID, k.id)
		}
	}
	if !equalHash(hashOf(h, ev, k), *w.Hash) {
		if h.keyID != "" {
			return Record{}, badRecord(ProblemHash, "seq %d: hash is not the record's HMAC under the key (edited, or forged without the key)", *w.Seq)
		}
		return Record{}, badRecord(ProblemHash, "seq %d: hash does not match the record's content (edited)", *w.Seq)
	}
	return Record{Seq: *w.Seq, Time: t.UTC(), Instance: *w.Instance, KeyID: h.keyID, PrevHash: *w.PrevHash, Event: ev, Hash: *w.Hash}, nil
}
