//go:build unix

package sanitize

import "syscall"

// oNoFollow makes opening the key file fail when its path is a symbolic
// link, instead of following it.
const oNoFollow = syscall.O_NOFOLLOW
