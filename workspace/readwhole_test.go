package workspace

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
