//go:build linux

package workspace

import (
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harness-runtime/harness/action"
)

// listCache keeps the entries of directories listed before, so that
// listing a directory again costs one read(2) of an inotify descriptor
// instead of getdents and a stat per entry: on a virtual machine, where a
// system call costs microseconds, a 1,000-entry listing drops from
// milliseconds to microseconds.
//
// A cached listing is served only while it is provably what a fresh read
// would return:
//
//   - Before a directory is read for the cache, every directory on its path
//     from the root is watched (inotify, on the inode the walk opened, by
//     /proc/self/fd: no path is looked up twice). The kernel queues an
//     event within the system call that changes an entry (create, delete,
//     rename, write, truncate, chmod, utimes), before that call returns,
//     for every process and mount namespace, sandboxed commands included.
//   - Every lookup first drains the queue and drops what the events touch:
//     a directory's names on a change of its entries, its details on a
//     change of an entry's content or attributes, everything beneath a
//     renamed, deleted or replaced directory, and everything on overflow.
//   - A read for the cache is kept only if no event at all arrived between
//     the first watch and the end of the read; any path component that is
//     a symbolic link, a directory on another file system than the root's,
//     or a file system not known to report its changes to inotify (only
//     ext2/3/4, xfs, btrfs, tmpfs and f2fs are) is never cached.
//
// What inotify does not see, and the cache therefore cannot: a mount made
// on a directory of the workspace after it was cached (the service's own
// mount namespace; sandboxed commands have their own), and the
// modification time a write through a shared mapping sets while the writer
// keeps its descriptor open (its size cannot change that way, and closing
// a descriptor opened for writing is an event). Cached details are
// therefore also dropped after maxDetailsAge.
type listCache struct {
	root    *os.Root
	mu      sync.Mutex
	started bool
	closed  bool
	fd      int // inotify, non-blocking; -1 when off
	rootDev uint64
	dirs    map[string]*cachedDir // by root-relative path ("." for the root)
	watches map[int32][]string    // the paths each watch was added for
	events  uint64                // events seen: a fill spanning one is not kept
	hits    uint64                // listings answered from the cache
	buf     []byte
}

// cachedDir is one directory's entries as last read, sorted by name.
type cachedDir struct {
	names   action.Entries // nil when not cached
	details action.Entries // nil when not cached
	filled  time.Time      // when details were read
}

