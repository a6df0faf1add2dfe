//go:build unix

package audit

import "syscall"

// oNoFollow makes an open fail when the last component of the path is a
// symbolic link, instead of following it.
const oNoFollow = syscall.O_NOFOLLOW
