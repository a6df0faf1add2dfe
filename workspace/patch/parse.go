package patch

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MaxPatchBytes bounds the text Parse accepts.
const MaxPatchBytes = 16 << 20

// Parse is ParseContext without a context or a shared Work.
func Parse(text string) (*Patch, error) {
	return ParseContext(context.Background(), text, nil)
}

// ParseContext reads a patch in any of the supported formats and reports
// which one it found. Hunks without file headers are accepted (one File
// with empty names) so that a caller that knows the target can apply them.
//
// ParseContext checks syntax only; it does not look at the files, so path
// checks and strip levels are left to Resolve.
//
// Cost: linear in the text, at most WorkAllowance(len(text)) operations,
// counted into work if it is not nil (and stopped past its limit, with an
// error wrapping ErrTooCostly). It stops with an error wrapping ctx.Err()
// soon after ctx is done.
func ParseContext(ctx context.Context, text string, work *Work) (*Patch, error) {
	if len(text) > MaxPatchBytes {
		return nil, fmt.Errorf("%w: patch is larger than %d bytes", ErrMalformed, MaxPatchBytes)
	}
	m := newMeter(ctx, work, len(text))
	if strings.ContainsRune(text, 0) {
		return nil, fmt.Errorf("%w: patch contains a NUL byte", ErrMalformed)
	}
	m.bytes(2 * len(text))
	lines := stripFence(splitPatchLines(text))
	m.add(len(lines))
	if m.stopped() {
		return nil, m.err
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "*** Begin Patch") || envelopeHeader(t) != "" {
			return parseEnvelope(m, lines)
		}
		break
	}
	return parseUnified(m, lines)
}

// stripFence removes a Markdown code fence around the patch ("```diff" …
// "```"), which models often add.
func stripFence(lines []string) []string {
	first, last := 0, len(lines)-1
	for first <= last && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	for last >= first && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	if first < last && strings.HasPrefix(lines[first], "```") && strings.TrimSpace(lines[last]) == "```" {
		return lines[first+1 : last]
	}
	return lines
}

// splitPatchLines splits on "\n" and drops one trailing "\r" per line: a
// patch of a CRLF file is matched without line endings, which the applier
// takes from the file.
func splitPatchLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	if text == "" {
		return nil
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

var hunkHeaderRE = regexp.MustCompile(`^@@+\s*(?:-(\d+)(?:,(\d+))?)?\s*(?:\+(\d+)(?:,(\d+))?)?\s*(?:@@+)?\s?(.*)$`)

// parseHunkHeader reads "@@ -l,s +l,s @@ section"; numbers are optional.
func parseHunkHeader(line string) (Hunk, bool) {
	m := hunkHeaderRE.FindStringSubmatch(line)
	if m == nil {
		return Hunk{}, false
	}
	h := Hunk{Header: line, Section: m[5]}
	atoi := func(s string, def int) int {
		if s == "" {
			return def
		}
		n, err := strconv.Atoi(s)
		if err != nil || n > 1<<30 {
			return -1
		}
		return n
	}
	if m[1] != "" && m[3] != "" {
		h.Numbered = true
		h.OldStart, h.OldLines = atoi(m[1], 0), atoi(m[2], 1)
		h.NewStart, h.NewLines = atoi(m[3], 0), atoi(m[4], 1)
		if h.OldStart < 0 || h.OldLines < 0 || h.NewStart < 0 || h.NewLines < 0 {
			return Hunk{}, false
		}
	} else if m[1] != "" || m[3] != "" {
		// Half a header: keep no numbers rather than guess the other half.
		h.Section = m[5]
	}
	return h, true
}

// isHunkLine reports whether l can be a body line of a hunk. An empty line
// counts: diff -u writes an empty context line as a lone space, which
// editors and models strip.
func isHunkLine(l string) bool {
	return l == "" || l[0] == ' ' || l[0] == '-' || l[0] == '+' || l[0] == '\\' || l[0] == '\t'
}

// appendBodyLine adds one body line to h, handling the no-newline marker.
func appendBodyLine(h *Hunk, l string) {
	if l == "" {
		h.Lines = append(h.Lines, Line{Kind: ' '})
		return
	}
	switch l[0] {
	case '\\':
		if len(h.Lines) == 0 {
			return
		}
		switch h.Lines[len(h.Lines)-1].Kind {
		case '-':
			h.OldNoEOL = true
		case '+':
			h.NewNoEOL = true
		default:
			h.OldNoEOL, h.NewNoEOL = true, true
		}
	case '\t':
		// A context line whose leading space became part of a tab.
		h.Lines = append(h.Lines, Line{Kind: ' ', Text: l})
	default:
		h.Lines = append(h.Lines, Line{Kind: l[0], Text: l[1:]})
	}
}

// isFileHeaderAt reports whether a "--- "/"+++ " pair starts at i.
func isFileHeaderAt(lines []string, i int) bool {
	return strings.HasPrefix(lines[i], "--- ") && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "+++ ")
}

