package audit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Report is the result of verifying one or more chains.
type Report struct {
	// Records counts the records that verified, in order, before the
	// first bad one (all of them when the chain is good).
	Records int `json:"records"`
	// FirstBad is the seq expected at the first bad record: the record
	// that was edited, the first one missing, or the first out of order.
	// 0 means the chain verified.
	FirstBad uint64 `json:"first_bad,omitempty"`
	// Line is the 1-based line (JSONL) or row of the chain ordered by
	// seq (Postgres) where the first bad record is; 0 when none.
	Line int `json:"line,omitempty"`
	// Problem classifies the first bad record; ProblemNone when good.
	Problem Problem `json:"problem,omitempty"`
	// Reason says in words what is wrong with the first bad record.
	Reason string `json:"reason,omitempty"`
	// Instance is the chain the report is about in Postgres (the failed
	// one when several were verified); empty for JSONL.
	Instance string `json:"instance,omitempty"`
	// Chains counts the chains verified (1 for JSONL).
	Chains int `json:"chains"`
	// LastSeq and LastHash are the head of the last chain verified, up to
	// the last good record: the values to keep elsewhere to detect later
	// removal of records from the end, which no chain can show by itself.
	LastSeq  uint64 `json:"last_seq"`
	LastHash string `json:"last_hash"`
	// KeyID is the key_id of the keyed records that verified (see
	// KeyID); empty when none did.
	KeyID string `json:"key_id,omitempty"`
	// Unkeyed counts the records that verified without a key, by their
	// SHA-256 alone: anyone who could write the log could have written
	// them. They are at the start of a chain (Records - Unkeyed keyed
	// records follow them).
	Unkeyed int `json:"unkeyed,omitempty"`
}

// OK reports whether every record verified.
func (r Report) OK() bool { return r.Problem == ProblemNone }

// String is a one-line summary: "ok: N records, head seq S hash H", then
// in parentheses whether the records are keyed, or "bad: seq S (line L):
// problem: reason".
func (r Report) String() string {
	if r.OK() {
		s := fmt.Sprintf("ok: %d records, head seq %d hash %s", r.Records, r.LastSeq, r.LastHash)
		if r.Chains > 1 {
			s += fmt.Sprintf(" (last of %d chains)", r.Chains)
		}
		switch {
		case r.Records == 0:
		case r.Unkeyed == 0:
			s += fmt.Sprintf(" (keyed, key_id %s)", r.KeyID)
		case r.Unkeyed == r.Records:
			s += " (unkeyed: SHA-256 only, so anyone who could write the log could have rewritten it)"
		default:
			s += fmt.Sprintf(" (keyed, key_id %s, after %d unkeyed records)", r.KeyID, r.Unkeyed)
		}
		return s
	}
	where := fmt.Sprintf("line %d", r.Line)
	if r.Instance != "" {
		where = fmt.Sprintf("instance %q, row %d", r.Instance, r.Line)
	}
	return fmt.Sprintf("bad: seq %d (%s): %s: %s", r.FirstBad, where, r.Problem, r.Reason)
}

// Anchor is a head of a chain recorded outside the log (for example the
// "head seq S hash H" that verify printed yesterday). A chain verified
// against it must reach seq Seq and, when Hash is set, hold a record Seq
// with that hash. Records appended since are fine.
type Anchor struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash,omitempty"`
}

// ParseAnchor reads "SEQ" or "SEQ:HASH".
func ParseAnchor(s string) (Anchor, error) {
	seqText, hash, _ := strings.Cut(s, ":")
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil || seq == 0 {
		return Anchor{}, fmt.Errorf("audit anchor %q: want SEQ or SEQ:HASH with SEQ >= 1", s)
	}
	if hash != "" && !isHexHash(hash) {
		return Anchor{}, fmt.Errorf("audit anchor %q: the hash is not 64 lower-case hex digits", s)
	}
	return Anchor{Seq: seq, Hash: hash}, nil
}

// chain checks records one after another against the links of the chain.
type chain struct {
	next   uint64
	prev   string
	line   int
	count  int
	anchor Anchor
	key    *chainKey // nil: keyed records cannot be checked
	// allowUnkeyed: unkeyed records before the first keyed one verify
	// (always so without a key).
	allowUnkeyed bool
	keyed        bool // a keyed record verified
}

// newChain starts a chain check with the anchor and key of cfg.
func newChain(cfg config) (*chain, error) {
	key, err := chainKeyOf(cfg)
	if err != nil {
		return nil, fmt.Errorf("audit verify: %w", err)
	}
	return &chain{next: 1, prev: ZeroHash, anchor: cfg.anchor, key: key,
		allowUnkeyed: key == nil || cfg.allowUnkeyed}, nil
}

// fail fills rep for a bad record at the current line.
func (c *chain) fail(rep *Report, p Problem, reason string) {
	rep.FirstBad = c.next
	rep.Line = c.line
	rep.Problem = p
	rep.Reason = reason
}

