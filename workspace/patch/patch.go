// Package patch parses the patch formats that models emit, applies them to
// in-memory file contents tolerantly but never creatively, and renders
// standard unified diffs.
//
// The package does no file I/O: callers read the files, ask Apply for the
// new content, and write it themselves (package workspace does so through
// an os.Root). Path resolution takes a callback that reports what exists.
//
// # Formats
//
// Parse accepts a plain unified diff (diff -u), a git diff (extended headers:
// new/deleted file mode, rename from/to, old/new mode, index, several files)
// and the "*** Begin Patch" envelope (*** Update File / *** Add File /
// *** Delete File / *** Move to / @@ anchors / *** End of File). Hunks may
// carry wrong line numbers, wrong counts or no numbers at all ("@@ @@").
//
// # Placement of a hunk
//
// A hunk is placed by its content, in stages, each tried only when the
// previous one found no place: StageExact (its old lines verbatim at the
// stated line, or anywhere when the header has no numbers), StageOffset (verbatim
// elsewhere), StageWhitespace (lines compared without leading and trailing
// whitespace) and StageFuzzy (removed lines must still match without
// whitespace; context lines may differ, scored by similarity against a
// threshold).
//
// The ambiguity rule: when a hunk's old lines match at several places at the
// best stage, the stated line number alone never decides. The hunk is
// placed only when
//   - exactly one of the places lies between the hunks already placed before
//     and after it (hunks keep their order), or
//   - the header has numbers and its nearest hunks placed by content show the
//     numbers are right up to a common shift d (both neighbours, or the only
//     one, moved by exactly d), and one of the places is the stated line
//     moved by d.
//
// Otherwise the hunk is refused as ambiguous (ErrAmbiguous, listing the
// places). A single hunk whose lines repeat verbatim in the file is
// therefore refused even when its numbers are right: a model's numbers
// cannot be told apart from numbers that are off by exactly one period of
// repetitive code, where GNU patch and git apply silently edit the wrong
// block. A refusal is cheaper than a wrong edit; the caller can retry with
// more context. Options.TrustLineNumbers lifts this for diffs made by a
// tool against the very content being patched: the stated line may then
// choose among verbatim matches.
//
// A hunk whose removed lines are not in the file is never applied: Apply
// returns a *HunkError naming the hunk and the closest place found. Hunks
// are assumed to be written in file order when order is used to tell
// places apart; hunks that match uniquely may come in any order.
//
// What is not guaranteed: a patch whose context was edited so much that it
// fits a wrong place better than the right one can be applied there by the
// fuzzy stage (removed lines must still match); set Options.NoFuzzy to
// rule that out.
package patch

import (
	"errors"
	"fmt"
	"strings"
)

// Format is the syntax a patch was written in.
type Format string

// Formats reported by Parse. FormatContent is used by callers that build a
// change from a whole new file rather than a patch.
const (
	FormatUnified  Format = "unified"
	FormatGit      Format = "git"
	FormatEnvelope Format = "envelope"
	FormatContent  Format = "content"
)

// Op is what a patch does to one file.
type Op string

// Operations on a file.
const (
	OpModify Op = "modify"
	OpCreate Op = "create"
	OpDelete Op = "delete"
	OpRename Op = "rename"
)

// Stage is how a hunk was placed, from the strictest to the most tolerant.
type Stage string

// Stages in the order they are tried.
const (
	StageExact      Stage = "exact"
	StageOffset     Stage = "offset"
	StageWhitespace Stage = "whitespace"
	StageFuzzy      Stage = "fuzzy"
)

func (s Stage) rank() int {
	switch s {
	case StageOffset:
		return 1
	case StageWhitespace:
		return 2
	case StageFuzzy:
		return 3
	}
	return 0
}

// Weaker returns the more tolerant of two stages (the one that says less
// about how well the patch fitted).
func Weaker(a, b Stage) Stage {
	if b.rank() > a.rank() {
		return b
	}
	if a == "" {
		return b
	}
	return a
}

// Line is one body line of a hunk. Kind is ' ' (context), '-' (removed) or
// '+' (added); Text carries no line ending.
type Line struct {
	Kind byte
	Text string
}

