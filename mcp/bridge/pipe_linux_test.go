package bridge

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		out := newGatedOutput(w)
		growOutputBuffer(out.raw, out.mode)
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
		out := newGatedOutput(a)
		growOutputBuffer(out.raw, out.mode)
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
		out := newGatedOutput(&bytes.Buffer{})
		growOutputBuffer(out.raw, out.mode) // nothing to do, and no panic
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

// socketPair returns the two ends of a new stream socket pair, one to read
// and one to write, as forEachPipe uses them.
var socketPair = func(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "socket-r"), os.NewFile(uintptr(fds[1]), "socket-w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// TestSendParts: a message in parts arrives whole and in order on every
// kind of output. On a socket with room for it, it goes out without
// blocking and without the block callback; on a socket that cannot take
// it (a client not reading), the callback comes first, once, and the rest
// is written as the client reads. On a pipe the callback always comes
// first (a pipe is not written without blocking), and on a writer that is
// not a file the parts go out in one Write.
func TestSendParts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	message := func(n int) ([][]byte, []byte) {
		whole := make([]byte, n)
		for i := range whole {
			whole[i] = byte('a' + rng.IntN(26))
		}
		a, b := rng.IntN(n), rng.IntN(n)
		a, b = min(a, b), max(a, b)
		return [][]byte{whole[:a:a], whole[a:b:b], whole[b:]}, whole
	}
	readAll := func(r io.Reader, n int) chan []byte {
		got := make(chan []byte, 1)
		go func() {
			b := make([]byte, n)
			_, _ = io.ReadFull(r, b)
			got <- b
		}()
		return got
	}
	t.Run("socket with room", func(t *testing.T) {
		r, w := socketPair(t)
		out := newGatedOutput(w)
		require.True(t, out.socket)
		for _, n := range []int{1, 100, 64 << 10} {
			parts, whole := message(n)
			blocked := 0
			require.NoError(t, out.sendParts(parts, func() { blocked++ }))
			assert.Zero(t, blocked, "%d bytes: the socket had room", n)
			assert.Equal(t, whole, <-readAll(r, n))
		}
	})
	t.Run("socket without room", func(t *testing.T) {
		r, w := socketPair(t)
		require.NoError(t, unix.SetsockoptInt(int(w.Fd()), unix.SOL_SOCKET, unix.SO_SNDBUF, 4096))
		out := newGatedOutput(w)
		parts, whole := message(1 << 20)
		var blocked atomic.Int32
		sent := make(chan error, 1)
		go func() { sent <- out.sendParts(parts, func() { blocked.Add(1) }) }()
		require.Eventually(t, func() bool { return blocked.Load() == 1 }, 5*time.Second, time.Millisecond,
			"the callback before the write blocks")
		got := readAll(r, len(whole))
		require.NoError(t, <-sent)
		assert.Equal(t, whole, <-got)
		assert.Equal(t, int32(1), blocked.Load())
	})
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		defer r.Close()
		defer w.Close()
		out := newGatedOutput(w)
		require.False(t, out.socket)
		parts, whole := message(200 << 10) // more than a pipe's default buffer
		got := readAll(r, len(whole))
		blocked := 0
		require.NoError(t, out.sendParts(parts, func() { blocked++ }))
		assert.Equal(t, 1, blocked)
		assert.Equal(t, whole, <-got)
	})
	t.Run("not a file", func(t *testing.T) {
		var w countingWriter
		out := newGatedOutput(&w)
		parts, whole := message(1000)
		blocked := 0
		require.NoError(t, out.sendParts(parts, func() { blocked++ }))
		assert.Equal(t, 1, blocked)
		assert.Equal(t, 1, w.writes, "one Write")
		assert.Equal(t, whole, w.Bytes())
	})
	t.Run("another write under way", func(t *testing.T) {
		var w countingWriter
		out := newGatedOutput(&w)
		out.turn <- struct{}{} // a write under way
		blocked := make(chan struct{})
		sent := make(chan error, 1)
		go func() { sent <- out.sendParts([][]byte{[]byte("x")}, func() { close(blocked) }) }()
		<-blocked // before waiting for the turn
		<-out.turn
		require.NoError(t, <-sent)
		assert.Equal(t, "x", w.String())
	})
	t.Run("closed", func(t *testing.T) {
		_, w := socketPair(t)
		out := newGatedOutput(w)
		out.close()
		err := out.sendParts([][]byte{[]byte("x")}, func() { t.Error("the callback of a write that never happens") })
		assert.ErrorIs(t, err, errOutputClosed)
	})
}

// countingWriter is a bytes.Buffer that counts its writes.
type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}