// isBoundary reports whether line i ends the body of a hunk whose counts are
// not trusted.
func isBoundary(lines []string, i int) bool {
	l := lines[i]
	return !isHunkLine(l) || strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "diff --git ") || isFileHeaderAt(lines, i)
}

// readHunkBody reads the body of h starting at lines[i] and returns the
// index after it. Counts from a numbered header are used when they describe
// the body exactly; otherwise (models get counts wrong) the body runs to the
// next line that cannot belong to it, and the counts are corrected.
func readHunkBody(lines []string, i int, h *Hunk) int {
	if h.Numbered && (h.OldLines > 0 || h.NewLines > 0) {
		if end, ok := readCounted(lines, i, h); ok {
			return end
		}
		h.Lines, h.OldNoEOL, h.NewNoEOL = nil, false, false
	}
	j := i
	for j < len(lines) && !isBoundary(lines, j) {
		appendBodyLine(h, lines[j])
		j++
	}
	// Blank lines at the end are separators more often than context.
	for len(h.Lines) > 0 {
		last := h.Lines[len(h.Lines)-1]
		if last.Kind != ' ' || last.Text != "" || lines[j-1] != "" {
			break
		}
		h.Lines = h.Lines[:len(h.Lines)-1]
		j--
	}
	h.OldLines, h.NewLines = h.Counts()
	return j
}

func readCounted(lines []string, i int, h *Hunk) (int, bool) {
	old, neu := 0, 0
	j := i
	for j < len(lines) && (old < h.OldLines || neu < h.NewLines || strings.HasPrefix(lines[j], "\\")) {
		l := lines[j]
		if !isHunkLine(l) || strings.HasPrefix(l, "@@") {
			return 0, false
		}
		appendBodyLine(h, l)
		switch {
		case l == "" || l[0] == ' ' || l[0] == '\t':
			old++
			neu++
		case l[0] == '-':
			old++
		case l[0] == '+':
			neu++
		}
		j++
	}
	if old != h.OldLines || neu != h.NewLines {
		return 0, false
	}
	// What follows must not look like more body lines of this hunk.
	if j < len(lines) {
		l := lines[j]
		if l != "" && (l[0] == '-' || l[0] == '+' || l[0] == ' ') && !isFileHeaderAt(lines, j) {
			return 0, false
		}
	}
	return j, true
}

