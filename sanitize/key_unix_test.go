//go:build unix

package sanitize

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKeyFileRefusesNamedPipe: a pipe at the key's path is refused at
// once; opening it would block until someone writes the "key".
func TestKeyFileRefusesNamedPipe(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hmac.key")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := LoadOrCreateKey(path)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrKeyFileUnsafe) || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("err = %v, want ErrKeyFileUnsafe", err)
		}
	case <-time.After(5 * time.Second):
		// Unblock the open so the test can end.
		if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		t.Fatal("loading the key blocked on a named pipe")
	}
}
