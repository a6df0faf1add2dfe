//go:build !linux

package bridge

import (
	"io"
	"os"
	"syscall"
)

// outputConn finds no descriptor here: messages go out through the
// writer, in one piece.
func outputConn(io.Writer) (syscall.RawConn, os.FileMode) { return nil, 0 }

// growOutputBuffer does nothing where buffers are not resized.
func growOutputBuffer(syscall.RawConn, os.FileMode) {}

func sendNoWait(_ syscall.RawConn, parts [][]byte) [][]byte { return parts }

func writeParts(_ syscall.RawConn, parts [][]byte) [][]byte { return parts }
