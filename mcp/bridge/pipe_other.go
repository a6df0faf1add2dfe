//go:build !linux

package bridge

import "io"

// growOutputBuffer does nothing where buffers are not resized.
func growOutputBuffer(io.Writer) {}
