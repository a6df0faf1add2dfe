package workspace

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// maxGitIndexBytes bounds the index files Harness reads to find
// submodules; a repository of a million files has an index of about 100 MB.
const maxGitIndexBytes = 512 << 20

// indexGitlinks returns the paths of the submodules (gitlink entries, mode
// 160000) that the index file at path lists, slash separated and relative
// to the work tree. hashSize is 20 (SHA-1) or 32 (SHA-256). A split index
// also lists the entries of its shared index. A missing index lists none.
//
// These are the paths where `git status` and `git diff` start a git in the
// submodule, which then reads that submodule's configuration.
func indexGitlinks(path string, hashSize int) ([]string, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	sk, keyed := statKey(path, fi)
	key := indexKey{fileStatKey: sk, hash: hashSize}
	if keyed {
		indexCache.Lock()
		links, ok := indexCache.m[key]
		indexCache.Unlock()
		if ok {
			return links, nil
		}
	}
	if fi.Size() > maxGitIndexBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB", path, maxGitIndexBytes>>20)
	}
	data, err := readRegularFile(path, maxGitIndexBytes, false)
	if err != nil {
		return nil, err
	}
	links, shared, err := parseIndexGitlinks(data, hashSize)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if shared != "" {
		more, err := indexGitlinks(filepath.Join(filepath.Dir(path), "sharedindex."+shared), hashSize)
		if err != nil {
			return nil, err
		}
		links = append(links, more...)
	}
	if keyed {
		indexCache.Lock()
		if len(indexCache.m) >= 256 {
			clear(indexCache.m)
		}
		indexCache.m[key] = links
		indexCache.Unlock()
	}
	return links, nil
}

type indexKey struct {
	fileStatKey
	hash int
}

// fileStatKey identifies a file's content by its stat data. The change
// time cannot be set back by a program, so a rewritten file is never taken
// for the one read before.
type fileStatKey struct {
	path        string
	size, mtime int64
	ctime       int64
	ino         uint64
}

var indexCache = struct {
	sync.Mutex
	m map[indexKey][]string
}{m: map[indexKey][]string{}}

// parseIndexGitlinks reads git's index format, versions 2 to 4
// (Documentation/gitformat-index.txt), and returns the gitlink paths and,
// for a split index, the hex name of its shared index. Only the entries are
// read; extensions other than "link" are skipped, the checksum is not
// checked (git checks it when it reads the index).
func parseIndexGitlinks(data []byte, hashSize int) ([]string, string, error) {
	bad := func(what string) ([]string, string, error) {
		return nil, "", fmt.Errorf("not a git index: %s", what)
	}
	if len(data) < 12+hashSize || string(data[:4]) != "DIRC" {
		return bad("no DIRC header")
	}
	version := binary.BigEndian.Uint32(data[4:])
	if version < 2 || version > 4 {
		return bad(fmt.Sprintf("version %d", version))
	}
	n := binary.BigEndian.Uint32(data[8:])
	end := len(data) - hashSize
	pos := 12
	var links []string
	var prev []byte
	// ctime, mtime, dev, ino, mode, uid, gid, size, then the object name
	// and 16 bits of flags.
	fixed := 40 + hashSize + 2
	for i := uint32(0); i < n; i++ {
		start := pos
		if pos+fixed > end {
			return bad("truncated entry")
		}
		mode := binary.BigEndian.Uint32(data[pos+24:])
		flags := binary.BigEndian.Uint16(data[pos+40+hashSize:])
		pos += fixed
		if flags&0x4000 != 0 {
			if version < 3 {
				return bad("extended flags in version 2")
			}
			pos += 2
		}
		if pos > end {
			return bad("truncated entry")
		}
		var name []byte
		if version == 4 {
			strip, w := binary.Uvarint(data[pos:min(end, pos+10)])
			if w <= 0 || strip > uint64(len(prev)) {
				return bad("path prefix")
			}
			pos += w
			nul := bytes.IndexByte(data[pos:end], 0)
			if nul < 0 {
				return bad("unterminated path")
			}
			name = append(prev[:len(prev)-int(strip):len(prev)-int(strip)], data[pos:pos+nul]...)
			pos += nul + 1
		} else {
			nul := bytes.IndexByte(data[pos:end], 0)
			if nul < 0 {
				return bad("unterminated path")
			}
			name = data[pos : pos+nul]
			// Entries are padded with 1 to 8 NULs to a multiple of 8.
			pos = start + (pos+nul-start+8)&^7
			if pos > end {
				return bad("truncated padding")
			}
		}
		if mode&0o170000 == 0o160000 {
			links = append(links, string(name))
		}
		prev = name
	}
	shared := ""
	for pos+8 <= end {
		sig := string(data[pos : pos+4])
		size := int(binary.BigEndian.Uint32(data[pos+4:]))
		pos += 8
		if size < 0 || size > end-pos {
			return bad("truncated extension")
		}
		if sig == "link" {
			if size < hashSize {
				return bad("short link extension")
			}
			oid := data[pos : pos+hashSize]
			if !bytes.Equal(oid, make([]byte, hashSize)) {
				shared = hex.EncodeToString(oid)
			}
		}
		pos += size
	}
	return links, shared, nil
}
