package audit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

// Bounds of one Replay call. Variables so tests can lower them.
var (
	// replayScanBytes bounds what one JSONL Replay reads: past it the
	// page ends with a Next that resumes the scan.
	replayScanBytes int64 = 64 << 20
	// replayPageBytes bounds the record text one page holds (at least
	// one record is always returned).
	replayPageBytes = 8 << 20
)

// markEvery is how many records apart the seq -> offset marks are.
const markEvery = 1024

// replayMark says that the line of seq starts at off.
type replayMark struct {
	seq uint64
	off int64
}

// replayMarks is a sparse index of a JSONL file (one mark per markEvery
// records, so about 16 bytes per thousand records), filled in as replays
// read the file, so that a page after a cursor starts near it rather
// than at the start of the file. It is only used while the file's seqs
// grow by one per line; a file where they do not (edited) is scanned
// from the start.
type replayMarks struct {
	mu     sync.Mutex
	marks  []replayMark
	broken bool
}

// start returns where a scan for records after seq after may start: the
// offset of a line whose seq is at most after+1, every line before it
// having a smaller seq.
func (m *replayMarks) start(after uint64, size int64) (int64, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.marks); n > 0 && m.marks[n-1].off >= size {
		// The file shrank below what was indexed: it was truncated.
		m.marks = nil
	}
	if m.broken {
		return 0, 0
	}
	i := sort.Search(len(m.marks), func(i int) bool { return m.marks[i].seq > after+1 })
	if i == 0 {
		return 0, 0
	}
	return m.marks[i-1].off, m.marks[i-1].seq
}

// note records that the line of seq starts at off, if it is due for a mark.
func (m *replayMarks) note(seq uint64, off int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := len(m.marks)
	switch {
	case m.broken:
	case n == 0:
		// The first mark is the file's first line.
		if off == 0 {
			m.marks = append(m.marks, replayMark{seq, off})
		}
	case seq >= m.marks[n-1].seq+markEvery && off > m.marks[n-1].off:
		m.marks = append(m.marks, replayMark{seq, off})
	}
}

func (m *replayMarks) breakIndex() {
	m.mu.Lock()
	m.broken, m.marks = true, nil
	m.mu.Unlock()
}

var _ Replayer = (*JSONL)(nil)

// Replay returns the records of q's session or task after q.After, in the
// order of the file (the cursor is the record's seq). It reads the file
// through the log's own descriptor, without its lock: lines are appended
// whole, and a last line still being written (no newline yet) is left
// for the next call. It holds one record at a time beside the page, reads
// at most 64 MiB per call and stops when ctx is done. Records another
// process appended are seen; lines that are not records (verify reports
// those) are skipped. Records are not verified here: that is
// VerifyJSONL's job.
func (l *JSONL) Replay(ctx context.Context, q Query) (Page, error) {
	q, err := q.normalize()
	if err != nil {
		return Page{}, err
	}
	// Not under the log's lock, which an append holds while it waits
	// for another process's: a closed log shows in the file's errors.
	st, err := l.rw.Stat()
	if err != nil {
		return Page{}, replayError(l.path, err)
	}
	page, err := l.replay(ctx, q, l.rw, st.Size())
	if err != nil {
		return Page{}, replayError(l.path, err)
	}
	return page, nil
}

func replayError(path string, err error) error {
	if errors.Is(err, os.ErrClosed) {
		return ErrClosed
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("audit replay: %w", err)
	}
	return fmt.Errorf("audit replay %s: %w", path, err)
}

