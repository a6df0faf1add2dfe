package sanitize

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyLen is the size of a key made by LoadOrCreateKey.
const KeyLen = 32

// maxKeyFile bounds how much of a key file is read: a key is a few dozen
// bytes, and a huge file at the key's path is a mistake, not a key.
const maxKeyFile = 4096

// ErrKeyFileUnsafe is returned (wrapped) by LoadOrCreateKey and LoadKey
// when the key's path is a symbolic link, is not a regular file, or is a
// file that its group or other users may read or write. The message says
// which, and how to fix it.
var ErrKeyFileUnsafe = errors.New("sanitize: unsafe key file")

// LoadOrCreateKey returns the per-installation HMAC key stored at path. If
// the file does not exist it is created with mode 0600 holding KeyLen
// random bytes (its directory with 0700 when missing); the file appears
// atomically and complete, and when several processes race, all of them
// end up with the same key. The file's bytes are the key as they are; a
// file shorter than MinKeyLen bytes is refused (wrapping ErrKeyTooShort).
//
// The key is read only from a regular file at path itself, private to its
// owner: a symbolic link at path (whose target someone else may have
// chosen, and so know), a directory, a pipe or a device, and a file whose
// mode gives its group or others any access, are refused, wrapping
// ErrKeyFileUnsafe; nothing is created in their place and a link's target
// is neither read nor written. Directories above path are followed as
// usual: keeping them out of others' hands, and the file's owner right,
// is the operator's job. Anyone who reads the key can test guesses
// against redacted values.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := LoadKey(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	key = make([]byte, KeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	// Write a complete temporary file (created with O_EXCL and mode 0600),
	// then link it into place: link fails if path exists, even as a
	// dangling symbolic link, so a concurrent creator's key is never
	// overwritten, no link is followed, and no reader ever sees a
	// half-written file.
	tmp, err := os.CreateTemp(dir, ".sanitize-key-*")
	if err != nil {
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process won the race, or something was put there:
			// what is at path now is checked as any existing key is.
			return LoadKey(path)
		}
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	return key, nil
}

// LoadKey returns the HMAC key stored at path, as LoadOrCreateKey does, but
// never creates one: a missing file is an error wrapping fs.ErrNotExist.
// It is for readers of what the key protects (verifying an audit log), who
// must not make a new key that matches nothing.
func LoadKey(path string) ([]byte, error) {
	f, err := openKeyFile(path)
	if err != nil {
		return nil, fmt.Errorf("load sanitizer key: %w", err)
	}
	defer f.Close()
	key, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("load sanitizer key %s: %w", path, err)
	}
	if len(key) > maxKeyFile {
		return nil, fmt.Errorf("load sanitizer key %s: more than %d bytes: %w", path, maxKeyFile, ErrKeyFileUnsafe)
	}
	return checkKey(path, key)
}

// openKeyFile opens path for reading if it is a private regular file that
// path names itself.
func openKeyFile(path string) (*os.File, error) {
	// Looked at before opening, so that a named pipe is refused instead of
	// blocking the open; checked again on the open file, which is what
	// counts.
	if fi, err := os.Lstat(path); err == nil {
		if err := checkKeyFileInfo(path, fi); err != nil {
			return nil, err
		}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, checkKeyFileInfo(path, fi)
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkKeyFileInfo(path, fi)
	}
	if err == nil {
		lfi, lerr := os.Lstat(path)
		switch {
		case lerr != nil:
			err = lerr
		case !os.SameFile(fi, lfi):
			err = fmt.Errorf("%s was replaced while it was being opened, or is a symbolic link: %w", path, ErrKeyFileUnsafe)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkKeyFileInfo(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	switch {
	case m&fs.ModeSymlink != 0:
		target, _ := os.Readlink(path)
		return fmt.Errorf("%s is a symbolic link (to %q); the key is read only from a regular file at its own path, never through a link: remove the link, or configure the path it points to: %w",
			path, target, ErrKeyFileUnsafe)
	case !m.IsRegular():
		return fmt.Errorf("%s is not a regular file (%v): %w", path, m.Type(), ErrKeyFileUnsafe)
	case m.Perm()&0o077 != 0:
		return fmt.Errorf("%s has mode %04o, so its group or other users can reach the key: make it private (chmod 600 %s), and replace the key if others may have read it: %w",
			path, m.Perm(), path, ErrKeyFileUnsafe)
	}
	return nil
}

func checkKey(path string, key []byte) ([]byte, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("load sanitizer key %s: %d bytes, need at least %d: %w", path, len(key), MinKeyLen, ErrKeyTooShort)
	}
	return key, nil
}
