package bridge

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestGrowOutputBuffer(t *testing.T) {
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		defer w.Close()
		growOutputBuffer(w)
		size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
		if err != nil {
			t.Fatal(err)
		}
		want := stdioBufferBytes
		if os.Geteuid() != 0 { // only root may exceed fs.pipe-max-size
			want = min(want, sysctlInt(t, "/proc/sys/fs/pipe-max-size"))
		}
		if size < want {
			t.Errorf("pipe buffer %d bytes, want at least %d", size, want)
		}
	})
	t.Run("socket pair", func(t *testing.T) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
		defer a.Close()
		defer b.Close()
		growOutputBuffer(a)
		size, err := unix.GetsockoptInt(fds[0], unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil {
			t.Fatal(err)
		}
		// The system caps what may be set at net.core.wmem_max.
		want := min(stdioBufferBytes, sysctlInt(t, "/proc/sys/net/core/wmem_max"))
		if size < want { // Linux reports twice what was set
			t.Errorf("send buffer %d bytes, want at least %d", size, want)
		}
	})
	t.Run("not a file", func(t *testing.T) {
		growOutputBuffer(&bytes.Buffer{}) // nothing to do, and no panic
	})
}

func sysctlInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