// replay is Replay over the first size bytes of ra, the log's file.
func (l *JSONL) replay(ctx context.Context, q Query, ra io.ReaderAt, size int64) (Page, error) {
	off, prevSeq := l.marks.start(q.After, size)
	if prevSeq > 0 {
		prevSeq-- // the seq expected before the mark's line
	}
	r := bufio.NewReaderSize(io.NewSectionReader(ra, off, size-off), 64<<10)
	needle := q.needle()
	var (
		page      Page
		pageBytes int
		scanned   int64
		lastSeq   uint64 // the last record read
		buf       []byte
	)
	for lines := 0; ; lines++ {
		if lines%256 == 0 {
			if err := ctx.Err(); err != nil {
				return Page{}, err
			}
		}
		if scanned >= replayScanBytes && lastSeq > q.After {
			// Bounded work per call: resume after what was read.
			page.Next = lastSeq
			return page, nil
		}
		var (
			line     []byte
			n        int64
			complete bool
			err      error
		)
		line, n, complete, buf, err = readRecordLine(r, buf)
		if err != nil && !errors.Is(err, io.EOF) {
			return Page{}, err
		}
		if !complete {
			// End of the file, or a line still being written.
			page.Next = 0
			return page, nil
		}
		lineOff := off
		off += n
		scanned += n
		seq, ok := lineSeq(line)
		if !ok {
			continue
		}
		if prevSeq != 0 && seq != prevSeq+1 {
			l.marks.breakIndex()
		}
		prevSeq = seq
		l.marks.note(seq, lineOff)
		if seq <= q.After {
			continue
		}
		lastSeq = seq
		if !bytes.Contains(line, needle) {
			continue
		}
		rec, err := decodeStored(line)
		if err != nil || !q.matches(keysOf(rec.Event)) {
			continue
		}
		if len(page.Events) == q.Limit || (len(page.Events) > 0 && pageBytes+len(line) > replayPageBytes) {
			// One more match exists: the page is full.
			page.Next = page.Events[len(page.Events)-1].Seq
			return page, nil
		}
		page.Events = append(page.Events, rec)
		pageBytes += len(line)
	}
}

// readRecordLine reads one line of at most maxRecordBytes (without its
// newline). n is the bytes consumed, newline included; complete is false
// at the end of the input without a newline. A longer line is consumed
// and returned empty (it is not a record). buf is reused between calls.
func readRecordLine(r *bufio.Reader, buf []byte) (line []byte, n int64, complete bool, _ []byte, err error) {
	buf = buf[:0]
	long := false
	for {
		frag, err := r.ReadSlice('\n')
		n += int64(len(frag))
		switch {
		case long:
		case len(buf)+len(frag) > maxRecordBytes+1:
			long, buf = true, buf[:0]
		case err == nil && len(buf) == 0:
			// The common case: the whole line is in the reader's buffer.
			return frag[:len(frag)-1], n, true, buf, nil
		default:
			buf = append(buf, frag...)
		}
		switch {
		case err == nil && long:
			return nil, n, true, buf, nil
		case err == nil:
			return buf[:len(buf)-1], n, true, buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, n, false, buf, err
		}
	}
}

// lineSeq reads the seq of a stored record from the start of its text
// ({"seq":N,...}) without decoding the rest.
func lineSeq(line []byte) (uint64, bool) {
	const prefix = `{"seq":`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return 0, false
	}
	rest := line[len(prefix):]
	i := bytes.IndexByte(rest, ',')
	if i <= 0 || i > 20 {
		return 0, false
	}
	seq, err := strconv.ParseUint(string(rest[:i]), 10, 64)
	return seq, err == nil && seq > 0
}

// decodeStored decodes a stored record's text without checking its hash
// or its form: replay shows what the log holds; verifying it is the
// verifier's job.
func decodeStored(line []byte) (Record, error) {
	var w wireRecord
	if err := json.Unmarshal(line, &w); err != nil {
		return Record{}, err
	}
	if w.Seq == nil || w.Time == nil || w.Instance == nil || w.PrevHash == nil || w.Event == nil || w.Hash == nil {
		return Record{}, errors.New("not a record")
	}
	t, err := time.Parse(time.RFC3339Nano, *w.Time)
	if err != nil {
		return Record{}, err
	}
	rec := Record{Seq: *w.Seq, Time: t.UTC(), Instance: *w.Instance, PrevHash: *w.PrevHash, Event: w.Event, Hash: *w.Hash}
	if w.KeyID != nil {
		rec.KeyID = *w.KeyID
	}
	return rec, nil
}
