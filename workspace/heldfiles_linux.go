//go:build linux

package workspace

import (
	"io"
	"io/fs"
	"math"
	"os"
	"syscall"
)

// fileIdentity is what tells a file held open from another, or from
// itself after a change of its metadata (see heldFiles): a write, a chmod
// or a chown sets the change time, and the mode and owner are compared
// too, for a change in the same tick of a coarse clock.
type fileIdentity struct {
	dev, ino  uint64
	mode      uint32
	uid, gid  uint32
	size      int64
	ctimeSec  int64
	ctimeNsec int64
}

// identityOf returns fi's identity, if fi is a regular file's stat.
func identityOf(fi fs.FileInfo) (fileIdentity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileIdentity{}, false
	}
	return fileIdentity{
		dev: uint64(st.Dev), ino: uint64(st.Ino), mode: uint32(st.Mode), uid: st.Uid, gid: st.Gid,
		size: st.Size, ctimeSec: int64(st.Ctim.Sec), ctimeNsec: int64(st.Ctim.Nsec),
	}, true
}

// fromStart returns a reader of f from its start that makes one pread a
// Read, as f.Read makes one read: an io.SectionReader's Read is f.ReadAt,
// which reads on to fill its buffer, one more system call at the file's
// end (see readToSize). It keeps no offset in f, so that a file held open
// between reads needs no seek.
func fromStart(f *os.File) io.Reader {
	rc, err := f.SyscallConn()
	if err != nil {
		return io.NewSectionReader(f, 0, math.MaxInt64)
	}
	return &preader{rc: rc, name: f.Name()}
}

type preader struct {
	rc   syscall.RawConn
	name string
	off  int64
}

func (r *preader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if cerr := r.rc.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Pread(int(fd), b, r.off)
			if err != syscall.EINTR {
				return true
			}
		}
	}); cerr != nil {
		return 0, cerr
	}
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "read", Path: r.name, Err: err}
	case n == 0:
		return 0, io.EOF
	}
	r.off += int64(n)
	return n, nil
}
