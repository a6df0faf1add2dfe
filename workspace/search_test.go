package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

var searchTree = map[string]string{
	"a.go":              "package a\n\nfunc Hello() {}\n// hello again\n",
	"b.txt":             "nothing here\nHello, world\n",
	"sub/c.go":          "package sub\nvar x = \"Hello\"\n",
	"sub/deep/d.md":     "# Hello\n",
	"bin.dat":           "Hello\x00binary\n",
	".gitignore":        "ignored.txt\nbuild/\n*.log\n!keep.log\n",
	"ignored.txt":       "Hello ignored\n",
	"build/out.go":      "Hello build\n",
	"x.log":             "Hello log\n",
	"keep.log":          "Hello kept\n",
	"sub/.gitignore":    "deep/\n",
	".git/config":       "Hello git\n",
	".hidden/h.txt":     "Hello hidden\n",
	"noeol.txt":         "first\nlast Hello",
	"crlf.txt":          "one\r\nHello\r\n",
	"unicode.txt":       "héllo Hello\n",
	"anchors.txt":       "Hello start\nend Hello\n\nHello\n",
	"multi.txt":         "Hello Hello\nHello\n",
	"other/e.txt":       "hello lower\n",
	"other/f.go":        "HELLO upper\n",
	"other/nested/g.go": "x Hello\n",
}

func TestSearchText(t *testing.T) {
	f := newFixture(t, DefaultOptions(), searchTree)
	cases := []struct {
		name string
		in   map[string]any
		want []string
	}{
		{"literal respects gitignore, skips git and binary", map[string]any{"query": "Hello"}, []string{
			".hidden/h.txt:1:1", "a.go:3:6", "anchors.txt:1:1", "anchors.txt:2:5", "anchors.txt:4:1",
			"b.txt:2:1", "crlf.txt:2:1", "keep.log:1:1", "multi.txt:1:1", "multi.txt:2:1", "noeol.txt:2:6",
			"other/nested/g.go:1:3", "sub/c.go:2:10", "unicode.txt:1:8"}},
		{"case insensitive literal", map[string]any{"query": "hello", "case_insensitive": true, "path": "other"},
			[]string{"other/e.txt:1:1", "other/f.go:1:1", "other/nested/g.go:1:3"}},
		{"case sensitive literal", map[string]any{"query": "hello", "path": "other"}, []string{"other/e.txt:1:1"}},
		{"sub path", map[string]any{"query": "Hello", "path": "sub"}, []string{"sub/c.go:2:10"}},
		{"sub path honours parent gitignore", map[string]any{"query": "Hello", "path": "build/.."},
			[]string{".hidden/h.txt:1:1", "a.go:3:6", "anchors.txt:1:1", "anchors.txt:2:5", "anchors.txt:4:1",
				"b.txt:2:1", "crlf.txt:2:1", "keep.log:1:1", "multi.txt:1:1", "multi.txt:2:1", "noeol.txt:2:6",
				"other/nested/g.go:1:3", "sub/c.go:2:10", "unicode.txt:1:8"}},
		{"named ignored file is searched", map[string]any{"query": "Hello", "path": "ignored.txt"}, []string{"ignored.txt:1:1"}},
		{"glob on name", map[string]any{"query": "Hello", "glob": "*.go"}, []string{"a.go:3:6", "other/nested/g.go:1:3", "sub/c.go:2:10"}},
		{"glob on path with doublestar", map[string]any{"query": "Hello", "glob": "other/**/*.go"}, []string{"other/nested/g.go:1:3"}},
		{"regex anchors are per line", map[string]any{"query": "^Hello$", "regex": true, "path": "anchors.txt"}, []string{"anchors.txt:4:1"}},
		{"regex end anchor", map[string]any{"query": `Hello\z`, "regex": true, "path": "anchors.txt"}, []string{"anchors.txt:2:5", "anchors.txt:4:1"}},
		{"regex class never spans lines", map[string]any{"query": `nothing here\sHello`, "regex": true}, nil},
		{"regex dot never spans lines", map[string]any{"query": `here.Hello`, "regex": true}, nil},
		{"regex with inner literal", map[string]any{"query": `\w+ Hello`, "regex": true, "path": "other"}, []string{"other/nested/g.go:1:1"}},
		{"regex alternation", map[string]any{"query": `lower|upper`, "regex": true, "path": "other"}, []string{"other/e.txt:1:7", "other/f.go:1:7"}},
		{"regex case insensitive", map[string]any{"query": `^h.llo`, "regex": true, "case_insensitive": true, "path": "other"},
			[]string{"other/e.txt:1:1", "other/f.go:1:1"}},
		{"empty line regex", map[string]any{"query": `^$`, "regex": true, "path": "anchors.txt"}, []string{"anchors.txt:3:1"}},
		{"max results", map[string]any{"query": "Hello", "max_results": 3}, []string{".hidden/h.txt:1:1", "a.go:3:6", "anchors.txt:1:1"}},
		{"one match per line", map[string]any{"query": "Hello", "path": "multi.txt"}, []string{"multi.txt:1:1", "multi.txt:2:1"}},
		{"regex metacharacters literal", map[string]any{"query": "a.b", "path": "other"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := f.mustRun(t, "workspace_search_text", tc.in)
			if got := matchKeys(out); !slices.Equal(got, tc.want) {
				t.Fatalf("matches = %q\nwant      %q", got, tc.want)
			}
		})
	}
}

