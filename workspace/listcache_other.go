//go:build !linux

package workspace

import "os"

// listCache is Linux only (inotify); elsewhere every listing reads its
// directory.
type listCache struct{}

func newListCache(*os.Root) *listCache { return nil }

func (*listCache) close() {}

func (*listCache) get(string, bool) ([]listEntry, bool) { return nil, false }

func (*listCache) fill(*os.Root, string, bool) ([]listEntry, bool) { return nil, false }
