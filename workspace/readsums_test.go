package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkRead reads rel through the workspace and compares everything the
// payload says of the file with the file's bytes on disk now.
func checkRead(t *testing.T, f *fixture, rel, why string) {
	t.Helper()
	disk, err := os.ReadFile(filepath.Join(f.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	out := f.mustRun(t, "workspace_read_file", map[string]any{"path": rel})
	sum := sha256.Sum256(disk)
	binary := strings.IndexByte(string(disk[:min(len(disk), binarySniffBytes)]), 0) >= 0
	wantContent := string(disk)
	if binary {
		wantContent = ""
	}
	if out["sha256"] != hex.EncodeToString(sum[:]) || out["content"] != wantContent || out["size"] != int64(len(disk)) || out["binary"] != binary {
		t.Fatalf("%s: read of %s says sha256 %v, size %v, binary %v, content %.40q; the file has %d bytes, sha256 %x, binary %v, %.40q",
			why, rel, out["sha256"], out["size"], out["binary"], out["content"], len(disk), sum, binary, disk)
	}
	lines := int64(strings.Count(string(disk), "\n"))
	if len(disk) > 0 && disk[len(disk)-1] != '\n' {
		lines++
	}
	if out["lines"] != lines {
		t.Fatalf("%s: %v lines, want %d", why, out["lines"], lines)
	}
}

// TestReadSumsNeverStale: a file read again after any change of its
// bytes (same size or not, its times set back to what they were, binary
// and text, replaced by a rename) reads as the file is now, hash and
// line count included.
func TestReadSumsNeverStale(t *testing.T) {
	base := strings.Repeat("line of text\n", 1500)
	changes := []struct {
		name string
		data func(old string) string
	}{
		{"first byte", func(o string) string { return "X" + o[1:] }},
		{"last byte", func(o string) string { return o[:len(o)-1] + "X" }},
		{"middle byte", func(o string) string { return o[:len(o)/2] + "X" + o[len(o)/2+1:] }},
		{"a line break moved", func(o string) string { return "\nline of text" + o[13:] }},
		{"grown", func(o string) string { return o + "more\n" }},
		{"shrunk", func(o string) string { return o[:len(o)-5] }},
		{"binary", func(o string) string { return "\x00" + o[1:] }},
		{"emptied", func(string) string { return "" }},
		{"unchanged", func(o string) string { return o }},
	}
	for _, c := range changes {
		for _, how := range []string{"write", "rename"} {
			t.Run(c.name+"/"+how, func(t *testing.T) {
				f := newFixture(t, DefaultOptions(), map[string]string{"f.txt": base})
				path := filepath.Join(f.root, "f.txt")
				checkRead(t, f, "f.txt", "first read")
				checkRead(t, f, "f.txt", "read again")
				fi, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				data := c.data(base)
				switch how {
				case "write":
					if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
						t.Fatal(err)
					}
				case "rename":
					tmp := filepath.Join(f.root, "tmp")
					if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
						t.Fatal(err)
					}
					if err := os.Rename(tmp, path); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
					t.Fatal(err)
				}
				checkRead(t, f, "f.txt", "after the change")
				checkRead(t, f, "f.txt", "read again after the change")
			})
		}
	}
}

// TestReadSumsRandom: random writes of a few small files, from a tiny
// alphabet so that equal sizes and equal contents are common, each
// followed by reads that must match the file on disk; and the memo stays
// within its bounds.
func TestReadSumsRandom(t *testing.T) {
	f := newFixture(t, DefaultOptions(), nil)
	rng := rand.New(rand.NewPCG(5, 6))
	names := []string{"a", "b", "c", "d/e"}
	if err := os.MkdirAll(filepath.Join(f.root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(f.root, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2000 {
		name := names[rng.IntN(len(names))]
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteByte("ab\n\x00"[rng.IntN(4)])
		}
		if err := os.WriteFile(filepath.Join(f.root, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for range 1 + rng.IntN(2) {
			checkRead(t, f, names[rng.IntN(len(names))], fmt.Sprintf("step %d", i))
		}
	}
	// Many files: the memo forgets, reads stay right.
	for i := range readSumsMaxEntries + 50 {
		name := fmt.Sprintf("many%03d", i)
		if err := os.WriteFile(filepath.Join(f.root, name), []byte(strings.Repeat("y", 1+i%7)), 0o644); err != nil {
			t.Fatal(err)
		}
		checkRead(t, f, name, "many")
	}
	f.w.sums.mu.Lock()
	n, bytes := len(f.w.sums.m), f.w.sums.bytes
	f.w.sums.mu.Unlock()
	if n > readSumsMaxEntries || bytes > readSumsMaxBytes {
		t.Fatalf("the memo holds %d files, %d bytes", n, bytes)
	}
}
