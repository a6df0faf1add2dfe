//go:build !linux

package mcp

import "io"

// growOutputBuffer does nothing where buffers are not resized.
func growOutputBuffer(io.Writer) {}