// parseUnified reads plain unified and git diffs.
func parseUnified(m *meter, lines []string) (*Patch, error) {
	p := &Patch{Format: FormatUnified}
	var cur *File
	headerless := false
	for i := 0; i < len(lines); {
		l := lines[i]
		if !m.bytes(len(l)) {
			return nil, m.err
		}
		switch {
		case strings.HasPrefix(l, "diff --git "):
			p.Format = FormatGit
			f, next, err := parseGitHeader(lines, i)
			if err != nil {
				return nil, err
			}
			p.Files = append(p.Files, f)
			cur = f
			m.add(next - i)
			i = next
		case isFileHeaderAt(lines, i):
			oldName, err := headerName(l[4:])
			if err != nil {
				return nil, err
			}
			newName, err := headerName(lines[i+1][4:])
			if err != nil {
				return nil, err
			}
			if cur == nil || cur.sawHeaders() || len(cur.Hunks) > 0 {
				cur = &File{Op: OpModify}
				p.Files = append(p.Files, cur)
			}
			cur.OldName, cur.NewName = oldName, newName
			if oldName == "" && newName != "" && cur.Op == OpModify {
				cur.Op = OpCreate
			}
			if newName == "" && oldName != "" && cur.Op == OpModify {
				cur.Op = OpDelete
			}
			if oldName == "" && newName == "" {
				return nil, fmt.Errorf("%w: line %d: both file names are /dev/null", ErrMalformed, i+1)
			}
			cur.headers = true
			i += 2
		case strings.HasPrefix(l, "@@"):
			h, ok := parseHunkHeader(l)
			if !ok {
				return nil, fmt.Errorf("%w: line %d: bad hunk header %q", ErrMalformed, i+1, l)
			}
			if cur == nil {
				cur = &File{Op: OpModify}
				p.Files = append(p.Files, cur)
				headerless = true
			}
			i = readHunkBody(lines, i+1, &h)
			// Reading a body looks at each of its lines at most twice.
			if !m.add(2*len(h.Lines) + 2) {
				return nil, m.err
			}
			if len(h.Lines) == 0 {
				return nil, fmt.Errorf("%w: hunk %q has no lines", ErrMalformed, l)
			}
			cur.Hunks = append(cur.Hunks, h)
		default:
			// Text between files (commit messages, "Index:" lines) is ignored.
			i++
		}
	}
	if len(p.Files) == 0 {
		return nil, fmt.Errorf("%w: no file headers and no hunks found", ErrMalformed)
	}
	if headerless && len(p.Files) > 1 {
		return nil, fmt.Errorf("%w: hunks before the first file header", ErrMalformed)
	}
	for _, f := range p.Files {
		if f.Binary {
			return nil, fmt.Errorf("%w: binary patch for %s is not supported", ErrMalformed, f.displayName())
		}
		if f.Op == OpModify && len(f.Hunks) == 0 && f.NewMode == "" {
			return nil, fmt.Errorf("%w: no hunks for %s", ErrMalformed, f.displayName())
		}
	}
	return p, nil
}

func (f *File) sawHeaders() bool { return f.headers }

func (f *File) displayName() string {
	switch {
	case f.NewName != "":
		return f.NewName
	case f.OldName != "":
		return f.OldName
	case f.GitNewName != "":
		return f.GitNewName
	}
	return "(unnamed file)"
}

// parseGitHeader reads "diff --git a/x b/y" and its extended header lines.
func parseGitHeader(lines []string, i int) (*File, int, error) {
	f := &File{Op: OpModify}
	a, b, err := splitGitNames(lines[i][len("diff --git "):])
	if err != nil {
		return nil, 0, fmt.Errorf("%w: line %d: %v", ErrMalformed, i+1, err)
	}
	f.OldName, f.NewName = a, b
	i++
	for ; i < len(lines); i++ {
		l := lines[i]
		key, val, _ := strings.Cut(l, " ")
		switch {
		case strings.HasPrefix(l, "new file mode "):
			f.Op, f.NewMode = OpCreate, strings.TrimPrefix(l, "new file mode ")
		case strings.HasPrefix(l, "deleted file mode "):
			f.Op, f.OldMode = OpDelete, strings.TrimPrefix(l, "deleted file mode ")
		case strings.HasPrefix(l, "old mode "):
			f.OldMode = strings.TrimPrefix(l, "old mode ")
		case strings.HasPrefix(l, "new mode "):
			f.NewMode = strings.TrimPrefix(l, "new mode ")
		case strings.HasPrefix(l, "rename from "), strings.HasPrefix(l, "copy from "):
			if key == "copy" {
				return nil, 0, fmt.Errorf("%w: line %d: copies are not supported", ErrMalformed, i+1)
			}
			n, err := headerName(strings.TrimPrefix(l, "rename from "))
			if err != nil {
				return nil, 0, err
			}
			f.Op, f.GitOldName = OpRename, n
		case strings.HasPrefix(l, "rename to "), strings.HasPrefix(l, "copy to "):
			n, err := headerName(strings.TrimPrefix(strings.TrimPrefix(l, "rename to "), "copy to "))
			if err != nil {
				return nil, 0, err
			}
			f.Op, f.GitNewName = OpRename, n
		case strings.HasPrefix(l, "similarity index "), strings.HasPrefix(l, "dissimilarity index "),
			strings.HasPrefix(l, "index "):
		case strings.HasPrefix(l, "Binary files ") || l == "GIT binary patch":
			f.Binary = true
		default:
			_ = val
			return f, i, nil
		}
	}
	return f, i, nil
}

