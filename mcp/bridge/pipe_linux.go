package bridge

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// stdioBufferBytes is the buffer the bridge asks for on its output: a
// 64 KiB file read is a response of about 67 KB (its text, escaped, and
// the structured result), more than a pipe's default 64 KiB, and a larger
// file's more than a socket's default; the default buffers take such a
// response in several rounds of the writer blocking and the client
// waking, each a context switch on both sides.
const stdioBufferBytes = 1 << 20

// growOutputBuffer enlarges the kernel buffer of out when it is a pipe
// (F_SETPIPE_SZ) or a socket (SO_SNDBUF; Node.js gives a child's stdio
// as a socket pair). It is best effort: the system's limits may refuse,
// and then nothing changes.
func growOutputBuffer(out io.Writer) {
	f, ok := out.(*os.File)
	if !ok {
		return
	}
	fi, err := f.Stat()
	if err != nil {
		return
	}
	switch {
	case fi.Mode()&os.ModeNamedPipe != 0:
		_, _ = unix.FcntlInt(f.Fd(), unix.F_SETPIPE_SZ, stdioBufferBytes)
	case fi.Mode()&os.ModeSocket != 0:
		_ = unix.SetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_SNDBUF, stdioBufferBytes)
	}
}