func TestSearchTextPayload(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{
		"long.txt": strings.Repeat("a", 1000) + "NEEDLE" + strings.Repeat("b", 1000) + "\n",
		"crlf.txt": "x NEEDLE\r\n",
	})
	out := f.mustRun(t, "workspace_search_text", map[string]any{"query": "NEEDLE"})
	ms := out["matches"].([]any)
	if len(ms) != 2 {
		t.Fatalf("matches = %v", ms)
	}
	crlf := ms[0].(map[string]any)
	if crlf["text"] != "x NEEDLE" {
		t.Errorf("crlf text = %q", crlf["text"])
	}
	long := ms[1].(map[string]any)
	text := long["text"].(string)
	if len(text) > maxLineText || !strings.Contains(text, "NEEDLE") {
		t.Errorf("long line text (%d bytes) = %q", len(text), text)
	}
	if long["column"] != 1001 {
		t.Errorf("column = %v, want 1001", long["column"])
	}
	if out["query"] != "NEEDLE" || out["files_searched"] != int64(2) || out["truncated"] != false {
		t.Errorf("payload = %v", out)
	}
}

func TestSearchTextTruncation(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[fmt.Sprintf("f%02d.txt", i)] = "match\nmatch\n"
	}
	cases := []struct {
		name      string
		maxFiles  int
		in        map[string]any
		matches   int
		truncated bool
		searched  int64
	}{
		{"no cap hit", 100, map[string]any{"query": "match", "max_results": 1000}, 60, false, 30},
		{"max results", 100, map[string]any{"query": "match", "max_results": 5}, 5, true, -1},
		{"max results exactly all", 100, map[string]any{"query": "match", "max_results": 60}, 60, false, 30},
		{"file cap", 10, map[string]any{"query": "match", "max_results": 1000}, 20, true, 10},
		{"file cap equal to count", 30, map[string]any{"query": "match", "max_results": 1000}, 60, false, 30},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			opts.MaxSearchFiles = tc.maxFiles
			f := newFixture(t, opts, files)
			for range 3 { // deterministic across runs
				out := f.mustRun(t, "workspace_search_text", tc.in)
				keys := matchKeys(out)
				if len(keys) != tc.matches || out["truncated"] != tc.truncated {
					t.Fatalf("got %d matches, truncated %v; want %d, %v", len(keys), out["truncated"], tc.matches, tc.truncated)
				}
				if tc.searched >= 0 && out["files_searched"] != tc.searched {
					t.Fatalf("files_searched = %v, want %d", out["files_searched"], tc.searched)
				}
				if !slices.IsSorted(keys) {
					t.Fatalf("matches out of order: %q", keys)
				}
				if len(keys) > 0 && keys[0] != "f00.txt:1:1" {
					t.Fatalf("first match %q, want the first file's", keys[0])
				}
			}
		})
	}
}

