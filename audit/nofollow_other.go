//go:build !unix

package audit

// oNoFollow is 0 where the platform has no O_NOFOLLOW: there openLogFile
// finds a symbolic link only after the open (see its documentation).
const oNoFollow = 0
