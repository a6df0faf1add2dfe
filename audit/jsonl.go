package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
)

// JSONL is an audit log in a local file, one record per line. It is safe
// for concurrent use by many goroutines, and several processes may append
// to one file: each append holds an exclusive flock on the file (where the
// OS has flock) while it reads the head of the chain, if another writer
// moved it, and writes its record, so the chain never forks.
//
// It does not rotate files and does not stop a user with write access to
// the file from rewriting it; the verifier finds such changes.
type JSONL struct {
	mu       sync.Mutex
	path     string
	rw       *os.File // read-write: the flock, reading the tail, repairs
	f        *os.File // O_APPEND: records are written here
	instance string
	now      func() time.Time
	syncFile func(*os.File) error
	seq      uint64 // head of the chain as of this log's last look
	prev     string
	end      int64 // file size after this log's last look; -1: unknown
	broken   error
	closed   bool
}

var _ Log = (*JSONL)(nil)

// OpenJSONL opens the JSONL log at path for appending, creating it with
// mode 0600 when it does not exist, and continues its chain after the last
// record. A torn last line is moved aside and recorded in the chain (see
// the package documentation); a last complete line that is not a valid
// record is refused with ErrCorrupt. Earlier records are not verified here:
// that is VerifyJSONL's job.
func OpenJSONL(path string, opts ...Option) (*JSONL, error) {
	cfg := newConfig(opts)
	if cfg.instance == "" {
		cfg.instance = DefaultInstance()
	}
	rw, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	l := &JSONL{path: path, rw: rw, instance: cfg.instance, now: cfg.now,
		syncFile: (*os.File).Sync, prev: ZeroHash, end: -1}
	if err := l.open(); err != nil {
		rw.Close()
		if l.f != nil {
			l.f.Close()
		}
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	return l, nil
}

func (l *JSONL) open() error {
	var err error
	if l.f, err = os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return err
	}
	// The file may just have been created: make its directory entry durable.
	if err := syncDir(filepath.Dir(l.path)); err != nil {
		return err
	}
	unlock, err := lockFile(context.Background(), l.rw)
	if err != nil {
		return err
	}
	defer unlock()
	return l.refresh()
}

// refresh reads the head of the chain again if the file changed since this
// log last looked, and repairs a torn last line. The caller holds the flock.
func (l *JSONL) refresh() error {
	st, err := l.rw.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size == l.end {
		return nil
	}
	if size < l.end {
		// Only a truncation does this: appenders never shrink the file.
		// The chain goes on from what is left; verifying against an
		// anchor shows what went.
		slog.Warn("audit log is shorter than this process last wrote it: records were removed",
			"path", l.path, "size", size, "was", l.end)
	}
	end, last, err := lastLine(l.rw, size)
	if err != nil {
		return err
	}
	seq, prev := uint64(0), ZeroHash
	if last != nil {
		rec, bad := parseRecord(last)
		if bad != nil {
			return fmt.Errorf("%w: last complete record: %s (run harness audit verify)", ErrCorrupt, bad.msg)
		}
		seq, prev = rec.Seq, rec.Hash
	}
	l.seq, l.prev, l.end = seq, prev, end
	if end < size {
		if err := l.repairTornTail(end, size-end); err != nil {
			return fmt.Errorf("repair torn last line: %w", err)
		}
	}
	return nil
}

// TornTailKind is the "kind" of the event a JSONL log writes (on open, or
// on append after another writer crashed) after moving a torn last line
// aside.
const TornTailKind = "audit_torn_tail"

