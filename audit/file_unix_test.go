//go:build unix

package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenJSONLRefusesNonRegularFile: what sits at the log's path must be
// a regular file; a named pipe is refused without blocking.
func TestOpenJSONLRefusesNonRegularFile(t *testing.T) {
	cases := []struct {
		name string
		make func(path string) error
		kind string
	}{
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "directory"},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "named pipe"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.jsonl")
			if err := tc.make(path); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 2)
			go func() {
				_, err := OpenJSONL(path)
				done <- err
				_, err = VerifyJSONLFile(context.Background(), path)
				done <- err
			}()
			for range 2 {
				select {
				case err := <-done:
					if !errors.Is(err, ErrNotLogFile) || !strings.Contains(err.Error(), tc.kind) {
						t.Errorf("error %v, want ErrNotLogFile naming a %s", err, tc.kind)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("opening blocked")
				}
			}
		})
	}
}
