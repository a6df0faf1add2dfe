package workspace

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// checkReadWholeMatchesReadLines: size is what the stat said; content
// longer than size is a file that grew between its stat and its read.
func checkReadWholeMatchesReadLines(t *testing.T, content []byte, size, maxBytes int64) {
	t.Helper()
	want, err := readLines(context.Background(), bytes.NewReader(content), 0, 0, maxBytes)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readWhole(context.Background(), bytes.NewReader(content), size, maxBytes, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	// readFile returns no content for binary files.
	if want.binary {
		want.content = ""
	}
	if got.binary {
		got.content = ""
	}
	if got != want {
		t.Fatalf("content %q (size %d, max %d):\nreadWhole %+v\nreadLines %+v", content, size, maxBytes, got, want)
	}
}

func TestReadWholeMatchesReadLines(t *testing.T) {
	for _, c := range []string{"", "\n", "a", "a\n", "a\nb", "a\nb\n\n", "bin\x00ary\n", strings.Repeat("long line ", 10000), "x\r\ny\r\n"} {
		b := []byte(c)
		checkReadWholeMatchesReadLines(t, b, int64(len(b)), 1<<20)
		checkReadWholeMatchesReadLines(t, b, int64(len(b))/2, 1<<20) // grew since the stat
		checkReadWholeMatchesReadLines(t, b, int64(len(b)), 3)       // more than the cap
	}
}

func FuzzReadWhole(f *testing.F) {
	f.Add([]byte("a\nb"), uint16(3), uint16(100))
	f.Add([]byte("\x00\n"), uint16(0), uint16(1))
	f.Fuzz(func(t *testing.T, content []byte, size, maxBytes uint16) {
		checkReadWholeMatchesReadLines(t, content, int64(min(int(size), len(content))), int64(maxBytes))
	})
}

// TestReadToSizeIsReadFullOrTheFileAtItsFirstRead: readToSize reads what
// io.ReadFull reads, with the same error class (a full buffer: the file
// grew; short: its end), except that a first read of exactly size bytes
// ends it: the file as it was then. Readers that return one byte, half
// of what they are asked, or data with io.EOF stand for file systems
// that return short reads; sizes below, at and above the content's
// length stand for files that grew or shrank since their stat.
func TestReadToSizeIsReadFullOrTheFileAtItsFirstRead(t *testing.T) {
	readers := map[string]func(io.Reader) io.Reader{
		"whole":   func(r io.Reader) io.Reader { return r },
		"one":     iotest.OneByteReader,
		"half":    iotest.HalfReader,
		"dataerr": iotest.DataErrReader,
	}
	full := func(err error) bool { return err == nil }
	for _, c := range []string{"", "a", "ab", "abc\n", strings.Repeat("x", 4097)} {
		for size := int64(0); size <= int64(len(c))+2; size++ {
			for name, wrap := range readers {
				buf := make([]byte, size+1)
				n, err := readToSize(wrap(strings.NewReader(c)), buf, size)
				wantBuf := make([]byte, size+1)
				wantN, wantErr := io.ReadFull(wrap(strings.NewReader(c)), wantBuf)
				first, _ := wrap(strings.NewReader(c)).Read(make([]byte, size+1))
				if int64(first) == size && size > 0 && wantN > first {
					wantN, wantErr = first, io.ErrUnexpectedEOF // the file at its first read
				}
				if n != wantN || !bytes.Equal(buf[:n], wantBuf[:wantN]) || full(err) != full(wantErr) ||
					(err != nil && err != io.EOF && err != io.ErrUnexpectedEOF) {
					t.Fatalf("%q, size %d, %s reader: read %d bytes (%v), want %d (%v)", c, size, name, n, err, wantN, wantErr)
				}
			}
		}
	}
}
