//go:build !linux

package bridge

import (
	"os"
	"testing"
)

// socketPair is not made here: forEachPipe runs its pipes only.
var socketPair func(t *testing.T) (*os.File, *os.File)
