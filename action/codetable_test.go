package action

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"testing"
)

// declaredCodes parses code.go and returns the value of every Code constant
// declared there, so that a new code without a row fails the test below.
func declaredCodes(t *testing.T) map[Code]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "code.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[Code]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, sp := range g.Specs {
			vs := sp.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, name := range vs.Names {
				lit := vs.Values[i].(*ast.BasicLit)
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out[Code(v)] = name.Name
			}
		}
	}
	if len(out) < 25 {
		t.Fatalf("found only %d codes in code.go", len(out))
	}
	return out
}

func TestCodeTableHasExactlyOneRowPerCode(t *testing.T) {
	declared := declaredCodes(t)
	rows := map[Code]int{}
	for _, r := range Codes() {
		rows[r.Code]++
		if _, ok := declared[r.Code]; !ok {
			t.Errorf("row for %q, which code.go does not declare", r.Code)
		}
	}
	for c, name := range declared {
		if rows[c] != 1 {
			t.Errorf("%s (%q) has %d rows, want 1", name, c, rows[c])
		}
	}
}

func TestCodeTableIsConsistent(t *testing.T) {
	for _, r := range Codes() {
		if got := ExitFor(r.Status); got != r.Exit {
			t.Errorf("%q: status %s exits %d by ExitFor, the table says %d", r.Code, r.Status, got, r.Exit)
		}
		if r.Code == CodeNone {
			continue
		}
		if r.HTTP < 400 && r.Status != StatusNeedsConfirmation {
			t.Errorf("%q: a refusal or failure with HTTP %d", r.Code, r.HTTP)
		}
		if r.HTTP >= 500 && r.Status != StatusError {
			t.Errorf("%q: HTTP %d is a fault of ours, but the status is %s", r.Code, r.HTTP, r.Status)
		}
	}
}

// SPEC 3 and 5 name these rows outright.
func TestCodeTableSpecRows(t *testing.T) {
	cases := []struct {
		code   Code
		status Status
		http   int
		exit   int
	}{
		{CodeTrustRequired, StatusBlocked, 403, 3},
		{CodeApprovalRequired, StatusNeedsConfirmation, 202, 4},
		{CodeStalePreview, StatusBlocked, 409, 3},
		{CodeRateLimited, StatusBlocked, 429, 3},
		{CodeTooLarge, StatusError, 413, 1},
		{CodeInternal, StatusError, 500, 1},
		{CodeInvalidInput, StatusBlocked, 400, 3},
		{CodeUnknownAction, StatusBlocked, 400, 3},
		{"some_runtime_code", StatusError, 500, 1},
	}
	for _, c := range cases {
		t.Run(string(c.code), func(t *testing.T) {
			if c.code.Status() != c.status || c.code.HTTPStatus() != c.http || c.code.ExitCode() != c.exit {
				t.Errorf("got %s/%d/%d, want %s/%d/%d", c.code.Status(), c.code.HTTPStatus(), c.code.ExitCode(), c.status, c.http, c.exit)
			}
		})
	}
}
