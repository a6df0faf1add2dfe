//go:build !linux

package workspace

import "testing"

type fileWatch struct{}

func newFileWatch(testing.TB, ...string) *fileWatch { return &fileWatch{} }
func (*fileWatch) events() []string                 { return nil }
func (*fileWatch) drain()                           {}
