package action

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable snake_case reason attached to every
// observation that is not ok. Codes are part of the public contract: never
// rename one.
type Code string

// Codes of SPEC section 3. Runtimes may add their own, but these keep their
// meaning everywhere.
const (
	CodeNone                   Code = ""
	CodeUnknownAction          Code = "unknown_action"
	CodeActionDisabled         Code = "action_disabled"
	CodeTenantNotAllowed       Code = "tenant_not_allowed"
	CodeInvalidInput           Code = "invalid_input"
	CodeTrustedRuntimeDisabled Code = "trusted_runtime_disabled"
	CodeTrustRequired          Code = "trust_required"
	CodeApprovalRequired       Code = "approval_required"
	CodeApprovalDenied         Code = "approval_denied"
	CodeApprovalExpired        Code = "approval_expired"
	CodePathOutsideRoot        Code = "path_outside_root"
	CodeNotFound               Code = "not_found"
	CodeTooLarge               Code = "too_large"
	CodeWriteDisabled          Code = "write_disabled"
	CodeShellDisabled          Code = "shell_disabled"
	CodeCommandNotAllowed      Code = "command_not_allowed"
	CodeArgumentNotAllowed     Code = "argument_not_allowed"
	CodeRuleDenied             Code = "rule_denied"
	CodeTimeout                Code = "timeout"
	CodeCanceled               Code = "canceled"
	CodePatchFailed            Code = "patch_failed"
	CodeStalePreview           Code = "stale_preview"
	CodeBudgetExhausted        Code = "budget_exhausted"
	CodeRepeatedAction         Code = "repeated_action"
	CodeRateLimited            Code = "rate_limited"
	CodeHarnessBlocked         Code = "harness_blocked"
	CodeMCPError               Code = "mcp_error"
	CodeInternal               Code = "internal"
)

// Error is an error that carries a Code. Runtimes return it (wrapped or not)
// so that the dispatcher can turn a failure into an observation with the
// right code; any other error becomes CodeInternal.
//
// Payload, when set, is carried into the observation (for example the
// partial output of a command that timed out).
type Error struct {
	Code    Code
	Message string
	Payload map[string]any
	Err     error
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return string(e.Code) + ": " + e.Err.Error()
	}
	return string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Code: c}) match any *Error with code c,
// so a code works as a sentinel.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == "" && t.Err == nil
}

// CodeOf returns the code carried by err, CodeNone for nil, and
// CodeInternal for an error that carries none.
func CodeOf(err error) Code {
	if err == nil {
		return CodeNone
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// MessageOf returns the human-readable message of err without its code prefix.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		if e.Message != "" {
			return e.Message
		}
		if e.Err != nil {
			return e.Err.Error()
		}
		return string(e.Code)
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// Refusal is the error of a step that was refused and already recorded as
// an observation (a refused preview): callers that answer with an
// observation use it as it is, with its action id and decision; others see
// its code through CodeOf.
type Refusal struct {
	Observation Observation
}

func (r *Refusal) Error() string { return string(r.Observation.Code) + ": " + r.Observation.Message }

// Unwrap gives the refusal's code to CodeOf, MessageOf and errors.Is.
func (r *Refusal) Unwrap() error {
	return &Error{Code: r.Observation.Code, Message: r.Observation.Message}
}
