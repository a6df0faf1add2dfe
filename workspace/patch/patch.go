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
//   - exactly one of the places keeps the hunks in the order they are
//     written, given the places of the others (hunks placed by content, or
//     whose every place is ordered with respect to it), or
//   - the line numbers of the whole patch hold: every hunk has numbers and
//     matches at its stated line (the hunks placed by content are there,
//     the others have a place there), as in a diff made by a tool against
//     this content; the hunk then goes to its stated line, unless its lines
//     repeat near it (another place within NearRadius/4 lines, or two
//     within NearRadius), or
//   - its nearest hunks placed by content show the numbers are right up to
//     a common shift d (both neighbours, or the only one, moved by exactly
//     d), one of the places is the stated line moved by d, and no other
//     place lies within NearRadius lines of it.
//
// Otherwise the hunk is refused as ambiguous (ErrAmbiguous, listing the
// places). Hunks are often off by different amounts, so a shift seen at
// one hunk is evidence about another only where a wrong guess could not
// land on a copy of its lines: in code that repeats every few lines (a
// generated switch, syscall wrappers) the numbers never choose, and a
// single hunk whose lines repeat there is refused even when its numbers
// are right, where GNU patch and git apply silently edit the block their
// numbers name. A refusal is cheaper than a wrong edit; the caller can
// retry with more context. Options.TrustLineNumbers lifts this for diffs
// made by a tool against the very content being patched: the stated line
// may then choose among verbatim matches.
//
// What this guarantees, for a patch whose hunks' lines are right: when
// every hunk's numbers are off by at most NearRadius/2 lines, each hunk is
// applied where it was meant or the patch is refused, except in the one
// case no reader of the patch can tell: numbers that put every hunk
// exactly on another copy of its own lines make the patch, byte for byte,
// the diff a tool would write for those copies, and it is applied there
// (when they repeat no closer than the rule above allows). Beyond
// NearRadius/2, hunks whose errors differ by more than NearRadius lines
// can also be moved by a neighbour's shift onto a copy exactly that far
// away.
//
// A hunk whose removed lines are not in the file is never applied: Apply
// returns a *HunkError naming the hunk and the closest place found. Hunks
// are assumed to be written in file order when order is used to tell
// places apart; hunks that match uniquely may come in any order, and
// order is not used when the unique ones are out of order.
//
// What is not guaranteed either: a patch whose context was edited so much
// that it fits a wrong place better than the right one can be applied
// there by the fuzzy stage (removed lines must still match); set
// Options.NoFuzzy to rule that out.
//
// # Cost
//
// ParseContext and ApplyContext do work proportional to their input: at
// most WorkAllowance of its size in counted operations (see Work), however
// repetitive the file or the patch. Hunks that match at too many places to
// weigh (more than 256) are refused as ambiguous, and the fuzzy stage
// gives up on hunks it cannot score within its share, so that the bound
// holds. Both stop soon after their context is done. Diff and CountChanges
// are bounded by go-diff's time limit, not by this count.
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
	// MorePlaces is set when the hunk matched at more places than Places
	// lists.
	MorePlaces bool
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
		if e.MorePlaces {
			fmt.Fprintf(&b, " is ambiguous: its lines match at more than %d places (lines %s); add context lines that tell them apart", len(e.Places), joinInts(e.Places))
			return b.String()
		}
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
