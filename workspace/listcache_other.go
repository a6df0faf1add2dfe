//go:build !linux

package workspace

import "os"

// listCache is Linux only (inotify); elsewhere every listing reads its
// directory.
type listCache struct{}

func newListCache(*os.Root) *listCache { return nil }

func (*listCache) close() {}

func (*listCache) list(string, bool) ([]listEntry, bool) { return nil, false }
