package trusted

import (
	"fmt"
	"testing"
)

// TestLockFilesStripes: an execute holds the stripe of each of its files,
// so another execute of one of those files waits, while executes of 32
// different files (the load test's shape) almost never share a stripe.
func TestLockFilesStripes(t *testing.T) {
	s := &Service{}
	free := func(path string) bool {
		i := s.stripe(path)
		if s.stripes[i].TryLock() {
			s.stripes[i].Unlock()
			return true
		}
		return false
	}
	tests := []struct {
		name     string
		held     []FileState
		other    string
		wantFree bool
	}{
		{name: "same-file-waits", held: []FileState{{Path: "a.txt"}}, other: "a.txt"},
		{name: "second-file-of-plan-waits", held: []FileState{{Path: "a.txt"}, {Path: "b.txt"}}, other: "b.txt"},
		{name: "other-file-free", held: []FileState{{Path: "a.txt"}}, other: "c.txt", wantFree: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unlock := s.lockFiles(tc.held)
			if got := free(tc.other); got != tc.wantFree {
				t.Errorf("stripe of %s free = %v while %v held, want %v", tc.other, got, tc.held, tc.wantFree)
			}
			unlock()
			if !free(tc.other) {
				t.Errorf("stripe of %s still held after unlock", tc.other)
			}
		})
	}
	seen := map[int]bool{}
	for i := range 32 {
		seen[s.stripe(fmt.Sprintf("load-%02d.txt", i))] = true
	}
	if len(seen) < 31 {
		t.Errorf("32 files share %d stripes: executes of different files would wait on each other", len(seen))
	}
}
