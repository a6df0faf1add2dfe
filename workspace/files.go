package workspace

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/harness-runtime/harness/action"
)

// maxWalkDepth bounds how deep a recursive listing or a search descends.
// Every level holds a directory handle open, and no real tree is this
// deep; deeper directories are skipped and the result marked truncated.
const maxWalkDepth = 256

// hardMaxEntries caps max_entries whatever the input asks, so that one
// observation stays a size a model (and the audit log) can take.
const hardMaxEntries = 100_000

// binarySniffBytes is how much of a file's start is inspected for a NUL
// byte to call it binary (the rule git and ripgrep use).
const binarySniffBytes = 8 << 10

// openFile opens the regular file at rel (a path returned by checkPath)
// for reading, through the root, following symlinks only while they stay
// inside it. It refuses directories, devices, FIFOs and sockets, and files
// on kernel pseudo file systems such as /proc or /sys (invalid_input). The
// returned FileInfo describes the opened handle, not the name, so a file
// swapped after the check cannot slip through. The caller closes the file.
func (w *Workspace) openFile(rel string) (*os.File, fs.FileInfo, error) {
	return openRegular(w.root, rel, w.dev)
}

// rootDevice is the device of a root's file system (the workspace's, or
// a search's), which was found not to be a pseudo file system while the
// root was open (ok: known). Holding the root open keeps that file system
// alive, so its device number cannot pass to another one meanwhile: a
// file with the same device is on it, and needs no statfs of its own.
type rootDevice struct {
	dev uint64
	ok  bool
}

// deviceOfRoot returns the device of the directory r is open on.
func deviceOfRoot(r *os.Root) rootDevice {
	fi, err := r.Stat(".")
	if err != nil {
		return rootDevice{}
	}
	dev, ok := deviceOf(fi)
	return rootDevice{dev, ok}
}

// holds reports whether a file of stat fi is known to be on the root's
// file system.
func (d rootDevice) holds(fi fs.FileInfo) bool {
	dev, ok := deviceOf(fi)
	return d.ok && ok && dev == d.dev
}

// differs reports whether a file of stat fi is known to be on another
// file system than the root's (a mount point beneath it).
func (d rootDevice) differs(fi fs.FileInfo) bool {
	dev, ok := deviceOf(fi)
	return d.ok && ok && dev != d.dev
}

// openRegular is openFile relative to any root (the workspace root or a
// directory root opened beneath it).
func openRegular(root *os.Root, rel string, dev rootDevice) (*os.File, fs.FileInfo, error) {
	// Stat first so that a FIFO or device is never opened at all; the
	// checks on the opened handle below close the race that remains.
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, nil, fsError(rel, err)
	}
	return openStatted(root, rel, fi, dev)
}

// openStatted is openRegular for a caller that has just stat'ed rel (or
// lstat'ed it and found no symlink): fi is what is there. dev is the
// device of the workspace's file system, when known: a file on another
// device (a bind mount, an overlay's lower layer) may be a view of /proc
// or /sys, and only such a file's file system is looked up.
func openStatted(root *os.Root, rel string, fi fs.FileInfo, dev rootDevice) (*os.File, fs.FileInfo, error) {
	if err := refuseSpecial(rel, fi); err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, action.Errorf(action.CodeInvalidInput, "path %s is a directory", quote(rel))
	}
	f, err := root.OpenFile(rel, openFlags, 0)
	if err != nil {
		return nil, nil, fsError(rel, err)
	}
	fi, err = f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fsError(rel, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		if err := refuseSpecial(rel, fi); err != nil {
			return nil, nil, err
		}
		return nil, nil, action.Errorf(action.CodeInvalidInput, "path %s is not a regular file", quote(rel))
	}
	if dev.holds(fi) {
		return f, fi, nil
	}
	if name := pseudoFSOf(f); name != "" {
		f.Close()
		return nil, nil, action.Errorf(action.CodeInvalidInput, "path %s is on the %s pseudo file system, which is never served", quote(rel), name)
	}
	return f, fi, nil
}