// splitGitNames splits the two names of a "diff --git" line, which may be
// quoted and may contain spaces.
func splitGitNames(s string) (string, string, error) {
	if strings.HasPrefix(s, `"`) {
		end := closingQuote(s)
		if end < 0 {
			return "", "", fmt.Errorf("unterminated quoted name")
		}
		a, err := strconv.Unquote(s[:end+1])
		if err != nil {
			return "", "", fmt.Errorf("bad quoted name: %v", err)
		}
		b, err := headerName(strings.TrimSpace(s[end+1:]))
		return a, b, err
	}
	if strings.HasSuffix(s, `"`) {
		k := strings.LastIndex(s[:len(s)-1], ` "`)
		if k < 0 {
			return "", "", fmt.Errorf("bad quoted name")
		}
		b, err := strconv.Unquote(s[k+1:])
		return s[:k], b, err
	}
	// Same name on both sides: split in the middle.
	if n := len(s); n%2 == 1 && s[n/2] == ' ' {
		a, b := s[:n/2], s[n/2+1:]
		if stripN(a, 1) == stripN(b, 1) {
			return a, b, nil
		}
	}
	if k := strings.Index(s, " b/"); k >= 0 {
		return s[:k], s[k+1:], nil
	}
	a, b, ok := strings.Cut(s, " ")
	if !ok {
		return "", "", fmt.Errorf("want two names")
	}
	return a, b, nil
}

func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}

// headerName cleans a name from a ---/+++ line: quotes, timestamps after a
// tab, and /dev/null (returned as "").
func headerName(s string) (string, error) {
	s = strings.TrimRight(s, " \t")
	if strings.HasPrefix(s, `"`) {
		end := closingQuote(s)
		if end < 0 {
			return "", fmt.Errorf("%w: unterminated quoted name %s", ErrMalformed, s)
		}
		u, err := strconv.Unquote(s[:end+1])
		if err != nil {
			return "", fmt.Errorf("%w: bad quoted name %s: %v", ErrMalformed, s, err)
		}
		s = u
	} else if k := strings.IndexByte(s, '\t'); k >= 0 {
		s = s[:k]
	} else if m := timestampRE.FindStringIndex(s); m != nil {
		s = s[:m[0]]
	}
	if s == "/dev/null" {
		return "", nil
	}
	return s, nil
}

// timestampRE finds a diff -u timestamp separated by spaces instead of a tab.
var timestampRE = regexp.MustCompile(`\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?( [+-]\d{4})?$`)

// stripN removes n leading components of a slash path ("" if too few).
func stripN(name string, n int) string {
	for ; n > 0; n-- {
		k := strings.IndexByte(name, '/')
		if k < 0 {
			return ""
		}
		name = strings.TrimLeft(name[k+1:], "/")
	}
	return name
}

func envelopeHeader(l string) string {
	for _, p := range []string{"*** Update File:", "*** Add File:", "*** Delete File:"} {
		if strings.HasPrefix(l, p) {
			return p
		}
	}
	return ""
}

