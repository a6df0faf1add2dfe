//go:build linux

package workspace

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// accessWatch reports every open, read, write or metadata change of the
// watched paths (and, for a directory, of anything in it), using inotify.
// It is how the attack tests prove that nothing outside the root was
// read, listed or changed, not merely that its content was not returned.
type accessWatch struct {
	fd    int
	names map[int]string
}

const watchMask = syscall.IN_OPEN | syscall.IN_ACCESS | syscall.IN_MODIFY | syscall.IN_ATTRIB |
	syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO

func newAccessWatch(t testing.TB, paths ...string) *accessWatch {
	t.Helper()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("inotify: %v", err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	a := &accessWatch{fd: fd, names: map[int]string{}}
	for _, p := range paths {
		wd, err := syscall.InotifyAddWatch(fd, p, watchMask)
		if err != nil {
			t.Fatalf("inotify watch %s: %v", p, err)
		}
		a.names[wd] = p
	}
	return a
}

// events drains and describes the pending events.
func (a *accessWatch) events() []string {
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(a.fd, buf)
		if n <= 0 || err != nil {
			if err != nil && !errors.Is(err, syscall.EAGAIN) {
				out = append(out, "read error: "+err.Error())
			}
			return out
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
				for i, c := range raw {
					if c == 0 {
						raw = raw[:i]
						break
					}
				}
				name = "/" + string(raw)
			}
			out = append(out, a.names[int(ev.Wd)]+name+" mask="+maskString(ev.Mask))
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

func maskString(m uint32) string {
	names := []struct {
		bit  uint32
		name string
	}{{syscall.IN_OPEN, "open"}, {syscall.IN_ACCESS, "access"}, {syscall.IN_MODIFY, "modify"},
		{syscall.IN_ATTRIB, "attrib"}, {syscall.IN_CREATE, "create"}, {syscall.IN_DELETE, "delete"},
		{syscall.IN_MOVED_FROM, "moved_from"}, {syscall.IN_MOVED_TO, "moved_to"}}
	s := ""
	for _, n := range names {
		if m&n.bit != 0 {
			s += n.name + ","
		}
	}
	return s
}

// assertUntouched fails if anything watched was accessed since the last call.
func (a *accessWatch) assertUntouched(t testing.TB) {
	t.Helper()
	if evs := a.events(); len(evs) > 0 {
		t.Fatalf("outside the root was touched: %q", evs)
	}
}

func mknodZero(path string) error {
	return syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|5) // /dev/zero is 1,5
}

func mountProc(path string) (unmount func(), err error) {
	if err := syscall.Mount("proc", path, "proc", 0, ""); err != nil {
		return nil, err
	}
	return func() { syscall.Unmount(path, syscall.MNT_DETACH) }, nil
}

// TestAccessWatchSeesReads proves the watch used by the attack tests can
// fail: a plain read of the sentinel is reported.
func TestAccessWatchSeesReads(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil)
	w := newAccessWatch(t, f.outside, f.secret)
	if evs := w.events(); len(evs) != 0 {
		t.Fatalf("events before any access: %q", evs)
	}
	if _, err := os.ReadFile(f.secret); err != nil {
		t.Fatal(err)
	}
	if evs := w.events(); len(evs) == 0 {
		t.Fatal("reading the sentinel produced no event")
	}
	if _, err := os.ReadDir(f.outside); err != nil {
		t.Fatal(err)
	}
	if evs := w.events(); len(evs) == 0 {
		t.Fatal("listing the outside directory produced no event")
	}
}

// bindFile bind-mounts the file src onto the existing file dst.
func bindFile(src, dst string) (unmount func(), err error) {
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		return nil, err
	}
	return func() { syscall.Unmount(dst, syscall.MNT_DETACH) }, nil
}
