//go:build !linux

package workspace

import (
	"errors"
	"testing"
)

type accessWatch struct{}

func newAccessWatch(t testing.TB, paths ...string) *accessWatch { return &accessWatch{} }
func (a *accessWatch) events() []string                         { return nil }
func (a *accessWatch) assertUntouched(t testing.TB)             {}
func mknodZero(path string) error                               { return errors.New("unsupported") }
func mountProc(path string) (func(), error)                     { return nil, errors.New("unsupported") }

func bindFile(src, dst string) (func(), error) { return nil, errors.New("unsupported") }
