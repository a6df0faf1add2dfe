package workspace

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/harness-runtime/harness/action"
)

const (
	defaultMaxResults = 100
	// hardMaxResults caps max_results whatever the input asks.
	hardMaxResults = 100_000
	// maxQueryBytes bounds the query; RE2 compiles in linear time but a
	// megabyte pattern is never a real search.
	maxQueryBytes = 4096
	// maxLineText is how much of a matching line a result carries.
	maxLineText = 240
	// searchBufSize is the initial read buffer per worker; it grows for
	// longer lines up to searchMaxLine, beyond which a line is searched in
	// pieces (a match straddling two pieces is missed, line numbers stay
	// right).
	searchBufSize = 64 << 10
	searchMaxLine = 4 << 20
	// maxIgnoreFileBytes bounds a .gitignore read during a search.
	maxIgnoreFileBytes = 1 << 20
)

// searchText implements workspace_search_text.
//
// Input: query (required); regex (RE2 syntax, so matching time is linear
// in the input: no catastrophic backtracking); case_insensitive; path (a
// directory or one file, default the root); glob (gitignore-style: without
// "/" it matches the file name, with "/" the root-relative path; "**"
// spans directories); max_results (default 100, capped at 100000).
//
// Matching is per line: a match never spans a newline ("\s" and "[^x]"
// do not match "\n", "^" and "$" match at line boundaries). The walk skips
// .git directories, paths ignored by .gitignore files (from the root down
// to each directory; no global excludes), symlinks (never followed),
// directories on other devices, special files, and binary files (NUL in
// the first 8 KiB), and directories deeper than 256 levels. An explicitly
// named file is searched even if ignored. It stops after
// Options.MaxSearchFiles files or max_results matches.
//
// Payload: {"query", "matches": [{"path": root-relative, "line": 1-based,
// "column": 1-based byte offset of the match in the line, "text": the
// line, at most 240 bytes around the match}], "files_searched": files
// opened and scanned, "truncated": true when the file cap or max_results
// cut the search short}. Matches are ordered by path (depth first, names in
// byte order), then line; for a given tree and input they are the same on
// every run, though files_searched may vary when results are truncated.
func (w *Workspace) searchText(ctx context.Context, in map[string]any) (map[string]any, error) {
	q, err := parseSearchInput(in)
	if err != nil {
		return nil, err
	}
	m, err := newMatcher(q.query, q.regex, q.caseInsensitive)
	if err != nil {
		return nil, err
	}
	rel, err := w.checkPath(q.path)
	if err != nil {
		return nil, err
	}
	s := &search{
		ctx:        ctx,
		w:          w,
		m:          m,
		glob:       q.glob,
		maxResults: q.maxResults,
		maxFiles:   w.opts.MaxSearchFiles,
	}
	if err := s.run(rel); err != nil {
		return nil, err
	}
	matches := make([]any, len(s.matches))
	for i, mt := range s.matches {
		matches[i] = map[string]any{"path": mt.path, "line": mt.line, "column": mt.column, "text": mt.text}
	}
	return map[string]any{
		"query":          q.query,
		"matches":        matches,
		"files_searched": s.filesSearched.Load(),
		"truncated":      s.truncated,
	}, nil
}

type searchInput struct {
	query           string
	path            string
	regex           bool
	caseInsensitive bool
	glob            *globPattern
	maxResults      int
}

func parseSearchInput(in map[string]any) (searchInput, error) {
	var q searchInput
	var ok bool
	var err error
	if q.query, ok, err = strArg(in, "query"); err != nil {
		return q, err
	}
	if !ok || q.query == "" {
		return q, action.Errorf(action.CodeInvalidInput, "query is required and must not be empty")
	}
	if len(q.query) > maxQueryBytes {
		return q, action.Errorf(action.CodeInvalidInput, "query is longer than %d bytes", maxQueryBytes)
	}
	if q.path, _, err = strArg(in, "path"); err != nil {
		return q, err
	}
	if q.regex, err = boolArg(in, "regex", false); err != nil {
		return q, err
	}
	if q.caseInsensitive, err = boolArg(in, "case_insensitive", false); err != nil {
		return q, err
	}
	glob, _, err := strArg(in, "glob")
	if err != nil {
		return q, err
	}
	if glob != "" {
		if strings.IndexByte(glob, 0) >= 0 || len(glob) > maxPathBytes {
			return q, action.Errorf(action.CodeInvalidInput, "glob is not a valid pattern")
		}
		g, err := compileGlob(glob)
		if err != nil {
			return q, action.Errorf(action.CodeInvalidInput, "glob: %v", err)
		}
		q.glob = &g
	}
	n, err := intArg(in, "max_results", defaultMaxResults)
	if err != nil {
		return q, err
	}
	if n < 1 {
		return q, action.Errorf(action.CodeInvalidInput, "max_results must be at least 1")
	}
	q.maxResults = int(min(n, hardMaxResults))
	return q, nil
}

type match struct {
	path   string
	line   int
	column int
	text   string
}

// search is one workspace_search_text run: a walker goroutine lists
// directories depth first in byte order and numbers the files it queues;
// GOMAXPROCS workers scan them; the caller's goroutine collects results in
// file order and stops everything once the files before it hold
// max_results matches, so the answer does not depend on scheduling.
type search struct {
	ctx        context.Context
	w          *Workspace
	m          *matcher
	glob       *globPattern
	maxResults int
	maxFiles   int

	dev rootDevice // of the search root

	filesSearched atomic.Int64
	filesCapped   atomic.Bool  // the walk stopped at maxFiles or skipped too-deep directories
	total         atomic.Int64 // batches queued by a walk that ran to its end, else -1
	matches       []match
	truncated     bool
}
