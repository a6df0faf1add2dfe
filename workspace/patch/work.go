package patch

import (
	"context"
	"errors"
	"fmt"
)

// ErrTooCostly: placing a patch would take more operations than the bound
// its input allows (see Work).
var ErrTooCostly = errors.New("too costly to place")

// Work bound. An operation is one step of the parser or the matcher: a line
// read, split, indexed or compared, a candidate place checked, or 64 bytes
// hashed or compared (64 cells of an edit-distance table). Every loop of
// the package counts its steps, so a count is a measure of the CPU a call
// took that does not depend on the machine.
const (
	// WorkPerByte is the allowance of operations per byte of input (the
	// patch text, and the content a hunk list is applied to).
	WorkPerByte = 64
	// WorkBase is the allowance every call gets whatever its size.
	WorkBase = 1 << 16
)

// WorkAllowance is the operations that input bytes of input allow:
// WorkPerByte per byte plus WorkBase.
func WorkAllowance(input int) int64 {
	return WorkPerByte*int64(input) + WorkBase
}

// checkEvery is how many operations pass between two looks at the context.
const checkEvery = 1 << 12

// Work counts the operations of ParseContext and ApplyContext and stops
// them when they reach a limit, with an error wrapping ErrTooCostly.
//
// Each call, by itself, does at most WorkAllowance of its input (the
// package's tests assert it on adversarial inputs, with FuzzPatchWorkBound),
// so a limit matters when one Work is shared by several calls: a caller
// that applies many patch sections to the same content (an envelope that
// updates one file in many sections) pays for that content once per
// section, and a shared Work bounds the sum by what the request brought.
//
// A Work is not safe for concurrent use.
type Work struct {
	ops   int64
	limit int64 // 0: none
}

// NewWork returns a Work whose limit is allowance operations; 0 means no
// limit beyond each call's own allowance.
func NewWork(allowance int64) *Work { return &Work{limit: allowance} }

// Allow raises the limit by the allowance of input bytes (WorkPerByte per
// byte), for input the request brought other than the patch text: the
// files it reads. It does nothing on a nil Work or one without a limit.
func (w *Work) Allow(input int) {
	if w != nil && w.limit > 0 {
		w.limit += WorkPerByte * int64(input)
	}
}

// Ops returns the operations counted so far.
func (w *Work) Ops() int64 { return w.ops }

// Limit returns the current limit (0: none).
func (w *Work) Limit() int64 { return w.limit }

// meter is one call's view of the work: its context, the shared counter
// and the limit that applies to this call.
type meter struct {
	ctx   context.Context
	w     *Work
	limit int64 // this call's limit on w.ops
	next  int64 // w.ops at which ctx is looked at next
	err   error
}

// newMeter starts counting a call whose input is input bytes: its limit is
// the shared one if w has one, else the call's own allowance on top of what
// w counted before.
func newMeter(ctx context.Context, w *Work, input int) *meter {
	if w == nil {
		w = &Work{}
	}
	limit := w.limit
	if limit <= 0 {
		limit = w.ops + WorkAllowance(input)
	}
	m := &meter{ctx: ctx, w: w, limit: limit, next: w.ops}
	m.check()
	return m
}

// add counts n operations and reports whether work may go on.
func (m *meter) add(n int) bool {
	if m.err != nil {
		return false
	}
	m.w.ops += int64(n)
	if m.w.ops >= m.next {
		m.check()
	}
	return m.err == nil
}

// bytes counts the operations for hashing or comparing b bytes.
func (m *meter) bytes(b int) bool { return m.add(1 + b>>6) }

func (m *meter) check() {
	if m.err != nil {
		return
	}
	if err := m.ctx.Err(); err != nil {
		m.err = fmt.Errorf("patch: stopped: %w", err)
		return
	}
	if m.w.ops > m.limit {
		m.err = fmt.Errorf("%w: placing this patch needs more than %d operations, the bound for its size; split it into smaller patches", ErrTooCostly, m.limit)
		return
	}
	m.next = min(m.w.ops+checkEvery, m.limit+1)
}

// stopped reports whether the work was stopped.
func (m *meter) stopped() bool { return m.err != nil }
