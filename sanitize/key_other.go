//go:build !unix

package sanitize

// oNoFollow is 0 where the platform has no O_NOFOLLOW: there a symbolic
// link at the key's path is found by comparing the file opened with what
// the path names (see openKeyFile).
const oNoFollow = 0