func TestSearchTextErrors(t *testing.T) {
	f := newFixture(t, DefaultOptions(), searchTree)
	cases := []struct {
		name string
		in   map[string]any
		code action.Code
	}{
		{"no query", map[string]any{}, action.CodeInvalidInput},
		{"empty query", map[string]any{"query": ""}, action.CodeInvalidInput},
		{"bad regex", map[string]any{"query": "(", "regex": true}, action.CodeInvalidInput},
		{"huge repeat", map[string]any{"query": "a{2000}", "regex": true}, action.CodeInvalidInput},
		{"long query", map[string]any{"query": strings.Repeat("q", maxQueryBytes+1)}, action.CodeInvalidInput},
		{"bad glob", map[string]any{"query": "x", "glob": "[a"}, action.CodeInvalidInput},
		{"zero max results", map[string]any{"query": "x", "max_results": 0}, action.CodeInvalidInput},
		{"missing path", map[string]any{"query": "x", "path": "nope"}, action.CodeNotFound},
		{"path outside", map[string]any{"query": "x", "path": "../outside"}, action.CodePathOutsideRoot},
		{"binary named file is skipped not refused", map[string]any{"query": "x", "path": "bin.dat"}, action.CodeNone},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.run(t, "workspace_search_text", tc.in)
			if got := codeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
		})
	}
}

// TestSearchTextLongLines checks lines longer than the read buffer and
// matches that straddle buffer refills.
func TestSearchTextLongLines(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "line %d filler filler filler\n", i)
	}
	b.WriteString(strings.Repeat("z", 3*searchBufSize) + "TARGET\n")
	b.WriteString("after TARGET\n")
	f := newFixture(t, DefaultOptions(), map[string]string{"big.txt": b.String()})
	out := f.mustRun(t, "workspace_search_text", map[string]any{"query": "TARGET"})
	want := []string{fmt.Sprintf("big.txt:20001:%d", 3*searchBufSize+1), "big.txt:20002:7"}
	if got := matchKeys(out); !slices.Equal(got, want) {
		t.Fatalf("matches = %q, want %q", got, want)
	}
	out = f.mustRun(t, "workspace_search_text", map[string]any{"query": `line 1999[0-9] `, "regex": true})
	if got := len(matchKeys(out)); got != 10 {
		t.Fatalf("regex matches = %d, want 10", got)
	}
	out = f.mustRun(t, "workspace_search_text", map[string]any{"query": `^line 1234 `, "regex": true})
	if got := matchKeys(out); !slices.Equal(got, []string{"big.txt:1235:1"}) {
		t.Fatalf("anchored regex matches = %q", got)
	}
}

