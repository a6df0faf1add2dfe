package workspace

import (
	"hash/maphash"
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

// pathStripes are the path locks: a key takes the stripe its hash picks.
// Two keys may share a stripe, which only makes applies to them wait for
// each other; there are enough stripes that this is rare.
var pathStripes [4096]sync.Mutex

// stripeSeed seeds the hash of keys to stripes.
var stripeSeed = maphash.MakeSeed()

func stripeOf(key string) int {
	return int(maphash.String(stripeSeed, key) % uint64(len(pathStripes)))
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

// lockPaths locks the stripe of every key of keys, in stripe order, each
// once, and returns the function that unlocks them all. The caller holds
// patchAll for reading.
func lockPaths(keys []string) (unlock func()) {
	type stripe struct {
		i   int
		key string
	}
	order := make([]stripe, 0, len(keys))
	for _, k := range keys {
		order = append(order, stripe{stripeOf(k), k})
	}
	slices.SortFunc(order, func(a, b stripe) int { return a.i - b.i })
	order = slices.CompactFunc(order, func(a, b stripe) bool { return a.i == b.i })
	for _, s := range order {
		if !pathStripes[s.i].TryLock() {
			if testHookLockWait != nil {
				testHookLockWait(s.key)
			}
			pathStripes[s.i].Lock()
		}
	}
	return func() {
		for j := len(order) - 1; j >= 0; j-- {
			pathStripes[order[j].i].Unlock()
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

// dirStripes serialise, within the process, the operations that change a
// directory's entries during an apply (creating a temporary file, renaming
// it into place, removing a file). The kernel serialises them anyway on the
// directory's own lock, but a thread waiting for that lock may spin on
// it: with many applies in one directory the spinning cost more CPU than
// the operations. Waiting here parks the goroutine instead. Only one
// directory lock is ever held at a time.
var dirStripes [256]sync.Mutex

// lockDir locks the stripe of directory dir (root-relative) of w.
func (w *Workspace) lockDir(dir string) (unlock func()) {
	m := &dirStripes[maphash.String(stripeSeed, w.lockKey(dir))%uint64(len(dirStripes))]
	m.Lock()
	return m.Unlock
}