// repairTornTail copies the n bytes after offset end aside, then writes
// over them a record saying so. The copy is durable before the log is
// changed, so the dropped bytes are never lost.
func (l *JSONL) repairTornTail(end, n int64) error {
	now := l.now()
	aside := fmt.Sprintf("%s.torn-%d", l.path, now.UnixNano())
	af, err := os.OpenFile(aside, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(af, h), io.NewSectionReader(l.rw, end, n))
	if err == nil {
		err = af.Sync()
	}
	if cerr := af.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(aside))
	}
	if err != nil {
		return fmt.Errorf("save torn bytes to %s: %w", aside, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	event := map[string]any{"kind": TornTailKind, "bytes": n, "sha256": sum, "saved_to": filepath.Base(aside)}
	rec, line, err := seal(l.seq+1, now, l.instance, l.prev, event)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	if _, err := l.rw.WriteAt(line, end); err != nil {
		return err
	}
	if err := l.rw.Truncate(end + int64(len(line))); err != nil {
		return err
	}
	if err := l.rw.Sync(); err != nil {
		return err
	}
	l.seq, l.prev, l.end = rec.Seq, rec.Hash, end+int64(len(line))
	slog.Warn("audit log ended in a torn line; moved it aside and recorded that in the chain",
		"path", l.path, "bytes", n, "sha256", sum, "saved_to", aside, "seq", rec.Seq)
	return nil
}

// lastLine finds, in the first size bytes of f, the end of the last
// complete line (the offset after its newline, 0 when there is none) and
// that line's text without the newline (nil when there is none).
func lastLine(f *os.File, size int64) (end int64, last []byte, err error) {
	nl, err := lastNewline(f, size, size)
	if err != nil || nl < 0 {
		return 0, nil, err
	}
	span := int64(maxRecordBytes) + 1
	start, err := lastNewline(f, nl, span)
	if err != nil {
		return 0, nil, err
	}
	if start < 0 && nl > span {
		return 0, nil, fmt.Errorf("%w: last line is longer than %d bytes", ErrCorrupt, maxRecordBytes)
	}
	last = make([]byte, nl-start-1)
	if _, err := f.ReadAt(last, start+1); err != nil {
		return 0, nil, err
	}
	return nl + 1, last, nil
}

// lastNewline returns the offset of the last '\n' before offset before,
// looking back at most span bytes; -1 when there is none.
func lastNewline(f *os.File, before, span int64) (int64, error) {
	buf := make([]byte, 64<<10)
	stop := max(before-span, 0)
	for pos := before; pos > stop; {
		n := min(int64(len(buf)), pos-stop)
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return pos + int64(i), nil
		}
	}
	return -1, nil
}

// Append writes event as the next record. With durable=true the file is
// fsync'd before Append returns. The context is checked before the append
// starts; the wait for another process's append (one write and at most one
// fsync) and the write itself are not interrupted.
func (l *JSONL) Append(ctx context.Context, event any, durable bool) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("audit append: %w", err)
	}
	ev, err := action.Canonical(event)
	if err != nil {
		return Record{}, fmt.Errorf("audit append: event: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return Record{}, ErrClosed
	case l.broken != nil:
		return Record{}, fmt.Errorf("%w: %s: %v", ErrBroken, l.path, l.broken)
	}
	unlock, err := lockFile(ctx, l.rw)
	if err != nil {
		return Record{}, fmt.Errorf("audit append to %s: %w", l.path, err)
	}
	defer unlock()
	if err := l.refresh(); err != nil {
		return Record{}, fmt.Errorf("audit append to %s: %w", l.path, err)
	}
	rec, line, err := sealCanonical(l.seq+1, l.now(), l.instance, l.prev, ev)
	if err != nil {
		return Record{}, fmt.Errorf("audit append: %w", err)
	}
	line = append(line, '\n')
	if _, err := l.f.Write(line); err != nil {
		l.broken = err
		return Record{}, fmt.Errorf("audit append to %s: %w", l.path, err)
	}
	l.seq, l.prev, l.end = rec.Seq, rec.Hash, l.end+int64(len(line))
	if durable {
		if err := l.syncFile(l.f); err != nil {
			// After a failed fsync the kernel may have dropped the data:
			// nothing written since the last good fsync can be trusted.
			l.broken = err
			return Record{}, fmt.Errorf("audit append to %s: fsync: %w", l.path, err)
		}
	}
	return rec, nil
}

// Sync makes every record appended so far durable.
func (l *JSONL) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.syncFile(l.f); err != nil {
		l.broken = err
		return fmt.Errorf("audit sync %s: %w", l.path, err)
	}
	return nil
}

// Head returns the seq and hash of the last record as this log last saw
// it (0 and ZeroHash for an empty log); other writers may have appended
// since.
func (l *JSONL) Head() (uint64, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq, l.prev
}

// Close syncs and closes the log. Append after Close returns ErrClosed;
// closing twice is not an error.
func (l *JSONL) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	if l.broken == nil {
		err = l.syncFile(l.f)
	}
	err = errors.Join(err, l.f.Close(), l.rw.Close())
	if err != nil {
		return fmt.Errorf("audit close %s: %w", l.path, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
