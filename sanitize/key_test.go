package sanitize

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// TestKeyFileIsNeverReachedThroughALink plants a symbolic link at the key's
// path, pointing at a file whose bytes the planter knows (or at nothing):
// loading must refuse it, naming the link, and the target must be neither
// read as the key nor changed nor created.
func TestKeyFileIsNeverReachedThroughALink(t *testing.T) {
	known := bytes.Repeat([]byte("k"), KeyLen)
	cases := []struct {
		name  string
		plant func(t *testing.T, dir, path string) (target string, content []byte)
	}{
		{"link to a key-shaped file", func(t *testing.T, dir, path string) (string, []byte) {
			target := filepath.Join(dir, "outside", "known.key")
			writeFile(t, target, known, 0o600)
			symlinkT(t, target, path)
			return target, known
		}},
		{"relative link", func(t *testing.T, dir, path string) (string, []byte) {
			target := filepath.Join(dir, "outside", "rel.key")
			writeFile(t, target, known, 0o600)
			symlinkT(t, "../outside/rel.key", path)
			return target, known
		}},
		{"chain of links", func(t *testing.T, dir, path string) (string, []byte) {
			target := filepath.Join(dir, "outside", "end.key")
			writeFile(t, target, known, 0o600)
			symlinkT(t, target, filepath.Join(dir, "outside", "mid"))
			symlinkT(t, filepath.Join(dir, "outside", "mid"), path)
			return target, known
		}},
		{"dangling link", func(t *testing.T, dir, path string) (string, []byte) {
			target := filepath.Join(dir, "outside", "planted.key")
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				t.Fatal(err)
			}
			symlinkT(t, target, path)
			return target, nil
		}},
		{"link to a directory", func(t *testing.T, dir, path string) (string, []byte) {
			target := filepath.Join(dir, "outside", "d")
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			symlinkT(t, target, path)
			return filepath.Join(target, "hmac.key"), nil
		}},
	}
	for _, tc := range cases {
		for _, load := range []struct {
			name string
			fn   func(string) ([]byte, error)
		}{{"LoadOrCreateKey", LoadOrCreateKey}, {"LoadKey", LoadKey}} {
			t.Run(tc.name+"/"+load.name, func(t *testing.T) {
				dir := t.TempDir()
				if err := os.Mkdir(filepath.Join(dir, "config"), 0o700); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(dir, "config", "hmac.key")
				target, content := tc.plant(t, dir, path)
				key, err := load.fn(path)
				if err == nil || bytes.Equal(key, known) {
					t.Fatalf("loaded %q through a link", key)
				}
				if !errors.Is(err, ErrKeyFileUnsafe) || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), path) {
					t.Errorf("error %q: want ErrKeyFileUnsafe naming the link at %s", err, path)
				}
				got, rerr := os.ReadFile(target)
				switch {
				case content == nil && !errors.Is(rerr, fs.ErrNotExist):
					t.Errorf("%s was created", target)
				case content != nil && !bytes.Equal(got, content):
					t.Errorf("%s changed: %q", target, got)
				}
				if fi, err := os.Lstat(path); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("the link at %s was replaced", path)
				}
				left, _ := filepath.Glob(filepath.Join(dir, "config", ".sanitize-key-*"))
				if len(left) != 0 {
					t.Errorf("temporary files left: %v", left)
				}
			})
		}
	}
}

// TestKeyFileMustBePrivate: a key file its group or others can read or
// write is refused, and left as it is.
func TestKeyFileMustBePrivate(t *testing.T) {
	key := bytes.Repeat([]byte("s"), KeyLen)
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620, 0o602, 0o660, 0o644, 0o666, 0o610} {
		t.Run(mode.String(), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hmac.key")
			writeFile(t, path, key, mode)
			for _, load := range []func(string) ([]byte, error){LoadOrCreateKey, LoadKey} {
				_, err := load(path)
				if !errors.Is(err, ErrKeyFileUnsafe) || !strings.Contains(err.Error(), "chmod 600") {
					t.Errorf("mode %v: %v, want ErrKeyFileUnsafe saying how to fix it", mode, err)
				}
			}
			got, _ := os.ReadFile(path)
			fi, _ := os.Stat(path)
			if !bytes.Equal(got, key) || fi.Mode().Perm() != mode {
				t.Errorf("the refused key file changed: %q %v", got, fi.Mode())
			}
		})
	}
	for _, mode := range []os.FileMode{0o600, 0o400, 0o700} {
		path := filepath.Join(t.TempDir(), "hmac.key")
		writeFile(t, path, key, mode)
		if got, err := LoadOrCreateKey(path); err != nil || !bytes.Equal(got, key) {
			t.Errorf("private mode %v: %q, %v", mode, got, err)
		}
	}
}

func TestLoadKeyNeverCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "hmac.key")
	if _, err := LoadKey(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadKey of a missing key: %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("LoadKey created the key's directory")
	}
	made, err := LoadOrCreateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := LoadKey(path); err != nil || !bytes.Equal(got, made) {
		t.Errorf("LoadKey after creation: %q, %v", got, err)
	}
}

func TestLoadKeyRefusesHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hmac.key")
	writeFile(t, path, bytes.Repeat([]byte("x"), maxKeyFile+1), 0o600)
	if _, err := LoadKey(path); !errors.Is(err, ErrKeyFileUnsafe) {
		t.Errorf("err = %v, want ErrKeyFileUnsafe", err)
	}
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

func symlinkT(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