// statNoFollow returns the FileInfo of rel (a path returned by checkPath)
// without following a final symlink; parents are resolved inside the root.
// Errors carry not_found, path_outside_root or invalid_input codes.
func (w *Workspace) statNoFollow(rel string) (fs.FileInfo, error) {
	fi, err := w.root.Lstat(rel)
	if err != nil {
		return nil, fsError(rel, err)
	}
	return fi, nil
}

// entryType names a file mode as the list payload does.
func entryType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// listFiles implements workspace_list_files.
//
// Input: path (default "."), recursive, max_entries (default
// Options.MaxListEntries), include_git, details (default false: names and
// types only, read from the directory itself; true: also the size and
// mod_time of every entry, at the cost of one lstat each, which for a large
// directory is most of the listing's time).
//
// Payload: {"path": the clean root-relative directory, "entries": the
// entries as action.Entries, whose JSON is [{"path": root-relative slash
// path, "name", "type": "file"|"dir"|"symlink"|"other", "size": bytes as
// reported by lstat, "mod_time": RFC 3339 UTC (the last two only with
// details)}], "truncated": true when entries stopped at max_entries}.
// max_entries is capped at 100000.
//
// Entries are in byte order of their path components, depth first (a
// directory is followed by its contents). Symlinks are listed as symlinks
// and never followed; directories on another device (mount points) are
// listed but not descended into. A ".git" directory is listed but its
// contents are skipped unless include_git is true. Directories nested
// deeper than 256 levels are listed but not descended into (truncated is
// then true).
func (w *Workspace) listFiles(ctx context.Context, in map[string]any) (map[string]any, error) {
	p, _, err := strArg(in, "path")
	if err != nil {
		return nil, err
	}
	recursive, err := boolArg(in, "recursive", false)
	if err != nil {
		return nil, err
	}
	includeGit, err := boolArg(in, "include_git", false)
	if err != nil {
		return nil, err
	}
	details, err := boolArg(in, "details", false)
	if err != nil {
		return nil, err
	}
	maxEntries, err := intArg(in, "max_entries", int64(w.opts.MaxListEntries))
	if err != nil {
		return nil, err
	}
	if maxEntries < 1 {
		return nil, action.Errorf(action.CodeInvalidInput, "max_entries must be at least 1")
	}
	rel, wantDir, err := parsePath(p)
	if err != nil {
		return nil, err
	}
	l := &lister{ctx: ctx, max: int(min(maxEntries, hardMaxEntries)), recursive: recursive, includeGit: includeGit, details: details}
	if !recursive {
		// A directory the cache serves is opened through its own chain
		// of watched directories, none a symlink, and is one now: any
		// change to the chain since it was read is an event that drops
		// it. So a stat would find it as it is, and is not made.
		// Anything the cache does not serve (a symlink on the way,
		// another file system, an error) is checked and read below.
		if es, ok := w.lists.list(rel, details); ok {
			return l.cached(rel, es, action.ReadOnlyPayload(ctx))
		}
	}
	if _, err := w.statParsed(p, rel, wantDir); err != nil {
		return nil, err
	}
	dir, err := w.root.OpenRoot(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || !isNotDir(err) {
			return nil, fsError(rel, err)
		}
		return nil, action.Errorf(action.CodeInvalidInput, "path %s is not a directory", quote(rel))
	}
	rootInfo, err := dir.Stat(".")
	if err != nil {
		dir.Close()
		return nil, fsError(rel, err)
	}
	if name := pseudoFSOfRoot(dir); name != "" {
		dir.Close()
		return nil, action.Errorf(action.CodeInvalidInput, "path %s is on the %s pseudo file system, which is never served", quote(rel), name)
	}
	l.dev, l.hasDev = deviceOf(rootInfo)
	if err := l.walk(dir, rel, 0); err != nil {
		return nil, err
	}
	return l.payload(rel), nil
}

func (l *lister) payload(rel string) map[string]any {
	entries := l.entries
	if entries == nil {
		entries = action.Entries{}
	}
	return map[string]any{"path": rel, "entries": entries, "truncated": l.truncated}
}