// Hunk is one "@@" section of a file patch.
type Hunk struct {
	// OldStart, OldLines, NewStart and NewLines are the header numbers as
	// written; meaningful only when Numbered is true. Counts are replaced by
	// the body's real counts when the written ones were wrong.
	OldStart, OldLines, NewStart, NewLines int
	// Numbered reports whether the header carried line numbers.
	Numbered bool
	// Section is the text after the closing "@@" (a function name in git
	// diffs, an anchor line in the envelope format).
	Section string
	Lines   []Line
	// OldNoEOL and NewNoEOL report a "\ No newline at end of file" marker
	// after the last old-side or new-side line.
	OldNoEOL, NewNoEOL bool
	// AtEOF is set by the envelope's "*** End of File": the hunk must end
	// at the end of the file.
	AtEOF bool
	// Anchor is the envelope's "@@ text": when the hunk matches at several
	// places, only the first one after each line equal to Anchor counts.
	Anchor string
	// Header is the "@@" line as written, for messages.
	Header string
}

// Counts returns the number of old-side and new-side lines of the body.
func (h *Hunk) Counts() (old, new int) {
	for _, l := range h.Lines {
		switch l.Kind {
		case ' ':
			old++
			new++
		case '-':
			old++
		case '+':
			new++
		}
	}
	return old, new
}

// File is the part of a patch that concerns one file.
type File struct {
	// OldName and NewName are the names as written in the headers, without
	// quotes and timestamps; "" stands for /dev/null or a missing header.
	OldName, NewName string
	// GitOldName and GitNewName come from "rename from"/"rename to" lines,
	// which git writes without a/ b/ prefixes.
	GitOldName, GitNewName string
	// Op is what the headers say; a plain modify when they say nothing.
	Op Op
	// OldMode and NewMode are git's octal modes ("100644"), if given.
	OldMode, NewMode string
	// Binary is set for git binary patches, which are not supported.
	Binary bool
	Hunks  []Hunk

	// Path and OldPath are set by Resolve: the root-relative slash paths of
	// the target and, for a rename, of the source.
	Path, OldPath string

	// fixedNames reports names that must not be stripped (envelope paths).
	fixedNames bool
	// headers reports that ---/+++ lines were seen for this file.
	headers bool
}

// Patch is a parsed patch: one or more files.
type Patch struct {
	Format Format
	Files  []*File
}

// Sentinel errors; every error of this package wraps one of them, so callers
// can map them to codes with errors.Is.
var (
	// ErrMalformed: the text is not a patch this package understands.
	ErrMalformed = errors.New("malformed patch")
	// ErrOutsideRoot: a header names an absolute path or leaves the root.
	ErrOutsideRoot = errors.New("path outside root")
	// ErrAmbiguous: a hunk or a path could be applied in more than one way.
	ErrAmbiguous = errors.New("ambiguous")
	// ErrNoMatch: a hunk's old lines are not in the file.
	ErrNoMatch = errors.New("does not apply")
	// ErrNotExist: a file the patch modifies, deletes or renames does not
	// exist.
	ErrNotExist = errors.New("file does not exist")
)

// HunkError explains why a hunk was not applied.
type HunkError struct {
	// Hunk is the 1-based index of the hunk in its file; Header its "@@" line.
	Hunk   int
	Header string
	// Ambiguous is set when the hunk matched at several places (Places,
	// 1-based lines) and nothing but its line number could choose.
	Ambiguous bool
	Places    []int
	// Closest is the 1-based line of the best partial match (0 if none),
	// Similarity its share of matching lines, and Detail the first line
	// that differs there.
	Closest    int
	Similarity float64
	Detail     string
}

// Error says which hunk failed and why, in words a model can act on: the
// places of an ambiguous match, or the closest place and its first
// differing line.
func (e *HunkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "hunk %d (%s)", e.Hunk, strings.TrimSpace(e.Header))
	if e.Ambiguous {
		fmt.Fprintf(&b, " is ambiguous: its lines match at lines %s; add context lines that tell them apart", joinInts(e.Places))
		return b.String()
	}
	b.WriteString(" does not match the file")
	if e.Closest > 0 {
		fmt.Fprintf(&b, "; closest place is line %d (%.0f%% of its lines match)", e.Closest, 100*e.Similarity)
	}
	if e.Detail != "" {
		b.WriteString("; ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

// Unwrap makes errors.Is(err, ErrAmbiguous) and errors.Is(err, ErrNoMatch) work.
func (e *HunkError) Unwrap() error {
	if e.Ambiguous {
		return ErrAmbiguous
	}
	return ErrNoMatch
}

func joinInts(v []int) string {
	const max = 8
	parts := make([]string, 0, len(v))
	for i, n := range v {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(v)-max))
			break
		}
		parts = append(parts, fmt.Sprint(n))
	}
	return strings.Join(parts, ", ")
}