const (
	// maxCachedDirs bounds the directories cached; maxWatches the watches
	// held (a fill adds one per path component). Past either, the cache
	// starts again empty with a new inotify descriptor.
	maxCachedDirs = 256
	maxWatches    = 1024
	// maxDetailsAge is how long cached sizes and times are served.
	maxDetailsAge = 2 * time.Second
	// maxDrainReads bounds the reads of one drain.
	maxDrainReads = 64
	// maxCachedEntries is the largest directory cached.
	maxCachedEntries = 1 << 16

	listWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// localFS are the file systems whose every change goes through the VFS
// calls that queue inotify events (statfs(2) magic numbers).
var localFS = map[int64]bool{
	0xEF53:     true, // ext2, ext3, ext4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0x01021994: true, // tmpfs
	0xF2F52010: true, // f2fs
}

// newListCache returns a cache for the workspace whose root is open as
// root. It starts on the first listing: a command that lists nothing
// pays nothing for it.
func newListCache(root *os.Root) *listCache {
	return &listCache{root: root, fd: -1}
}

// start opens the inotify descriptor, unless the root is not on a file
// system listed in localFS or inotify is not available: then the cache
// stays off.
func (c *listCache) start() bool {
	c.started = true
	var sfs unix.Statfs_t
	var st unix.Stat_t
	err := withDirFd(c.root, func(fd int) error {
		if err := unix.Fstatfs(fd, &sfs); err != nil {
			return err
		}
		return unix.Fstat(fd, &st)
	})
	if err != nil || !localFS[int64(sfs.Type)] {
		return false
	}
	c.rootDev, c.buf = st.Dev, make([]byte, 64<<10)
	return c.reset() == nil
}

// reset empties the cache and starts a new inotify descriptor.
func (c *listCache) reset() error {
	if c.fd >= 0 {
		unix.Close(c.fd)
	}
	c.dirs = map[string]*cachedDir{}
	c.watches = map[int32][]string{}
	c.events++
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	c.fd = fd
	if err != nil {
		c.fd = -1
	}
	return err
}

func (c *listCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	c.dirs, c.closed = nil, true
}

// list returns the entries of the directory at rel (a path checkPath
// accepted), names and types or with details, sorted by name: those
// cached if they still hold, else read for the cache. It reports false
// when the directory cannot be cached (or does not exist, or is not a
// directory): the caller then lists it as it would without a cache, and
// says why it cannot.
func (c *listCache) list(rel string, details bool) (action.Entries, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started && !c.closed && !c.start() {
		return nil, false
	}
	if c.fd < 0 || !c.drain() {
		return nil, false
	}
	if ents, ok := c.cached(rel, details); ok {
		c.hits++
		return ents, true
	}
	return c.fill(rel, details)
}

// cached returns the entries of rel as last read, if they are kept.
func (c *listCache) cached(rel string, details bool) (action.Entries, bool) {
	d := c.dirs[rel]
	switch {
	case d == nil:
		return nil, false
	case !details:
		return d.names, d.names != nil
	case d.details != nil && time.Since(d.filled) > maxDetailsAge:
		d.details = nil
	}
	return d.details, d.details != nil
}

// fill reads the directory at rel for the cache; c.mu is held and the
// queue drained.
func (c *listCache) fill(rel string, details bool) (action.Entries, bool) {
	if len(c.dirs) >= maxCachedDirs || len(c.watches) >= maxWatches {
		if c.reset() != nil {
			return nil, false
		}
	}
	start := c.events
	var (
		ents []listEntry
		ok   bool
	)
	if err := withDirFd(c.root, func(rootFd int) error {
		ents, ok = c.readChain(rootFd, rel, details)
		return nil
	}); err != nil || !ok {
		return nil, false
	}
	if !c.drain() || c.events != start {
		return nil, false // something changed while it was read
	}
	d := c.dirs[rel]
	if d == nil {
		d = &cachedDir{}
		c.dirs[rel] = d
	}
	// Built once here and never changed: each listing gets a copy of
	// its own, or these entries themselves (lister.cached).
	es := make(action.Entries, len(ents))
	for i, p := range childPaths(rel, ents) {
		es[i] = entryOf(p, ents[i])
	}
	if details {
		d.details, d.filled = es, time.Now()
	} else {
		d.names = es
	}
	return es, true
}

// readChain watches the root (open on rootFd) and each directory on the
// way to rel, opened one component at a time without following symbolic
// links, then reads rel's entries. It reports false for a path that cannot
// be cached.
func (c *listCache) readChain(rootFd int, rel string, details bool) ([]listEntry, bool) {
	if !c.watch(rootFd, ".") {
		return nil, false
	}
	fd, path := rootFd, "."
	defer func() {
		if fd != rootFd {
			unix.Close(fd)
		}
	}()
	if rel != "." {
		for _, name := range strings.Split(rel, "/") {
			next, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return nil, false
			}
			if fd != rootFd {
				unix.Close(fd)
			}
			fd = next
			path = joinRel(path, name)
			var st unix.Stat_t
			var sfs unix.Statfs_t
			if unix.Fstat(fd, &st) != nil || st.Dev != c.rootDev || unix.Fstatfs(fd, &sfs) != nil || !localFS[int64(sfs.Type)] {
				return nil, false
			}
			if !c.watch(fd, path) {
				return nil, false
			}
		}
	}
	des, err := readDirFd(fd)
	if err != nil || len(des) > maxCachedEntries {
		return nil, false
	}
	ents := make([]listEntry, 0, len(des))
	for _, k := range sortedByName(des) {
		e := listEntry{name: des[k].name, mode: des[k].mode}
		if details {
			var st unix.Stat_t
			if err := unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				continue // vanished: as readDirInfo leaves it out
			}
			e.mode = statMode(st.Mode)
			if e.mode.IsDir() {
				// A directory's time and size change with its entries,
				// which its parent's watch does not see: watch it too,
				// then stat it again.
				if len(c.watches) >= maxWatches || !c.watchChild(fd, e.name, joinRel(rel, e.name)) {
					return nil, false
				}
				if err := unix.Fstatat(fd, e.name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
					continue
				}
				e.mode = statMode(st.Mode)
			}
			e.detailed, e.size = true, st.Size
			e.modTime = formatModTime(time.Unix(st.Mtim.Unix()))
		}
		ents = append(ents, e)
	}
	return ents, true
}