// cached is the payload of a listing of the directory at rel, not
// recursive, whose entries (sorted by name) are es, from the listing
// cache. The cache never changes es: a caller that only reads its payload
// (shared: see action.WithReadOnlyPayload) gets es itself, capped so that
// an append cannot reach the cache's array; any other caller gets a copy
// of its own, so that nothing it does to its entries reaches another
// listing's.
func (l *lister) cached(rel string, es action.Entries, shared bool) (map[string]any, error) {
	if err := l.ctx.Err(); err != nil {
		return nil, action.Errorf(action.CodeTimeout, "listing %s: %v", quote(rel), err)
	}
	fit := min(len(es), l.max)
	if shared {
		l.entries = es[:fit:fit]
	} else {
		l.entries = make(action.Entries, fit)
		copy(l.entries, es)
	}
	l.truncated = fit < len(es)
	return l.payload(rel), nil
}

// entryOf is the listing entry of e, whose root-relative path is path.
func entryOf(path string, e listEntry) action.Entry {
	// The name is the path's last element: no string of its own.
	en := action.Entry{Path: path, Name: path[len(path)-len(e.name):], Type: entryType(e.mode)}
	if e.detailed {
		en.Detailed, en.Size, en.ModTime = true, e.size, e.modTime
	}
	return en
}

type lister struct {
	ctx        context.Context
	max        int
	recursive  bool
	includeGit bool
	details    bool // size and mod_time: one lstat per entry
	dev        uint64
	hasDev     bool
	entries    action.Entries
	truncated  bool
	full       bool // max entries reached: stop
}

// walk lists dir (whose root-relative path is rel) and takes ownership of
// it: dir is closed before walk returns.
func (l *lister) walk(dir *os.Root, rel string, depth int) error {
	defer dir.Close()
	if err := l.ctx.Err(); err != nil {
		return action.Errorf(action.CodeTimeout, "listing %s: %v", quote(rel), err)
	}
	ents, err := l.read(dir)
	if err != nil {
		return fsError(rel, err)
	}
	// Only the entries that fit are built; the paths of those share one
	// allocation.
	fit := min(len(ents), l.max-len(l.entries))
	paths := childPaths(rel, ents[:fit])
	if l.entries == nil {
		l.entries = make(action.Entries, 0, fit)
	}
	for i, e := range ents {
		if len(l.entries) >= l.max {
			l.truncated, l.full = true, true
			return nil
		}
		childRel := paths[i]
		l.entries = append(l.entries, entryOf(childRel, e))
		if !l.recursive || !e.mode.IsDir() || (e.name == ".git" && !l.includeGit) {
			continue
		}
		if depth+1 >= maxWalkDepth {
			l.truncated = true
			continue
		}
		// OpenRoot refuses a symlink that was swapped in since the
		// directory was read when it leads outside dir, so a race cannot
		// widen the walk.
		sub, err := dir.OpenRoot(e.name)
		if err != nil {
			continue
		}
		if fi, err := sub.Stat("."); err != nil || l.otherDevice(fi) {
			sub.Close() // a mount point is listed, not descended into
			continue
		}
		if err := l.walk(sub, childRel, depth+1); err != nil {
			return err
		}
		if l.full {
			return nil
		}
	}
	return nil
}

// childPaths returns the root-relative paths of ents, entries of the
// directory at rel, in one allocation.
func childPaths(rel string, ents []listEntry) []string {
	paths := make([]string, len(ents))
	if rel == "." || rel == "" {
		for i, e := range ents {
			paths[i] = e.name
		}
		return paths
	}
	n := 0
	for _, e := range ents {
		n += len(rel) + 1 + len(e.name)
	}
	buf := make([]byte, 0, n)
	for _, e := range ents {
		buf = append(append(append(buf, rel...), '/'), e.name...)
	}
	all := string(buf)
	off := 0
	for i, e := range ents {
		end := off + len(rel) + 1 + len(e.name)
		paths[i] = all[off:end]
		off = end
	}
	return paths
}

