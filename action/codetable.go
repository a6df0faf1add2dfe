package action

// CodeInfo is what every entry point needs to know of a code: the status of
// an observation that carries it, the HTTP status of an error response that
// carries it (routes that answer with an observation answer 200 whatever
// its code), and the exit status of `harness run` and `harness patch`.
type CodeInfo struct {
	Code   Code
	Status Status
	HTTP   int
	Exit   int
}

// Exit statuses of SPEC section 4.
const (
	ExitOK                = 0
	ExitActionError       = 1
	ExitUsage             = 2
	ExitBlocked           = 3
	ExitNeedsConfirmation = 4
)

// The one table of codes. Every entry point (the dispatcher, the HTTP
// service, the MCP bridge, the CLI) reads it through Info; a test checks
// that every declared code has exactly one row.
//
// The rule behind the statuses: a refusal before or instead of running
// (by the guard, by a runtime's own confinement, by a person, by a stale
// preview) is blocked and exits 3; a failure while running is an error and
// exits 1; a wait for a person is needs_confirmation and exits 4.
//
// HTTP statuses are literal numbers so that this package stays free of
// net/http.
var codeTable = [...]CodeInfo{
	{CodeNone, StatusOK, 200, ExitOK},
	{CodeUnknownAction, StatusBlocked, 400, ExitBlocked},
	{CodeActionDisabled, StatusBlocked, 403, ExitBlocked},
	{CodeTenantNotAllowed, StatusBlocked, 403, ExitBlocked},
	{CodeInvalidInput, StatusBlocked, 400, ExitBlocked},
	{CodeTrustedRuntimeDisabled, StatusBlocked, 403, ExitBlocked},
	{CodeTrustRequired, StatusBlocked, 403, ExitBlocked},
	{CodeApprovalRequired, StatusNeedsConfirmation, 202, ExitNeedsConfirmation},
	{CodeApprovalDenied, StatusBlocked, 403, ExitBlocked},
	{CodeApprovalExpired, StatusBlocked, 403, ExitBlocked},
	{CodePathOutsideRoot, StatusBlocked, 403, ExitBlocked},
	{CodeNotFound, StatusError, 404, ExitActionError},
	{CodeTooLarge, StatusError, 413, ExitActionError},
	{CodeWriteDisabled, StatusBlocked, 403, ExitBlocked},
	{CodeShellDisabled, StatusBlocked, 403, ExitBlocked},
	{CodeCommandNotAllowed, StatusBlocked, 403, ExitBlocked},
	{CodeArgumentNotAllowed, StatusBlocked, 403, ExitBlocked},
	{CodeRuleDenied, StatusBlocked, 403, ExitBlocked},
	{CodeTimeout, StatusError, 504, ExitActionError},
	// The client went away; 499 is the status proxies log for that.
	{CodeCanceled, StatusError, 499, ExitActionError},
	{CodePatchFailed, StatusError, 400, ExitActionError},
	{CodeStalePreview, StatusBlocked, 409, ExitBlocked},
	{CodeBudgetExhausted, StatusBlocked, 429, ExitBlocked},
	{CodeRepeatedAction, StatusBlocked, 429, ExitBlocked},
	{CodeRateLimited, StatusBlocked, 429, ExitBlocked},
	{CodeHarnessBlocked, StatusBlocked, 403, ExitBlocked},
	{CodeMCPError, StatusError, 502, ExitActionError},
	{CodeInternal, StatusError, 500, ExitActionError},
}

var codeIndex = func() map[Code]int {
	m := make(map[Code]int, len(codeTable))
	for i, c := range codeTable {
		m[c.Code] = i
	}
	return m
}()

// Info returns the row of c. A code that is not in the table (one a
// program's own runtime made up) is treated as a failure while running:
// the row of CodeInternal, under its own name.
func Info(c Code) CodeInfo {
	if i, ok := codeIndex[c]; ok {
		return codeTable[i]
	}
	r := codeTable[codeIndex[CodeInternal]]
	r.Code = c
	return r
}

// Codes returns every row of the table, in the table's order.
func Codes() []CodeInfo { return append([]CodeInfo(nil), codeTable[:]...) }

// Status returns the status of an observation that carries c.
func (c Code) Status() Status { return Info(c).Status }

// HTTPStatus returns the HTTP status of an error response that carries c.
func (c Code) HTTPStatus() int { return Info(c).HTTP }

// ExitCode returns the exit status of a CLI command whose outcome carries c.
func (c Code) ExitCode() int { return Info(c).Exit }

// ExitFor returns the exit status for an observation's status, for callers
// that hold a status alone.
func ExitFor(s Status) int {
	switch s {
	case StatusOK:
		return ExitOK
	case StatusBlocked:
		return ExitBlocked
	case StatusNeedsConfirmation:
		return ExitNeedsConfirmation
	}
	return ExitActionError
}