// watch adds an inotify watch on the directory open on fd, whose
// root-relative path is path.
func (c *listCache) watch(fd int, path string) bool {
	wd, err := unix.InotifyAddWatch(c.fd, "/proc/self/fd/"+strconv.Itoa(fd), listWatchMask)
	if err != nil {
		return false
	}
	c.addPath(int32(wd), path)
	return true
}

// addPath records that watch wd is on the directory at path.
func (c *listCache) addPath(wd int32, path string) {
	ps := c.watches[wd]
	for _, p := range ps {
		if p == path {
			return
		}
	}
	c.watches[wd] = append(ps, path)
}

// watchChild adds a watch on the directory name in the directory open on
// fd, whose root-relative path is path, without following a symbolic link.
func (c *listCache) watchChild(fd int, name, path string) bool {
	wd, err := unix.InotifyAddWatch(c.fd, "/proc/self/fd/"+strconv.Itoa(fd)+"/"+name, listWatchMask|unix.IN_DONT_FOLLOW)
	if err != nil {
		return false
	}
	c.addPath(int32(wd), path)
	return true
}

// drain reads every queued event and drops what each one touches. It
// reports false, having emptied the cache, when the queue cannot be read.
func (c *listCache) drain() bool {
	for reads := 0; ; reads++ {
		if reads == maxDrainReads {
			// A queue that refills as fast as it is read: serve nothing
			// from the cache until it is quiet again.
			clear(c.dirs)
			c.events++
			return true
		}
		n, err := unix.Read(c.fd, c.buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EAGAIN) {
			return true
		}
		if err != nil || n <= 0 {
			c.reset()
			return false
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(c.buf[off:]))
			mask := binary.NativeEndian.Uint32(c.buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(c.buf[off+12:]))
			name := c.buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+nameLen]
			if i := indexZero(name); i >= 0 {
				name = name[:i]
			}
			off += unix.SizeofInotifyEvent + nameLen
			c.events++
			if mask&unix.IN_Q_OVERFLOW != 0 {
				c.dirs = map[string]*cachedDir{}
				continue
			}
			c.apply(wd, mask, string(name))
		}
	}
}

// apply drops the cached listings that an event on watch wd (about its
// entry name, or the directory itself when name is "") may have changed.
func (c *listCache) apply(wd int32, mask uint32, name string) {
	paths := c.watches[wd]
	if mask&unix.IN_IGNORED != 0 {
		delete(c.watches, wd)
	}
	const self = unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_UNMOUNT | unix.IN_IGNORED
	const entries = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB
	for _, p := range paths {
		if p != "." && (mask&(self|entries) != 0) {
			// The directory's own time or size changed: so did its line in
			// its parent's listing.
			if d := c.dirs[parentRel(p)]; d != nil {
				d.details = nil
			}
		}
		switch {
		case mask&self != 0 || name == "":
			c.dropTree(p)
		case mask&entries != 0:
			// An entry came, went or changed its permissions: the
			// directory's names, and everything beneath that entry.
			delete(c.dirs, p)
			c.dropTree(joinRel(p, name))
		default: // content written: sizes and times only
			if d := c.dirs[p]; d != nil {
				d.details = nil
			}
		}
	}
}

// dropTree drops the listings of the directory at path and of every
// directory beneath it.
func (c *listCache) dropTree(path string) {
	if path == "." {
		clear(c.dirs)
		return
	}
	for p := range c.dirs {
		if p == path || (len(p) > len(path) && p[len(path)] == '/' && p[:len(path)] == path) {
			delete(c.dirs, p)
		}
	}
}

// parentRel is the root-relative path of the directory holding rel.
func parentRel(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return "."
}

func indexZero(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