// listEntry is one directory entry of a listing; size and modTime are set
// (detailed) when the listing asked for details.
type listEntry struct {
	name     string
	mode     fs.FileMode // type bits
	detailed bool
	size     int64
	modTime  string // RFC 3339, UTC, with nanoseconds
}

// formatModTime is how a listing writes a modification time.
func formatModTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// read returns dir's entries sorted by name: with details from lstat,
// otherwise the names and types the directory itself holds (no stat per
// entry).
func (l *lister) read(dir *os.Root) ([]listEntry, error) {
	if l.details {
		infos, err := readDirInfo(dir)
		if err != nil {
			return nil, err
		}
		ents := make([]listEntry, len(infos))
		for i, fi := range infos {
			ents[i] = listEntry{name: fi.Name(), mode: fi.Mode().Type(), detailed: true, size: fi.Size(), modTime: formatModTime(fi.ModTime())}
		}
		return ents, nil
	}
	des, err := readDirTypes(dir)
	if err != nil {
		return nil, err
	}
	ents := make([]listEntry, len(des))
	for i, k := range sortedByName(des) {
		ents[i] = listEntry{name: des[k].name, mode: des[k].mode}
	}
	return ents, nil
}

// sortedByName returns the indices of des in byte order of their names.
// Each name's first six bytes (big-endian, zero-padded: a name has no NUL
// byte, so a shorter name sorts first, as in byte order) and its index
// make one integer, so that most of a directory sorts as integers do; the
// names that share their first six bytes are then ordered among
// themselves by a full comparison.
func sortedByName(des []dirEntry) []int {
	idx := make([]int, len(des))
	if len(des) > 1<<16 {
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return strings.Compare(des[a].name, des[b].name) })
		return idx
	}
	keys := make([]uint64, len(des))
	for i, d := range des {
		var p uint64
		for j := 0; j < 6; j++ {
			p <<= 8
			if j < len(d.name) {
				p |= uint64(d.name[j])
			}
		}
		keys[i] = p<<16 | uint64(i)
	}
	slices.Sort(keys)
	for i, k := range keys {
		idx[i] = int(k & 0xffff)
	}
	for i := 0; i < len(keys); {
		j := i + 1
		for j < len(keys) && keys[j]>>16 == keys[i]>>16 {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(idx[i:j], func(a, b int) int { return strings.Compare(des[a].name, des[b].name) })
		}
		i = j
	}
	return idx
}

// otherDevice reports whether fi is on another device than the listed
// directory.
func (l *lister) otherDevice(fi fs.FileInfo) bool {
	d, ok := deviceOf(fi)
	return l.hasDev && ok && d != l.dev
}

// readDirInfo returns lstat information for every entry of dir, sorted by
// name. Entries that vanish while being read are left out.
func readDirInfo(dir *os.Root) ([]fs.FileInfo, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A File opened through a Root answers DirEntry.Info with fstatat on
	// its own descriptor, never with a path lookup from the process's
	// working directory.
	des, err := f.ReadDir(-1)
	if err != nil && len(des) == 0 {
		return nil, err
	}
	infos := make([]fs.FileInfo, 0, len(des))
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			continue
		}
		infos = append(infos, fi)
	}
	slices.SortFunc(infos, func(a, b fs.FileInfo) int { return strings.Compare(a.Name(), b.Name()) })
	return infos, nil
}

func joinRel(dir, name string) string {
	if dir == "." || dir == "" {
		return name
	}
	return dir + "/" + name
}

func isNotDir(err error) bool {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "not a directory" {
		return true
	}
	return false
}

// pseudoFSOfRoot is pseudoFSOf for the directory a Root is open on.
func pseudoFSOfRoot(r *os.Root) string {
	f, err := r.Open(".")
	if err != nil {
		return ""
	}
	defer f.Close()
	return pseudoFSOf(f)
}

