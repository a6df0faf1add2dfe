//go:build !linux

package bridge

import (
	"io"
	"syscall"
)

// growOutputBuffer does nothing where buffers are not resized.
func growOutputBuffer(io.Writer) {}

// outputConn finds no descriptor here: messages go out through the
// writer, in one piece.
func outputConn(io.Writer) (syscall.RawConn, bool) { return nil, false }

func sendNoWait(_ syscall.RawConn, parts [][]byte) [][]byte { return parts }

func writeParts(_ syscall.RawConn, parts [][]byte) [][]byte { return parts }
