package workspace

import (
	"io/fs"
	"os"
	"sync"
)

// Bounds of the files a workspace keeps open between reads: how many, and
// how large each (a file deleted or replaced while held keeps its space
// on the disk until it is closed).
const (
	heldFilesMax     = 8
	heldFileMaxBytes = 1 << 20
)

// heldFiles keeps the regular files read last open, by root-relative path,
// so that reading one again takes no open, fstat and close: the path is
// stat'ed through the root as for any read, and the file held is read only
// if it is the very file there now, unchanged since the last read
// (fileIdentity: device, inode, type and permissions, owner, size, change
// time). Anything else (another file there, a chmod, a chown, a write, a
// rename over it) closes it and the path is opened again, through the
// root, with every check of openStatted. Its content is read anew either
// way. A file is read with positioned
// reads (pread) from its start, so a held file has no offset to keep, and
// one held file is used by one read at a time: a read takes it out, and
// puts it back when done.
type heldFiles struct {
	mu     sync.Mutex
	closed bool
	files  map[string]heldFile
}

type heldFile struct {
	f  *os.File
	id fileIdentity
}

// take returns the file held for rel if fi, what a stat of rel finds now,
// is that file unchanged (see heldFiles); nil otherwise.
func (h *heldFiles) take(rel string, fi fs.FileInfo) *os.File {
	h.mu.Lock()
	hf, found := h.files[rel]
	if found {
		delete(h.files, rel)
	}
	h.mu.Unlock()
	if !found {
		return nil
	}
	if id, ok := identityOf(fi); !ok || hf.id != id {
		hf.f.Close()
		return nil
	}
	return hf.f
}

// put keeps f, a regular file opened for rel (whose stat is fi), open for
// the next read of rel, or closes it: when the workspace is closed, when
// rel already has one, when it is larger than heldFileMaxBytes, or when it
// cannot tell what f is. Past heldFilesMax another file held is closed.
func (h *heldFiles) put(rel string, f *os.File, fi fs.FileInfo) {
	id, ok := identityOf(fi)
	h.mu.Lock()
	if !ok || fi.Size() > heldFileMaxBytes || h.closed || h.files[rel].f != nil {
		h.mu.Unlock()
		f.Close()
		return
	}
	var evicted *os.File
	if len(h.files) >= heldFilesMax {
		for k, hf := range h.files { // any one: the map's order is as good as any
			evicted = hf.f
			delete(h.files, k)
			break
		}
	}
	if h.files == nil {
		h.files = map[string]heldFile{}
	}
	h.files[rel] = heldFile{f: f, id: id}
	h.mu.Unlock()
	if evicted != nil {
		evicted.Close()
	}
}

// drop closes the file held for rel, if any: nothing is there any more,
// or nothing that may be read.
func (h *heldFiles) drop(rel string) {
	h.mu.Lock()
	hf := h.files[rel]
	delete(h.files, rel)
	h.mu.Unlock()
	if hf.f != nil {
		hf.f.Close()
	}
}

// close closes every file held; files taken meanwhile are closed when put
// back.
func (h *heldFiles) close() {
	h.mu.Lock()
	files := h.files
	h.files, h.closed = nil, true
	h.mu.Unlock()
	for _, hf := range files {
		hf.f.Close()
	}
}
