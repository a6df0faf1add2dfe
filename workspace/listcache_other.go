//go:build !linux

package workspace

import (
	"os"

	"github.com/harness-runtime/harness/action"
)

// listCache is Linux only (inotify); elsewhere every listing reads its
// directory.
type listCache struct{}

func newListCache(*os.Root) *listCache { return nil }

func (*listCache) close() {}

func (*listCache) list(string, bool) (action.Entries, bool) { return nil, false }
