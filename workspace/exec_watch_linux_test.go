//go:build linux

package workspace

import (
	"fmt"
	"syscall"
	"testing"
	"unsafe"
)

// fileWatch reports every access to the watched paths through inotify, so a
// test can tell that a file was not even read.
type fileWatch struct{ fd int }

func newFileWatch(t testing.TB, paths ...string) *fileWatch {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	for _, p := range paths {
		if _, err := syscall.InotifyAddWatch(fd, p, syscall.IN_ALL_EVENTS); err != nil {
			t.Fatalf("inotify watch %s: %v", p, err)
		}
	}
	return &fileWatch{fd: fd}
}

// events returns the events since the last call.
func (w *fileWatch) events() []string {
	var out []string
	buf := make([]byte, 64*1024)
	for {
		n, err := syscall.Read(w.fd, buf)
		if err != nil || n <= 0 {
			return out
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			out = append(out, fmt.Sprintf("wd%d mask=%#x", ev.Wd, ev.Mask))
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func (w *fileWatch) drain() { w.events() }