// readFile implements workspace_read_file.
//
// Input: path (required); offset (first line returned, 0-based) and limit
// (number of lines returned), both counted in LINES, not bytes. A line is
// everything up to and including "\n"; a last line without "\n" counts.
//
// Without offset or limit, a file larger than Options.MaxFileBytes is
// refused with too_large. With either, any file may be read; the content
// returned is still capped at MaxFileBytes and cut at a line boundary when
// possible (truncated is then true).
//
// Payload: {"path", "content": the selected lines verbatim ("" for binary
// files), "sha256": hex SHA-256 of the whole file as read (always, even for
// a range, so a later patch can be checked against it), "size": bytes in
// the whole file, "lines": number of lines in the whole file, "offset" and
// "limit": the range applied (limit 0 = to the end), "truncated": true when
// content stops before the end of the file, "binary": true when a NUL byte
// occurs in the first 8 KiB (content is then empty)}.
func (w *Workspace) readFile(ctx context.Context, in map[string]any) (map[string]any, error) {
	p, ok, err := strArg(in, "path")
	if err != nil {
		return nil, err
	}
	if !ok || p == "" {
		return nil, action.Errorf(action.CodeInvalidInput, "path is required")
	}
	_, hasOffset := in["offset"]
	_, hasLimit := in["limit"]
	offset, err := intArg(in, "offset", 0)
	if err != nil {
		return nil, err
	}
	limit, err := intArg(in, "limit", 0)
	if err != nil {
		return nil, err
	}
	if offset < 0 {
		return nil, action.Errorf(action.CodeInvalidInput, "offset must be at least 0")
	}
	if hasLimit && limit < 1 {
		return nil, action.Errorf(action.CodeInvalidInput, "limit must be at least 1")
	}
	ranged := (hasOffset && in["offset"] != nil) || (hasLimit && in["limit"] != nil)

	rel, wantDir, err := parsePath(p)
	if err != nil {
		return nil, err
	}
	fi, err := w.statParsed(p, rel, wantDir)
	if err != nil {
		w.held.drop(rel) // what was read there before, if anything
		return nil, err
	}
	var f *os.File
	switch {
	case fi == nil:
		// Gone: openRegular says how, as it does for any path.
		w.held.drop(rel)
		f, fi, err = w.openFile(rel)
	default:
		// The file read last at rel, if it is still the one there (see
		// heldFiles); else statPath's stat serves as openRegular's: one
		// stat per read.
		if f = w.held.take(rel, fi); f == nil {
			f, fi, err = openStatted(w.root, rel, fi, w.dev)
		}
	}
	if err != nil {
		return nil, err
	}
	readOK := false
	defer func() {
		if readOK {
			w.held.put(rel, f, fi)
		} else {
			f.Close()
		}
	}()
	if !ranged && fi.Size() > w.opts.MaxFileBytes {
		return nil, &action.Error{
			Code:    action.CodeTooLarge,
			Message: fmt.Sprintf("file %s has %d bytes, more than the %d allowed; read a range with offset and limit", quote(rel), fi.Size(), w.opts.MaxFileBytes),
			Payload: map[string]any{"path": rel, "size": fi.Size(), "max_file_bytes": w.opts.MaxFileBytes},
		}
	}

	// From the start, with positioned reads: a held file keeps no offset.
	r := fromStart(f)
	var res readResult
	if ranged {
		res, err = readLines(ctx, r, offset, limit, w.opts.MaxFileBytes)
	} else {
		res, err = readWhole(ctx, r, fi.Size(), w.opts.MaxFileBytes, &w.sums, rel)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", quote(rel), err)
	}
	readOK = true
	content := res.content
	if res.binary {
		content = ""
	}
	return map[string]any{
		"path":      rel,
		"content":   content,
		"sha256":    res.sum,
		"size":      res.size,
		"lines":     res.lines,
		"offset":    offset,
		"limit":     limit,
		"truncated": !res.binary && res.truncated,
		"binary":    res.binary,
	}, nil
}

type readResult struct {
	content   string
	sum       string
	size      int64
	lines     int64
	truncated bool
	binary    bool
}

