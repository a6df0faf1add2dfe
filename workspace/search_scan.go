package workspace

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// scanner is one worker's state: its read buffer is reused across files.
type scanner struct {
	m     *matcher
	buf   []byte
	limit int
	cur   litCursor
	dev   rootDevice // of the search root
}

func newScanner(m *matcher, limit int) *scanner {
	return &scanner{m: m, buf: make([]byte, searchBufSize), limit: limit, cur: make(litCursor, len(m.req))}
}

// scanFile searches the file name of dir (rel from the workspace root).
// scanned is false when the file could not be opened, is not a regular
// file, or is binary.
func (sc *scanner) scanFile(ctx context.Context, dir *os.Root, name, rel string) (ms []match, scanned bool) {
	f, err := dir.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	// The type seen in the directory listing may be stale: check the
	// handle itself, so a FIFO or device swapped in is never read.
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	// A file on another device than the search root (a bind mount, or an
	// overlay file system's lower layer) may be a view of /proc or /sys:
	// check its file system then, and only then, to keep the common case
	// at one fstat.
	if !sc.dev.holds(fi) && pseudoFSOf(f) != "" {
		return nil, false
	}
	ms, binary, _ := sc.scan(ctx, f, fi.Size(), rel)
	return ms, !binary
}

// scan streams r through the buffer, a region of whole lines at a time,
// and returns up to sc.limit matches. size is the length fstat reported
// at open: reading stops there, which saves a read per file (a file that
// grows meanwhile is searched as it was).
func (sc *scanner) scan(ctx context.Context, r io.Reader, size int64, rel string) (ms []match, binary bool, err error) {
	buf := sc.buf
	n := 0          // bytes held in buf
	lineNo := 1     // line number of buf[0]
	var total int64 // bytes read so far
	first := true
	eof := size == 0
	for n > 0 || !eof {
		if ctx.Err() != nil {
			return ms, false, ctx.Err()
		}
		if n == len(buf) && len(buf) < searchMaxLine {
			nb := make([]byte, 2*len(buf))
			copy(nb, buf[:n])
			buf = nb
			sc.buf = nb
		}
		for n < len(buf) && !eof {
			k, rerr := r.Read(buf[n:])
			n += k
			total += int64(k)
			switch {
			case rerr == io.EOF, rerr == nil && k == 0:
				eof = true
			case rerr != nil:
				return ms, false, rerr
			case size >= 0 && total >= size:
				eof = true
			}
		}
		if first {
			first = false
			if bytes.IndexByte(buf[:min(n, binarySniffBytes)], 0) >= 0 {
				return nil, true, nil
			}
		}
		end := n
		if !eof {
			end = bytes.LastIndexByte(buf[:n], '\n') + 1
			if end == 0 {
				if len(buf) < searchMaxLine {
					continue // grow and read more of this line
				}
				end = n // a line longer than the cap: searched in pieces
			}
		}
		region := buf[:end]
		sc.cur.reset()
		counted := 0
		from := 0
		for from < len(region) {
			pos, ok := sc.m.next(region, from, sc.cur)
			if !ok || (pos == len(region) && region[pos-1] == '\n') {
				// An empty match after the last "\n" is at the start of
				// the next region's first line, not on a line of this one.
				break
			}
			ls, le := lineBounds(region, pos)
			lineNo += bytes.Count(region[counted:ls], newline)
			counted = ls
			ms = append(ms, match{path: rel, line: lineNo, column: pos - ls + 1, text: lineText(region[ls:le], pos-ls)})
			if len(ms) >= sc.limit {
				return ms, false, nil
			}
			from = le + 1
		}
		lineNo += bytes.Count(region[counted:], newline)
		n = copy(buf, buf[end:n])
	}
	return ms, false, nil
}

var newline = []byte{'\n'}

// lineText returns the line for a result: without its "\r", valid UTF-8,
// and at most maxLineText bytes, taken around col when the line is longer.
func lineText(line []byte, col int) string {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > maxLineText {
		start := max(0, min(col-maxLineText/4, len(line)-maxLineText))
		for start > 0 && !utf8.RuneStart(line[start]) {
			start--
		}
		end := min(len(line), start+maxLineText)
		for end < len(line) && end > start && !utf8.RuneStart(line[end]) {
			end--
		}
		line = line[start:end]
	}
	return strings.ToValidUTF8(string(line), "\uFFFD")
}
