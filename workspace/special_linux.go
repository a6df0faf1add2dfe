//go:build linux

package workspace

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Magic numbers of kernel pseudo file systems (statfs(2), linux/magic.h).
// Their "regular files" are views of kernel and process state (environment,
// memory, keys), not workspace content, so they are never served, wherever
// they are mounted.
var pseudoFS = map[int64]string{
	0x9fa0:     "proc",
	0x62656572: "sysfs",
	0x64626720: "debugfs",
	0x74726163: "tracefs",
	0x73636673: "securityfs",
	0x1cd1:     "devpts",
	0x27e0eb:   "cgroup",
	0x63677270: "cgroup2",
	0xcafe4a11: "bpf",
	0x6e736673: "nsfs",
	0x50495045: "pipefs",
	0x534f434b: "sockfs",
	0x42494e4d: "binfmt_misc",
	0xde5e81e4: "efivarfs",
	0x67596969: "rpc_pipefs",
	0x1373:     "devfs",
}

// pseudoFSOf returns the name of the pseudo file system f lives on, or ""
// for an ordinary file system (or when statfs fails, which then fails the
// read that follows instead).
func pseudoFSOf(f *os.File) string {
	var st syscall.Statfs_t
	if withFd(f, func(fd int) error { return syscall.Fstatfs(fd, &st) }) != nil {
		return ""
	}
	return pseudoFS[int64(st.Type)]
}

// withFd runs fn on the descriptor of f.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// withDirFd runs fn on a descriptor of the directory dir is open on.
func withDirFd(dir *os.Root, fn func(fd int) error) error {
	f, err := dir.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return withFd(f, fn)
}

// dirEntry is a name and file type read straight from getdents(2): no
// stat per entry, which is most of the system time of a tree walk.
type dirEntry struct {
	name string
	mode fs.FileMode // type bits only; fs.ModeIrregular when unknown
}

var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readDirTypes lists dir with getdents64, unsorted. Entries whose type the
// file system does not report (DT_UNKNOWN) are lstat'ed through dir.
func readDirTypes(dir *os.Root) (out []dirEntry, err error) {
	err = withDirFd(dir, func(fd int) error {
		out, err = readDirFd(fd)
		return err
	})
	return out, err
}

// readDirFd lists the directory open on fd with getdents64, unsorted,
// from its current offset. Entries whose type the file system does not
// report (DT_UNKNOWN) are lstat'ed relative to fd; those that vanished
// meanwhile are left out.
func readDirFd(fd int) ([]dirEntry, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	// The names go into one arena, made a single string at the end, so
	// that a large directory costs a few allocations, not one per name.
	var (
		arena []byte
		ends  []int // ends[i]: where out[i]'s name ends in arena
		out   []dirEntry
	)
	for {
		n, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		if arena == nil {
			arena = make([]byte, 0, n/2) // names are most of a record
		}
		for off := 0; off+19 <= n; {
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen <= 0 || off+reclen > n {
				break
			}
			typ := buf[off+18]
			raw := buf[off+19 : off+reclen]
			if i := bytes.IndexByte(raw, 0); i >= 0 {
				raw = raw[:i]
			}
			off += reclen
			if len(raw) == 0 || (raw[0] == '.' && (len(raw) == 1 || (len(raw) == 2 && raw[1] == '.'))) {
				continue
			}
			var e dirEntry
			switch typ {
			case syscall.DT_REG:
			case syscall.DT_DIR:
				e.mode = fs.ModeDir
			case syscall.DT_LNK:
				e.mode = fs.ModeSymlink
			case syscall.DT_FIFO:
				e.mode = fs.ModeNamedPipe
			case syscall.DT_SOCK:
				e.mode = fs.ModeSocket
			case syscall.DT_CHR:
				e.mode = fs.ModeDevice | fs.ModeCharDevice
			case syscall.DT_BLK:
				e.mode = fs.ModeDevice
			default:
				var st unix.Stat_t
				if err := unix.Fstatat(fd, string(raw), &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue // vanished
				}
				e.mode = statMode(st.Mode)
			}
			arena = append(arena, raw...)
			ends = append(ends, len(arena))
			out = append(out, e)
		}
	}
	names := string(arena)
	start := 0
	for i, end := range ends {
		out[i].name = names[start:end]
		start = end
	}
	return out, nil
}

// statMode is the file type bits of a stat(2) mode as an fs.FileMode.
func statMode(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		return fs.ModeDevice
	}
	return fs.ModeIrregular
}
