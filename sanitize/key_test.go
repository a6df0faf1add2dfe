package sanitize

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestLoadOrCreateKey(t *testing.T) {
	t.Run("creates a private 32-byte key", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "sub", "sanitize.key")
		key, err := LoadOrCreateKey(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(key) != KeyLen {
			t.Errorf("key has %d bytes, want %d", len(key), KeyLen)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("mode %v, want 0600", mode)
		}
		again, err := LoadOrCreateKey(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(key, again) {
			t.Error("second load returned a different key")
		}
		if bytes.Equal(key, make([]byte, KeyLen)) {
			t.Error("key is all zeros")
		}
	})
	t.Run("two installations get different keys", func(t *testing.T) {
		a, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "k"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := LoadOrCreateKey(filepath.Join(t.TempDir(), "k"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(a, b) {
			t.Error("equal keys")
		}
	})
	t.Run("loads an existing key", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "k")
		want := bytes.Repeat([]byte("k"), 20)
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadOrCreateKey(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("got %q, %v; want %q", got, err, want)
		}
	})
	t.Run("refuses a short key file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "k")
		if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadOrCreateKey(path); !errors.Is(err, ErrKeyTooShort) {
			t.Errorf("err = %v, want ErrKeyTooShort", err)
		}
	})
	t.Run("concurrent creators agree", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "k")
		const n = 8
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				keys[i], errs[i] = LoadOrCreateKey(path)
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("creator %d: %v", i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("creator %d got a different key", i)
			}
		}
		left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".sanitize-key-*"))
		if len(left) != 0 {
			t.Errorf("temporary files left: %v", left)
		}
	})
	t.Run("unreadable path is an error", func(t *testing.T) {
		dir := t.TempDir() // a directory cannot be read as a key
		if _, err := LoadOrCreateKey(dir); err == nil {
			t.Error("no error")
		}
	})
}