func TestSearchTextSkipsSymlinksAndSpecialFiles(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{"real/a.txt": "needle\n"})
	if err := os.Symlink("real", filepath.Join(f.root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real/a.txt", filepath.Join(f.root, "linkfile")); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(filepath.Join(f.root, "fifo")); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	out := f.mustRun(t, "workspace_search_text", map[string]any{"query": "needle"})
	if got := matchKeys(out); !slices.Equal(got, []string{"real/a.txt:1:1"}) {
		t.Fatalf("matches = %q", got)
	}
}

func TestGitignoreRules(t *testing.T) {
	ig := ignoreStack{parseGitignore(".", []byte("# comment\n*.o\n/top.txt\ndocs/*.md\n!docs/keep.md\nout/\n**/gen/**\nsp\\ \n\\#hash\n")),
		parseGitignore("sub", []byte("!*.o\nlocal\n"))}
	cases := []struct {
		name  string
		path  string
		isDir bool
		want  bool
	}{
		{"base name anywhere", "a/b/x.o", false, true},
		{"anchored at base", "top.txt", false, true},
		{"anchored not deeper", "a/top.txt", false, false},
		{"path glob", "docs/a.md", false, true},
		{"path glob one level only", "docs/x/a.md", false, false},
		{"negation", "docs/keep.md", false, false},
		{"dir only matches dir", "out", true, true},
		{"dir only skips file", "out", false, false},
		{"double star", "x/gen/y/z.go", false, true},
		{"escaped trailing space", "sp ", false, true},
		{"escaped hash", "#hash", false, true},
		{"comment is not a pattern", "# comment", false, false},
		{"deeper file overrides", "sub/x.o", false, false},
		{"deeper file own rule", "sub/q/local", false, true},
		{"deeper rule not applied above", "local", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ig.ignored(tc.path, tc.isDir); got != tc.want {
				t.Fatalf("ignored(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

func TestMatchSegsHostilePattern(t *testing.T) {
	pat := strings.Split(strings.Repeat("**/", 200)+"z", "/")
	names := strings.Split(strings.Repeat("a/", 300)+"y", "/")
	if matchSegs(pat, names) {
		t.Fatal("matched")
	}
	names[len(names)-1] = "z"
	if !matchSegs(pat, names) {
		t.Fatal("did not match")
	}
}

// FuzzSearchLines checks that the buffer-wide matcher (line-local regexp
// rewrite, required-literal prefilter, literal fast path) finds exactly
// the lines that matching each line on its own with the original pattern
// finds.
func FuzzSearchLines(f *testing.F) {
	f.Add("a\\s+b", "a b\na\nb\n", true, false)
	f.Add("^x$", "x\nxx\n\nx", true, false)
	f.Add("foo", "foo\nFOO\nfo o\n", false, true)
	f.Add("[^a]b", "ab\n\nb\ncb\n", true, false)
	f.Add("\\Ay.*z\\z", "yz\ny\nz\nyaz", true, false)
	f.Add("x*", "\n\nx\n", true, false)
	f.Add("kelvin", "\u212aELVIN\nkElViN\n", false, true)
	f.Add("Hello", "xhELLO\nhel\nHELL\n", false, true)
	f.Add("[0-9]{2}-x?[a-z]", "12-a 1-b\n99-xz-\n-3-4\n", true, false)
	f.Add("(ab|c)-(d|ef)", "ab-d\nc-ef\nab--d\n", true, false)
	f.Fuzz(func(t *testing.T, pattern, text string, isRegex, fold bool) {
		if pattern == "" || len(pattern) > 64 || len(text) > 4096 {
			return
		}
		refPattern := pattern
		if !isRegex {
			refPattern = regexp.QuoteMeta(pattern)
		}
		if fold {
			refPattern = "(?i)" + refPattern
		}
		ref, err := regexp.Compile(refPattern)
		if err != nil {
			return
		}
		m, err := newMatcher(pattern, isRegex, fold)
		if err != nil {
			t.Fatalf("newMatcher(%q) failed where regexp.Compile did not: %v", pattern, err)
		}
		var want []int
		for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if text == "" {
				break
			}
			if ref.MatchString(line) {
				want = append(want, i+1)
			}
		}
		sc := newScanner(m, 1<<20)
		sc.buf = make([]byte, 64) // exercise refills and growth
		ms, binary, err := sc.scan(context.Background(), strings.NewReader(text), -1, "f")
		if err != nil || binary {
			return
		}
		var got []int
		for _, mt := range ms {
			got = append(got, mt.line)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pattern %q regex=%v fold=%v text %q: lines %v, want %v", pattern, isRegex, fold, text, got, want)
		}
	})
}

func TestRequiredLiterals(t *testing.T) {
	cases := []struct {
		pattern string
		want    []string
	}{
		{`\w+Error\(`, []string{"Error("}},
		{`[0-9]{4}-[0-9]{2}`, []string{"-"}},
		{`(foo|bar)\d+`, []string{"foo", "bar"}},
		{`[Ee]rror`, []string{"rror"}},
		{`x[+-]y`, []string{"x"}},
		{`(a|\w)b`, []string{"b"}},
		{`\d+`, nil},
		{`(?i)hello`, nil},
		{`a?`, nil},
		{`(a|b|c|d|e|f|g|h|i)z`, []string{"z"}},
	}
	for _, tc := range cases {
		t.Run(tc.pattern, func(t *testing.T) {
			m, err := newMatcher(tc.pattern, true, false)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range m.req {
				got = append(got, string(l))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("required literals = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSearchReleasesHandles checks that searches stopped early (by
// max_results or the file cap) close every directory and file they opened.
func TestSearchReleasesHandles(t *testing.T) {
	files := map[string]string{}
	for d := range 20 {
		for i := range 40 {
			files[fmt.Sprintf("d%02d/s/f%02d.txt", d, i)] = "hit\nhit\n"
			files[fmt.Sprintf("d%02d/s/t/g%02d.txt", d, i%5)] = "hit\n"
		}
	}
	opts := DefaultOptions()
	opts.MaxSearchFiles = 300
	f := newFixture(t, opts, files)
	openFDs := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skipf("no /proc/self/fd: %v", err)
		}
		return len(ents)
	}
	// Without GC, os.Root's finalizer cannot hide a handle we forgot.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := openFDs()
	for _, in := range []map[string]any{
		{"query": "hit", "max_results": 1},
		{"query": "hit", "max_results": 100},
		{"query": "hit", "max_results": 100000},
		{"query": "h.t", "regex": true, "max_results": 3},
	} {
		for range 25 {
			f.mustRun(t, "workspace_search_text", in)
		}
	}
	if after := openFDs(); after > before+2 {
		t.Fatalf("open descriptors grew from %d to %d", before, after)
	}
}

func TestSearchTextCaseInsensitiveLiteral(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{
		"a.txt": "Hello World\nhELLo\nhell o\n\u212Aelvin scale\nKELVIN\nclass ſtruct\n",
	})
	cases := []struct {
		query string
		want  []string
	}{
		{"hello", []string{"a.txt:1:1", "a.txt:2:1"}},
		{"HELLO WORLD", []string{"a.txt:1:1"}},
		{"kelvin", []string{"a.txt:4:1", "a.txt:5:1"}}, // KELVIN SIGN folds to k
		{"struct", []string{"a.txt:6:7"}},              // LONG S folds to s
		{"sk", nil},
		{"o w", []string{"a.txt:1:5"}},
	}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			out := f.mustRun(t, "workspace_search_text", map[string]any{"query": tc.query, "case_insensitive": true})
			if got := matchKeys(out); !slices.Equal(got, tc.want) {
				t.Fatalf("matches = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSearchTextNamedFile(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{
		"a.txt":     "one needle\ntwo needle\nthree needle\n",
		"sub/x.txt": "x\n",
		"bin":       "needle\x00\n",
	})
	if err := os.Symlink("../a.txt", filepath.Join(f.root, "sub", "up")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		in        map[string]any
		want      []string
		searched  int64
		truncated bool
	}{
		{"plain file", map[string]any{"query": "needle", "path": "a.txt"}, []string{"a.txt:1:5", "a.txt:2:5", "a.txt:3:7"}, 1, false},
		{"symlink to a file elsewhere in the root", map[string]any{"query": "needle", "path": "sub/up"}, []string{"sub/up:1:5", "sub/up:2:5", "sub/up:3:7"}, 1, false},
		{"max results", map[string]any{"query": "needle", "path": "a.txt", "max_results": 2}, []string{"a.txt:1:5", "a.txt:2:5"}, 1, true},
		{"max results equal to count", map[string]any{"query": "needle", "path": "a.txt", "max_results": 3}, []string{"a.txt:1:5", "a.txt:2:5", "a.txt:3:7"}, 1, false},
		{"binary file", map[string]any{"query": "needle", "path": "bin"}, nil, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := f.mustRun(t, "workspace_search_text", tc.in)
			if got := matchKeys(out); !slices.Equal(got, tc.want) {
				t.Fatalf("matches = %q, want %q", got, tc.want)
			}
			if out["files_searched"] != tc.searched || out["truncated"] != tc.truncated {
				t.Fatalf("files_searched %v truncated %v, want %v %v", out["files_searched"], out["truncated"], tc.searched, tc.truncated)
			}
		})
	}
}
