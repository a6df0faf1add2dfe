package sanitize

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// KeyLen is the size of a key made by LoadOrCreateKey.
const KeyLen = 32

// LoadOrCreateKey returns the per-installation HMAC key stored at path. If
// the file does not exist it is created with mode 0600 holding KeyLen
// random bytes (its directory with 0700 when missing); the file appears
// atomically and complete, and when several processes race, all of them
// end up with the same key. The file's bytes are the key as they are; a
// file shorter than MinKeyLen bytes is refused (wrapping ErrKeyTooShort).
// It does not check who owns the file or its mode: keeping it private is
// the operator's job, and anyone who reads it can test guesses against
// redacted values.
func LoadOrCreateKey(path string) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil {
		return checkKey(path, key)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load sanitizer key: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	key = make([]byte, KeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	// Write a complete temporary file, then link it into place: link fails
	// if path exists, so a concurrent creator's key is never overwritten
	// and no reader ever sees a half-written file.
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
			existing, rerr := os.ReadFile(path)
			if rerr != nil {
				return nil, fmt.Errorf("load sanitizer key: %w", rerr)
			}
			return checkKey(path, existing)
		}
		return nil, fmt.Errorf("create sanitizer key: %w", err)
	}
	return key, nil
}

func checkKey(path string, key []byte) ([]byte, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("load sanitizer key %s: %d bytes, need at least %d: %w", path, len(key), MinKeyLen, ErrKeyTooShort)
	}
	return key, nil
}
