//go:build linux

package workspace

import (
	"os"
	"syscall"
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
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var st syscall.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return ""
	}
	return pseudoFS[int64(st.Type)]
}