// add checks the next record text, and with check (when not nil) what the
// store knows about it besides; on failure it fills rep and returns false.
// A keyed record without a key is the one error (ErrKeyRequired): the
// chain can be checked no further.
func (c *chain) add(text []byte, rep *Report, check func(Record) *recordError) (bool, error) {
	c.line++
	rec, bad := parseRecord(text, c.key)
	if bad != nil && bad.needKey {
		return false, fmt.Errorf("%w: line %d: %s", ErrKeyRequired, c.line, bad.msg)
	}
	if bad == nil && check != nil {
		bad = check(rec)
	}
	if bad != nil {
		c.fail(rep, bad.problem, bad.msg)
		return false, nil
	}
	if rec.KeyID == "" {
		switch {
		case c.keyed:
			c.fail(rep, ProblemUnkeyed, fmt.Sprintf("seq %d is unkeyed but follows keyed records: written (or rewritten) without the key", rec.Seq))
			return false, nil
		case !c.allowUnkeyed:
			c.fail(rep, ProblemUnkeyed, fmt.Sprintf("seq %d is unkeyed, but a key was given: the log was written without the key, or rewritten by someone without it (an older log written before keying verifies with --allow-unkeyed)", rec.Seq))
			return false, nil
		}
	}
	if rec.Seq != c.next {
		c.fail(rep, ProblemSeq, fmt.Sprintf("found seq %d where seq %d was expected (record deleted, inserted or reordered)", rec.Seq, c.next))
		return false, nil
	}
	if rec.PrevHash != c.prev {
		c.fail(rep, ProblemPrevHash, fmt.Sprintf("seq %d: prev_hash is not the hash of seq %d (one of them was replaced)", rec.Seq, rec.Seq-1))
		return false, nil
	}
	if rec.Seq == c.anchor.Seq && c.anchor.Hash != "" && rec.Hash != c.anchor.Hash {
		c.fail(rep, ProblemAnchor, fmt.Sprintf("seq %d has hash %s, but the anchor says %s (the chain was rewritten up to here)", rec.Seq, rec.Hash, c.anchor.Hash))
		return false, nil
	}
	c.next++
	c.prev = rec.Hash
	c.count++
	rep.Records++
	rep.LastSeq = rec.Seq
	rep.LastHash = rec.Hash
	if rec.KeyID != "" {
		c.keyed = true
		rep.KeyID = rec.KeyID
	} else {
		rep.Unkeyed++
	}
	return true, nil
}

// end checks, after the last record, that the chain reached the anchor.
func (c *chain) end(rep *Report) {
	if c.anchor.Seq >= c.next {
		c.line++
		c.fail(rep, ProblemTruncated, fmt.Sprintf("the chain ends at seq %d, but the anchor says seq %d existed (records removed from the end)", c.next-1, c.anchor.Seq))
	}
}

// VerifyJSONL reads a JSONL audit log to its end and verifies every record
// and every link of the chain. A bad chain is a Report with OK() false,
// naming the first bad record. The error is for a failure to read r, a key
// too short, and a keyed record met without a key (ErrKeyRequired; the
// report then counts the records verified before it). A last line without
// a newline is a bad record (ProblemTorn) even when it holds a valid
// record. The options that apply are WithAnchor, WithKey and AllowUnkeyed.
//
// Without a key, unkeyed records verify and the report says they are
// unkeyed (Report.Unkeyed). With a key, every record must be keyed with
// it: an unkeyed record is ProblemUnkeyed, unless AllowUnkeyed is given
// and no keyed record came before it.
func VerifyJSONL(r io.Reader, opts ...Option) (Report, error) {
	rep := Report{Chains: 1, LastHash: ZeroHash}
	c, err := newChain(newConfig(opts))
	if err != nil {
		return rep, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		text, complete, tooLong, err := readLine(br, maxRecordBytes)
		if err != nil {
			return rep, fmt.Errorf("audit verify: read line %d: %w", c.line+1, err)
		}
		if len(text) == 0 && !complete && !tooLong {
			c.end(&rep)
			return rep, nil
		}
		if tooLong {
			c.line++
			c.fail(&rep, ProblemNotRecord, fmt.Sprintf("line longer than %d bytes", maxRecordBytes))
			return rep, nil
		}
		if !complete {
			c.line++
			c.fail(&rep, ProblemTorn, fmt.Sprintf("last line has no newline: a torn write of %d bytes", len(text)))
			return rep, nil
		}
		if ok, err := c.add(text, &rep, nil); !ok {
			return rep, err
		}
	}
}

// VerifyJSONLFile verifies the JSONL log at path as VerifyJSONL does. It
// may run while writers append: it takes the writers' file lock just long
// enough to learn the size of the log, and verifies that many bytes, so a
// record being written is not mistaken for a torn one. ctx is checked before
// the wait for the lock.
//
// A symbolic link at path is refused (wrapping ErrNotLogFile), as OpenJSONL
// refuses it: the log verified is the one Harness would write.
func VerifyJSONLFile(ctx context.Context, path string, opts ...Option) (Report, error) {
	f, err := openLogFile(path, os.O_RDONLY)
	if err != nil {
		return Report{}, fmt.Errorf("audit verify: %w", err)
	}
	defer f.Close()
	unlock, err := lockFile(ctx, f)
	if err != nil {
		return Report{}, fmt.Errorf("audit verify: %w", err)
	}
	st, err := f.Stat()
	unlock()
	if err != nil {
		return Report{}, fmt.Errorf("audit verify: %w", err)
	}
	rep, err := VerifyJSONL(io.NewSectionReader(f, 0, st.Size()), opts...)
	if err != nil {
		return rep, fmt.Errorf("%s: %w", path, err)
	}
	return rep, nil
}

// readLine reads one line without its newline. complete is false when the
// input ended before a newline. A line longer than max is consumed but not
// kept (tooLong), so memory stays bounded.
func readLine(br *bufio.Reader, max int) (line []byte, complete, tooLong bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > max+1 {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		switch {
		case err == nil:
			if !tooLong {
				line = line[:len(line)-1]
			}
			return line, true, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return line, false, tooLong, nil
		default:
			return nil, false, false, err
		}
	}
}