// readWhole is readLines(ctx, r, 0, 0, maxBytes) for a file whose size
// was size when it was opened: the common case of a whole small file is
// read in one go and its lines counted at once. A file that grew since
// goes through readLines.
func readWhole(ctx context.Context, r io.Reader, size, maxBytes int64, sums *readSums, rel string) (readResult, error) {
	if size < 0 || size > maxBytes {
		return readLines(ctx, r, 0, 0, maxBytes)
	}
	if err := ctx.Err(); err != nil {
		return readResult{}, action.Errorf(action.CodeTimeout, "read interrupted: %v", err)
	}
	// A read that the memo answers gives its buffer back; any other keeps
	// it as its content.
	buf := readBuffer(int(size) + 1)
	n, err := readToSize(r, buf, size)
	switch {
	case err == nil: // more than size bytes: the file grew
		return readLines(ctx, io.MultiReader(bytes.NewReader(buf), r), 0, 0, maxBytes)
	case err != io.ErrUnexpectedEOF && err != io.EOF:
		return readResult{}, err
	}
	b := buf[:n]
	if res, ok := sums.match(rel, b); ok {
		giveBack(buf)
		return res, nil
	}
	sum := sha256.Sum256(b)
	res := readResult{size: int64(n), sum: hex.EncodeToString(sum[:]), lines: int64(bytes.Count(b, []byte{'\n'}))}
	if n > 0 && b[n-1] != '\n' {
		res.lines++
	}
	// buf is this read's own and is never written again: its bytes are
	// the content, without a copy.
	var data string
	if n > 0 {
		data = unsafe.String(&b[0], n)
	}
	if bytes.IndexByte(b[:min(n, binarySniffBytes)], 0) >= 0 {
		res.binary = true
	} else {
		res.content = data
	}
	sums.note(rel, data, res)
	return res, nil
}

// readToSize reads r, a file of size bytes, into buf (size+1 bytes), as
// io.ReadFull does, but in one read when that read returns exactly size
// bytes: a read of a regular file that stops short of the buffer stops at
// the file's end, so the end needs no second read to be seen. The content
// is then the file as it was at that read (had it grown since, the bytes
// past size came after). Fewer bytes read on; a full buffer means the file
// grew.
func readToSize(r io.Reader, buf []byte, size int64) (int, error) {
	n, err := r.Read(buf)
	switch {
	case n == len(buf):
		return n, nil
	case err == nil && int64(n) != size:
		more, err := io.ReadFull(r, buf[n:])
		if n > 0 && err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n + more, err
	case n == 0 && err == io.EOF:
		return 0, io.EOF
	case err == nil || err == io.EOF:
		return n, io.ErrUnexpectedEOF
	}
	return n, err
}

// readLines streams r once: it hashes every byte, counts lines, sniffs for
// binary content and keeps lines [offset, offset+limit) up to maxBytes of
// content. limit 0 means to the end.
func readLines(ctx context.Context, r io.Reader, offset, limit, maxBytes int64) (readResult, error) {
	h := sha256.New()
	br := bufio.NewReaderSize(io.TeeReader(r, h), 64<<10)
	var (
		res     readResult
		content bytes.Buffer
		sniffed int
		line    int64
	)
	for {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return res, action.Errorf(action.CodeTimeout, "read interrupted: %v", err)
			}
		}
		chunk, err := br.ReadSlice('\n')
		if len(chunk) > 0 {
			res.size += int64(len(chunk))
			if sniffed < binarySniffBytes {
				n := min(len(chunk), binarySniffBytes-sniffed)
				if bytes.IndexByte(chunk[:n], 0) >= 0 {
					res.binary = true
				}
				sniffed += n
			}
			inRange := line >= offset && (limit == 0 || line < offset+limit)
			if inRange && !res.binary && !res.truncated {
				room := maxBytes - int64(content.Len())
				if int64(len(chunk)) <= room {
					content.Write(chunk)
				} else {
					if content.Len() == 0 {
						// A single line longer than the cap: return its
						// head rather than nothing.
						content.Write(chunk[:room])
					}
					res.truncated = true
				}
			} else if !inRange && line >= offset && !res.truncated {
				res.truncated = true
			}
			if err == nil || err == io.EOF {
				line++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			return res, err
		}
	}
	res.lines = line
	res.content = content.String()
	res.sum = hex.EncodeToString(h.Sum(nil))
	return res, nil
}
