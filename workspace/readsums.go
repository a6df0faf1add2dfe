package workspace

import (
	"sync"
	"unsafe"
)

// readBuffers are buffers of whole reads that the memo answered (their
// bytes were not kept): the next read of a file of at most readSumsMaxFile
// bytes reads into one instead of allocating and clearing a new one. Only
// the bytes a read fills are ever looked at.
var readBuffers sync.Pool // of *[]byte

// readBuffer returns a buffer of n bytes, whose contents are undefined.
func readBuffer(n int) []byte {
	if n <= readSumsMaxFile+1 {
		if bp, _ := readBuffers.Get().(*[]byte); bp != nil && cap(*bp) >= n {
			return (*bp)[:n]
		}
	}
	return make([]byte, n)
}

// giveBack returns a buffer of readBuffer that nothing refers to any more.
func giveBack(b []byte) {
	if cap(b) <= readSumsMaxFile+1 {
		readBuffers.Put(&b)
	}
}

// Bounds of the reads a workspace remembers (readSums).
const (
	readSumsMaxBytes   = 8 << 20 // the files' bytes, in all
	readSumsMaxEntries = 256
	readSumsMaxFile    = 1 << 20 // a larger file is not remembered
)

// readSums remembers the last whole read of recently read files, by
// root-relative path: their bytes and what was computed of them (SHA-256,
// line count, binary). A file read again whose bytes are the same, which
// is checked by comparing them all (a few microseconds for 64 KiB, where
// hashing them takes tens), gets the same results without hashing them
// again. No change to the file can be missed: the new bytes are always
// the ones compared, and the ones returned are equal to them.
type readSums struct {
	mu    sync.Mutex
	m     map[string]*readSum
	bytes int
}

type readSum struct {
	data string // the file's bytes when read (immutable)
	res  readResult
}

// match returns the remembered results of the file at rel if b is its
// bytes now, with the content the remembered bytes (equal to b). Nil
// remembers nothing.
func (c *readSums) match(rel string, b []byte) (readResult, bool) {
	if c == nil || len(b) == 0 {
		return readResult{}, false
	}
	c.mu.Lock()
	e := c.m[rel]
	c.mu.Unlock()
	if e == nil || len(e.data) != len(b) || e.data != unsafe.String(&b[0], len(b)) {
		return readResult{}, false
	}
	return e.res, true
}

// note remembers res as the results of the file at rel whose bytes are
// data, forgetting others to stay within the bounds.
func (c *readSums) note(rel string, data string, res readResult) {
	if c == nil || len(data) == 0 || len(data) > readSumsMaxFile {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*readSum{}
	}
	if old := c.m[rel]; old != nil {
		c.bytes -= len(old.data)
		delete(c.m, rel)
	}
	for k, e := range c.m { // any other: the map's order is as good as any
		if c.bytes+len(data) <= readSumsMaxBytes && len(c.m) < readSumsMaxEntries {
			break
		}
		c.bytes -= len(e.data)
		delete(c.m, k)
	}
	c.m[rel] = &readSum{data: data, res: res}
	c.bytes += len(data)
}
