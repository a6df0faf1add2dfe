package workspace

import (
	"slices"
	"sync"
)

// Patch locking. An apply holds one lock per root-relative path its plan
// reads or writes (both names of a rename), so applies to different files
// run, and fsync, at the same time, while applies that share a file are
// serialised. The locks are taken in sorted order, so two applies never
// wait for each other in a cycle.
//
// Every apply also holds patchAll for reading; the rare apply whose plan
// keeps changing under it (see applyPatch) takes it for writing and runs
// alone.
//
// The locks are per process and keyed by the root's resolved path and the
// root-relative path: two Workspaces on one directory exclude each other,
// other processes do not, and two spellings of one file (hard links, case
// on a case-insensitive file system) are not known to be the same file.

// patchAll is held for reading by every per-path apply, for writing by an
// apply that runs alone.
var patchAll sync.RWMutex

// pathLocks maps a lock key to its lock while anyone holds or waits for it.
var pathLocks = struct {
	sync.Mutex
	m map[string]*pathLock
}{m: map[string]*pathLock{}}

type pathLock struct {
	mu   sync.Mutex
	refs int // holders and waiters; the entry is dropped at 0
}

// testHookLockWait, when set by a test, is called with a key whose lock is
// held by another apply, just before waiting for it.
var testHookLockWait func(key string)

// lockKey names rel in w for the lock table.
func (w *Workspace) lockKey(rel string) string {
	return w.rootPath + "\x00" + rel
}

// planKeys returns the sorted, distinct lock keys of every path plan reads
// or writes.
func (w *Workspace) planKeys(plan PatchPlan) []string {
	keys := make([]string, 0, len(plan.Files)+1)
	for _, f := range plan.Files {
		keys = append(keys, w.lockKey(f.Path))
		if f.OldPath != "" {
			keys = append(keys, w.lockKey(f.OldPath))
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// lockPaths locks every key of keys (sorted and distinct, as planKeys
// returns them) in order and returns the function that unlocks them all.
// The caller holds patchAll for reading.
func lockPaths(keys []string) (unlock func()) {
	held := make([]*pathLock, 0, len(keys))
	for _, k := range keys {
		pathLocks.Lock()
		l := pathLocks.m[k]
		if l == nil {
			l = &pathLock{}
			pathLocks.m[k] = l
		}
		l.refs++
		pathLocks.Unlock()
		if !l.mu.TryLock() {
			if testHookLockWait != nil {
				testHookLockWait(k)
			}
			l.mu.Lock()
		}
		held = append(held, l)
	}
	return func() {
		for i := len(held) - 1; i >= 0; i-- {
			l := held[i]
			l.mu.Unlock()
			pathLocks.Lock()
			if l.refs--; l.refs == 0 {
				delete(pathLocks.m, keys[i])
			}
			pathLocks.Unlock()
		}
	}
}

// coveredBy reports whether every key of sub is in keys (both sorted).
func coveredBy(sub, keys []string) bool {
	for _, k := range sub {
		if _, ok := slices.BinarySearch(keys, k); !ok {
			return false
		}
	}
	return true
}
