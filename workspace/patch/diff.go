package patch

import (
	"fmt"
	"strings"
	"time"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// DiffContext is the number of context lines Diff writes around a change.
const DiffContext = 3

// Diff renders the change from old to new as a unified diff with
// DiffContext lines of context, headers "--- a/<oldPath>" and
// "+++ b/<newPath>" ("/dev/null" for an empty path: a created or deleted
// file), GNU-style "@@ -l,s +l,s @@" numbers and "\ No newline at end of
// file" markers. Line endings are part of the lines, so a CRLF file diffs
// as CRLF. It returns "" when there is nothing to show (same content and
// same path).
//
// The line-level diff is computed by github.com/sergi/go-diff in line mode;
// it is minimal except for very large inputs, where go-diff's time limit
// may yield a correct but longer diff (after one second of work per file).
func Diff(oldPath, newPath string, old, new []byte) string {
	oldName, newName := "/dev/null", "/dev/null"
	if oldPath != "" {
		oldName = "a/" + oldPath
	}
	if newPath != "" {
		newName = "b/" + newPath
	}
	if string(old) == string(new) {
		if oldPath == newPath {
			return ""
		}
		return fmt.Sprintf("--- %s\n+++ %s\n", oldName, newName)
	}
	ops := lineOps(string(old), string(new))
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", oldName, newName)
	writeHunks(&b, ops)
	return b.String()
}

type lineOp struct {
	kind byte // ' ', '-', '+'
	text string
}

// lineOps computes the line edit script with go-diff.
func lineOps(a, b string) []lineOp {
	dmp := diffmatchpatch.New()
	// Past the limit go-diff returns a correct but longer diff; the limit
	// bounds the CPU one file of a request can cost (a request is also
	// bounded by its operation count, see Work).
	dmp.DiffTimeout = time.Second
	ra, rb, table := dmp.DiffLinesToRunes(a, b)
	diffs := dmp.DiffCharsToLines(dmp.DiffMainRunes(ra, rb, false), table)
	var ops []lineOp
	for _, d := range diffs {
		kind := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			kind = '-'
		case diffmatchpatch.DiffInsert:
			kind = '+'
		}
		// Every line but the last of a text ends in "\n", so splitting
		// after each "\n" gives back go-diff's lines.
		for t := d.Text; t != ""; {
			k := strings.IndexByte(t, '\n') + 1
			if k == 0 {
				k = len(t)
			}
			ops = append(ops, lineOp{kind: kind, text: t[:k]})
			t = t[k:]
		}
	}
	return ops
}

func writeHunks(b *strings.Builder, ops []lineOp) {
	// Old and new line numbers (0-based) before each op.
	oldAt := make([]int, len(ops)+1)
	newAt := make([]int, len(ops)+1)
	for i, op := range ops {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if op.kind != '+' {
			oldAt[i+1]++
		}
		if op.kind != '-' {
			newAt[i+1]++
		}
	}
	oldTotal, newTotal := oldAt[len(ops)], newAt[len(ops)]
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(0, i-DiffContext)
		// Extend over changes separated by at most 2*DiffContext equal lines.
		end := i
		for {
			for end < len(ops) && ops[end].kind != ' ' {
				end++
			}
			eq := end
			for eq < len(ops) && ops[eq].kind == ' ' {
				eq++
			}
			if eq < len(ops) && eq-end <= 2*DiffContext {
				end = eq
				continue
			}
			end = min(end+DiffContext, len(ops))
			break
		}
		oldStart, newStart := oldAt[start], newAt[start]
		oldLen, newLen := oldAt[end]-oldStart, newAt[end]-newStart
		fmt.Fprintf(b, "@@ -%s +%s @@\n", rangeStr(oldStart, oldLen), rangeStr(newStart, newLen))
		for k := start; k < end; k++ {
			op := ops[k]
			b.WriteByte(op.kind)
			text := op.text
			last := (op.kind != '+' && oldAt[k+1] == oldTotal) || (op.kind != '-' && newAt[k+1] == newTotal)
			if strings.HasSuffix(text, "\n") {
				b.WriteString(text)
			} else {
				b.WriteString(text)
				b.WriteByte('\n')
				if last {
					b.WriteString("\\ No newline at end of file\n")
				}
			}
		}
		i = end
	}
}

// rangeStr formats one side of a hunk header the way GNU diff does.
func rangeStr(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// CountChanges returns how many lines a minimal line diff from old to new
// adds and removes.
func CountChanges(old, new []byte) (added, removed int) {
	if string(old) == string(new) {
		return 0, 0
	}
	for _, op := range lineOps(string(old), string(new)) {
		switch op.kind {
		case '+':
			added++
		case '-':
			removed++
		}
	}
	return added, removed
}