// parseEnvelope reads the "*** Begin Patch" format.
func parseEnvelope(m *meter, lines []string) (*Patch, error) {
	p := &Patch{Format: FormatEnvelope}
	var cur *File
	var hunk *Hunk
	flush := func() {
		if cur != nil && hunk != nil {
			if len(hunk.Lines) > 0 {
				hunk.OldLines, hunk.NewLines = hunk.Counts()
				cur.Hunks = append(cur.Hunks, *hunk)
			}
			hunk = nil
		}
	}
	ended := false
	for i, l := range lines {
		if !m.bytes(len(l)) {
			return nil, m.err
		}
		t := strings.TrimRight(l, " \t")
		switch {
		case ended:
			if strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("%w: line %d: text after *** End Patch", ErrMalformed, i+1)
			}
		case strings.HasPrefix(t, "*** Begin Patch"):
		case strings.HasPrefix(t, "*** End Patch"):
			flush()
			ended = true
		case envelopeHeader(t) != "":
			flush()
			kind := envelopeHeader(t)
			name := strings.TrimSpace(t[len(kind):])
			if name == "" {
				return nil, fmt.Errorf("%w: line %d: missing file name", ErrMalformed, i+1)
			}
			cur = &File{fixedNames: true}
			switch kind {
			case "*** Update File:":
				cur.Op, cur.OldName, cur.NewName = OpModify, name, name
			case "*** Add File:":
				cur.Op, cur.NewName = OpCreate, name
				hunk = &Hunk{Header: "*** Add File: " + name}
			case "*** Delete File:":
				cur.Op, cur.OldName = OpDelete, name
			}
			p.Files = append(p.Files, cur)
		case strings.HasPrefix(t, "*** Move to:"):
			if cur == nil || cur.Op != OpModify || len(cur.Hunks) > 0 || hunk != nil {
				return nil, fmt.Errorf("%w: line %d: *** Move to must follow *** Update File", ErrMalformed, i+1)
			}
			cur.Op, cur.NewName = OpRename, strings.TrimSpace(strings.TrimPrefix(t, "*** Move to:"))
		case strings.HasPrefix(t, "*** End of File"):
			if hunk == nil {
				return nil, fmt.Errorf("%w: line %d: *** End of File outside a hunk", ErrMalformed, i+1)
			}
			hunk.AtEOF = true
			flush()
		case strings.HasPrefix(t, "@@"):
			if cur == nil || cur.Op == OpCreate || cur.Op == OpDelete {
				return nil, fmt.Errorf("%w: line %d: @@ outside *** Update File", ErrMalformed, i+1)
			}
			if hunk != nil && len(hunk.Lines) == 0 {
				// Consecutive anchors ("@@ class A" then "@@ def f"): keep the innermost.
				hunk.Section = strings.TrimSpace(strings.TrimPrefix(t, "@@"))
				hunk.Anchor, hunk.Header = hunk.Section, l
				continue
			}
			flush()
			sec := strings.TrimSpace(strings.TrimPrefix(t, "@@"))
			hunk = &Hunk{Header: l, Section: sec, Anchor: sec}
		case strings.HasPrefix(t, "***"):
			return nil, fmt.Errorf("%w: line %d: unknown envelope line %q", ErrMalformed, i+1, t)
		default:
			if cur == nil {
				if strings.TrimSpace(l) == "" {
					continue
				}
				return nil, fmt.Errorf("%w: line %d: text before the first file", ErrMalformed, i+1)
			}
			switch cur.Op {
			case OpDelete:
				if strings.TrimSpace(l) != "" {
					return nil, fmt.Errorf("%w: line %d: *** Delete File takes no lines", ErrMalformed, i+1)
				}
				continue
			case OpCreate:
				if strings.HasPrefix(l, "+") {
					hunk.Lines = append(hunk.Lines, Line{Kind: '+', Text: l[1:]})
				} else {
					return nil, fmt.Errorf("%w: line %d: lines of *** Add File must start with +", ErrMalformed, i+1)
				}
				continue
			}
			if hunk == nil {
				hunk = &Hunk{Header: "@@"}
			}
			switch {
			case l == "":
				hunk.Lines = append(hunk.Lines, Line{Kind: ' '})
			case l[0] == ' ' || l[0] == '-' || l[0] == '+':
				hunk.Lines = append(hunk.Lines, Line{Kind: l[0], Text: l[1:]})
			default:
				// A context line whose leading space was lost.
				hunk.Lines = append(hunk.Lines, Line{Kind: ' ', Text: l})
			}
		}
	}
	flush()
	if len(p.Files) == 0 {
		return nil, fmt.Errorf("%w: envelope names no files", ErrMalformed)
	}
	for _, f := range p.Files {
		if f.Op == OpModify && len(f.Hunks) == 0 {
			return nil, fmt.Errorf("%w: *** Update File: %s has no changes", ErrMalformed, f.OldName)
		}
	}
	return p, nil
}
