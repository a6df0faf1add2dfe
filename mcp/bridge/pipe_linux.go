package bridge

import (
	"errors"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// stdioBufferBytes is the buffer the bridge asks for on its output: a
// 64 KiB file read is a response of about 67 KB (its text, escaped, and
// the structured result), more than a pipe's default 64 KiB, and a larger
// file's more than a socket's default; the default buffers take such a
// response in several rounds of the writer blocking and the client
// waking, each a context switch on both sides.
const stdioBufferBytes = 1 << 20

// outputConn returns the descriptor of out when it is an *os.File (nil
// otherwise), and its type bits (os.ModeNamedPipe, os.ModeSocket).
func outputConn(out io.Writer) (syscall.RawConn, os.FileMode) {
	f, ok := out.(*os.File)
	if !ok {
		return nil, 0
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, 0
	}
	fi, err := f.Stat()
	if err != nil {
		return rc, 0
	}
	return rc, fi.Mode().Type()
}

// growOutputBuffer enlarges the kernel buffer of an output that is a pipe
// (F_SETPIPE_SZ) or a socket (SO_SNDBUF; Node.js gives a child's stdio
// as a socket pair). It is best effort: the system's limits may refuse,
// and then nothing changes.
func growOutputBuffer(rc syscall.RawConn, mode os.FileMode) {
	if rc == nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		switch {
		case mode&os.ModeNamedPipe != 0:
			_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, stdioBufferBytes)
		case mode&os.ModeSocket != 0:
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, stdioBufferBytes)
		}
	})
}

// sendNoWait writes what of parts the socket takes without blocking, and
// returns the rest: everything after an error too (SIGPIPE is not raised
// here), for the caller to write as it would have.
func sendNoWait(rc syscall.RawConn, parts [][]byte) [][]byte {
	return writeVec(rc, parts, func(fd int, p [][]byte) (int, error) {
		return unix.SendmsgBuffers(fd, p, nil, nil, unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL)
	})
}

// writeParts writes parts with writev, blocking as the descriptor does,
// and returns what it could not write: the rest after an error, or once
// the descriptor would block (a non-blocking one), for the caller to
// write as it would have.
func writeParts(rc syscall.RawConn, parts [][]byte) [][]byte {
	return writeVec(rc, parts, unix.Writev)
}

// writeVec writes parts to rc's descriptor with write, again after a
// partial write or an interruption, and returns what is left when all is
// written or write fails.
func writeVec(rc syscall.RawConn, parts [][]byte, write func(fd int, p [][]byte) (int, error)) [][]byte {
	_ = rc.Write(func(fd uintptr) bool {
		for len(parts) > 0 {
			n, err := write(int(fd), parts)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n == 0 {
				break
			}
			parts = consumed(parts, n)
		}
		return true
	})
	return parts
}
