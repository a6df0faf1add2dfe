package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

var listTree = map[string]string{
	"b.txt":          "b\n",
	"a/x.go":         "package x\n",
	"a/deep/y.go":    "package y\n",
	"c/":             "",
	".git/HEAD":      "ref: refs/heads/main\n",
	".git/refs/main": "0000\n",
	".hidden":        "h\n",
}

func TestListFiles(t *testing.T) {
	f := newFixture(t, DefaultOptions(), listTree)
	if err := os.Symlink("b.txt", filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		in        map[string]any
		want      []string
		truncated bool
	}{
		{"top level sorted", map[string]any{}, []string{".git", ".hidden", "a", "b.txt", "c", "link"}, false},
		{"explicit dot", map[string]any{"path": "."}, []string{".git", ".hidden", "a", "b.txt", "c", "link"}, false},
		{"sub directory", map[string]any{"path": "a"}, []string{"a/deep", "a/x.go"}, false},
		{"sub directory trailing slash", map[string]any{"path": "a/"}, []string{"a/deep", "a/x.go"}, false},
		{"recursive skips git internals", map[string]any{"recursive": true},
			[]string{".git", ".hidden", "a", "a/deep", "a/deep/y.go", "a/x.go", "b.txt", "c", "link"}, false},
		{"recursive include_git", map[string]any{"recursive": true, "include_git": true},
			[]string{".git", ".git/HEAD", ".git/refs", ".git/refs/main", ".hidden", "a", "a/deep", "a/deep/y.go", "a/x.go", "b.txt", "c", "link"}, false},
		{"recursive capped", map[string]any{"recursive": true, "max_entries": 4}, []string{".git", ".hidden", "a", "a/deep"}, true},
		{"flat capped", map[string]any{"max_entries": 2}, []string{".git", ".hidden"}, true},
		{"cap equal to count is not truncated", map[string]any{"path": "a", "max_entries": 2}, []string{"a/deep", "a/x.go"}, false},
		{"dotdot inside root", map[string]any{"path": "a/deep/.."}, []string{"a/deep", "a/x.go"}, false},
		{"empty directory", map[string]any{"path": "c"}, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := f.mustRun(t, "workspace_list_files", tc.in)
			if got := entryPaths(out); !slices.Equal(got, tc.want) {
				t.Fatalf("entries = %q, want %q", got, tc.want)
			}
			if out["truncated"] != tc.truncated {
				t.Fatalf("truncated = %v, want %v", out["truncated"], tc.truncated)
			}
		})
	}
}

func TestListFilesEntryShape(t *testing.T) {
	f := newFixture(t, DefaultOptions(), listTree)
	if err := os.Symlink("a", filepath.Join(f.root, "dirlink")); err != nil {
		t.Fatal(err)
	}
	byPath := func(in map[string]any) map[string]map[string]any {
		out := f.mustRun(t, "workspace_list_files", in)
		m := map[string]map[string]any{}
		for _, e := range out["entries"].(action.Entries) {
			em := e.Map()
			m[e.Path] = em
		}
		return m
	}
	detailed := byPath(map[string]any{"recursive": true, "details": true})
	if e := detailed["b.txt"]; e["type"] != "file" || e["size"] != int64(2) || e["name"] != "b.txt" || !strings.HasSuffix(e["mod_time"].(string), "Z") {
		t.Fatalf("b.txt entry (with details) = %v", e)
	}
	if e := byPath(map[string]any{"recursive": true})["b.txt"]; len(e) != 3 {
		t.Fatalf("b.txt entry by default = %v, want no details", e)
	}
	plain := byPath(map[string]any{"recursive": true, "details": false})
	if e := plain["b.txt"]; len(e) != 3 || e["type"] != "file" || e["name"] != "b.txt" {
		t.Fatalf("b.txt entry with details false = %v, want path, name and type only", e)
	}
	if len(plain) != len(detailed) {
		t.Fatalf("%d entries without details, %d with", len(plain), len(detailed))
	}
	for p, e := range plain {
		if d := detailed[p]; d["type"] != e["type"] {
			t.Fatalf("%s: type %v without details, %v with", p, e["type"], d["type"])
		}
	}
	if e := plain["a"]; e["type"] != "dir" {
		t.Fatalf("a entry = %v", e)
	}
	if e := plain["dirlink"]; e["type"] != "symlink" {
		t.Fatalf("dirlink entry = %v", e)
	}
	if _, ok := detailed["dirlink/x.go"]; ok {
		t.Fatal("recursive listing with details followed a symlinked directory")
	}
	if _, ok := plain["dirlink/x.go"]; ok {
		t.Fatal("recursive listing followed a symlinked directory")
	}
}

func TestListFilesErrors(t *testing.T) {
	f := newFixture(t, DefaultOptions(), listTree)
	cases := []struct {
		name string
		in   map[string]any
		code action.Code
	}{
		{"missing directory", map[string]any{"path": "nope"}, action.CodeNotFound},
		{"a file", map[string]any{"path": "b.txt"}, action.CodeInvalidInput},
		{"zero max_entries", map[string]any{"max_entries": 0}, action.CodeInvalidInput},
		{"wrong type recursive", map[string]any{"recursive": "yes"}, action.CodeInvalidInput},
		{"wrong type path", map[string]any{"path": 3}, action.CodeInvalidInput},
		{"absolute", map[string]any{"path": "/etc"}, action.CodePathOutsideRoot},
		{"parent", map[string]any{"path": ".."}, action.CodePathOutsideRoot},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.run(t, "workspace_list_files", tc.in)
			if got := codeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
		})
	}
}

func sum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestReadFile(t *testing.T) {
	text := "zero\none\ntwo\nthree\nfour"
	opts := DefaultOptions()
	opts.MaxFileBytes = 64
	big := strings.Repeat("0123456789\n", 20) // 220 bytes
	f := newFixture(t, opts, map[string]string{
		"t.txt":     text,
		"empty":     "",
		"nl.txt":    "a\nb\n",
		"big.txt":   big,
		"bin.dat":   "head\x00tail\n",
		"d/in.txt":  "inner\n",
		"crlf.txt":  "x\r\ny\r\n",
		"long.txt":  strings.Repeat("x", 100),
		"linked/ok": "via link\n",
	})
	if err := os.Symlink("t.txt", filepath.Join(f.root, "tlink")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		in        map[string]any
		content   string
		sha       string
		lines     int64
		truncated bool
		binary    bool
	}{
		{"whole file", map[string]any{"path": "t.txt"}, text, sum(text), 5, false, false},
		{"offset", map[string]any{"path": "t.txt", "offset": 3}, "three\nfour", sum(text), 5, false, false},
		{"offset and limit", map[string]any{"path": "t.txt", "offset": 1, "limit": 2}, "one\ntwo\n", sum(text), 5, true, false},
		{"limit only", map[string]any{"path": "t.txt", "limit": 1}, "zero\n", sum(text), 5, true, false},
		{"limit past end", map[string]any{"path": "t.txt", "offset": 4, "limit": 10}, "four", sum(text), 5, false, false},
		{"offset past end", map[string]any{"path": "t.txt", "offset": 50}, "", sum(text), 5, false, false},
		{"float offset from JSON", map[string]any{"path": "t.txt", "offset": float64(2), "limit": float64(1)}, "two\n", sum(text), 5, true, false},
		{"empty file", map[string]any{"path": "empty"}, "", sum(""), 0, false, false},
		{"trailing newline lines", map[string]any{"path": "nl.txt"}, "a\nb\n", sum("a\nb\n"), 2, false, false},
		{"large file with range", map[string]any{"path": "big.txt", "offset": 0, "limit": 3}, strings.Repeat("0123456789\n", 3), sum(big), 20, true, false},
		{"large file range capped at max bytes", map[string]any{"path": "big.txt", "offset": 0}, strings.Repeat("0123456789\n", 5), sum(big), 20, true, false},
		{"long line range keeps head", map[string]any{"path": "long.txt", "limit": 1}, strings.Repeat("x", 64), sum(strings.Repeat("x", 100)), 1, true, false},
		{"binary", map[string]any{"path": "bin.dat"}, "", sum("head\x00tail\n"), 1, false, true},
		{"nested", map[string]any{"path": "d/in.txt"}, "inner\n", sum("inner\n"), 1, false, false},
		{"crlf kept verbatim", map[string]any{"path": "crlf.txt"}, "x\r\ny\r\n", sum("x\r\ny\r\n"), 2, false, false},
		{"symlink inside root followed", map[string]any{"path": "tlink"}, text, sum(text), 5, false, false},
		{"dot segments cleaned", map[string]any{"path": "./d/../t.txt"}, text, sum(text), 5, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := f.mustRun(t, "workspace_read_file", tc.in)
			if out["content"] != tc.content {
				t.Errorf("content = %q, want %q", out["content"], tc.content)
			}
			if out["sha256"] != tc.sha {
				t.Errorf("sha256 = %v, want %v", out["sha256"], tc.sha)
			}
			if out["lines"] != tc.lines {
				t.Errorf("lines = %v, want %v", out["lines"], tc.lines)
			}
			if out["truncated"] != tc.truncated || out["binary"] != tc.binary {
				t.Errorf("truncated, binary = %v, %v; want %v, %v", out["truncated"], out["binary"], tc.truncated, tc.binary)
			}
		})
	}
}

func TestReadFileErrors(t *testing.T) {
	opts := DefaultOptions()
	opts.MaxFileBytes = 10
	f := newFixture(t, opts, map[string]string{"big.txt": strings.Repeat("y", 11), "d/": ""})
	cases := []struct {
		name string
		in   map[string]any
		code action.Code
	}{
		{"too large without range", map[string]any{"path": "big.txt"}, action.CodeTooLarge},
		{"missing", map[string]any{"path": "nope.txt"}, action.CodeNotFound},
		{"missing parent", map[string]any{"path": "nope/x.txt"}, action.CodeNotFound},
		{"file as parent", map[string]any{"path": "big.txt/x"}, action.CodeNotFound},
		{"file spelled as directory", map[string]any{"path": "big.txt/."}, action.CodeInvalidInput},
		{"file with trailing slash", map[string]any{"path": "big.txt/"}, action.CodeInvalidInput},
		{"directory", map[string]any{"path": "d"}, action.CodeInvalidInput},
		{"no path", map[string]any{}, action.CodeInvalidInput},
		{"empty path", map[string]any{"path": ""}, action.CodeInvalidInput},
		{"negative offset", map[string]any{"path": "big.txt", "offset": -1}, action.CodeInvalidInput},
		{"zero limit", map[string]any{"path": "big.txt", "limit": 0}, action.CodeInvalidInput},
		{"fractional limit", map[string]any{"path": "big.txt", "limit": 1.5}, action.CodeInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.run(t, "workspace_read_file", tc.in)
			if got := codeOf(err); got != tc.code {
				t.Fatalf("code = %q (%v), want %q", got, err, tc.code)
			}
		})
	}
}

func TestReadFileTooLargePayload(t *testing.T) {
	opts := DefaultOptions()
	opts.MaxFileBytes = 4
	f := newFixture(t, opts, map[string]string{"big.txt": "12345"})
	_, err := f.run(t, "workspace_read_file", map[string]any{"path": "big.txt"})
	var ae *action.Error
	if !asActionError(err, &ae) || ae.Code != action.CodeTooLarge {
		t.Fatalf("err = %v, want too_large", err)
	}
	if ae.Payload["size"] != int64(5) || ae.Payload["max_file_bytes"] != int64(4) {
		t.Fatalf("payload = %v", ae.Payload)
	}
}

func TestWalkDepthLimit(t *testing.T) {
	deep := strings.Repeat("d/", maxWalkDepth+3)
	f := newFixture(t, DefaultOptions(), map[string]string{
		"d/top.txt":         "needle\n",
		deep + "bottom.txt": "needle\n",
	})
	list := f.mustRun(t, "workspace_list_files", map[string]any{"recursive": true, "max_entries": 100000})
	paths := entryPaths(list)
	if list["truncated"] != true || slices.Contains(paths, deep+"bottom.txt") || !slices.Contains(paths, "d/top.txt") {
		t.Fatalf("list: truncated %v, %d entries", list["truncated"], len(paths))
	}
	deepest := 0
	for _, p := range paths {
		deepest = max(deepest, strings.Count(p, "/")+1)
	}
	if deepest != maxWalkDepth {
		t.Fatalf("deepest entry has %d levels, want %d", deepest, maxWalkDepth)
	}
	search := f.mustRun(t, "workspace_search_text", map[string]any{"query": "needle"})
	if got := matchKeys(search); search["truncated"] != true || !slices.Equal(got, []string{"d/top.txt:1:1"}) {
		t.Fatalf("search: truncated %v, matches %q", search["truncated"], got)
	}
}

// TestCancelledContext: every read action stops on a context that is
// done, which is what lets a dispatcher run them on its own goroutine
// (HonoursContext).
func TestCancelledContext(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{"a/b.txt": "needle\n", "c.txt": "needle\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name, action string
		in           map[string]any
	}{
		{"list", "workspace_list_files", map[string]any{"recursive": true}},
		{"list one directory", "workspace_list_files", map[string]any{}},
		{"list one directory with details", "workspace_list_files", map[string]any{"details": true}},
		{"read", "workspace_read_file", map[string]any{"path": "c.txt"}},
		{"propose a patch", "workspace_propose_patch", map[string]any{"path": "c.txt", "content": "x\n"}},
		{"search tree", "workspace_search_text", map[string]any{"query": "needle"}},
		{"search one file", "workspace_search_text", map[string]any{"query": "needle", "path": "c.txt"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.w.Run(ctx, action.Action{Name: tc.action, Input: tc.in})
			if got := codeOf(err); got != action.CodeTimeout {
				t.Fatalf("code = %q (%v), want timeout", got, err)
			}
		})
	}
}

// TestListingEntriesAreTheirOwn: a listing answered from the listing
// cache is a copy: changing one listing's entries changes no other.
func TestListingEntriesAreTheirOwn(t *testing.T) {
	f := newFixture(t, DefaultOptions(), map[string]string{"a.txt": "a", "b.txt": "b"})
	for _, details := range []bool{false, true} {
		in := map[string]any{"details": details}
		first := f.mustRun(t, "workspace_list_files", in)["entries"].(action.Entries)
		second := f.mustRun(t, "workspace_list_files", in)["entries"].(action.Entries)
		first[0].Path, first[0].Name, first[1].Type = "changed", "changed", "other"
		third := f.mustRun(t, "workspace_list_files", in)["entries"].(action.Entries)
		for _, es := range []action.Entries{second, third} {
			if len(es) != 2 || es[0].Path != "a.txt" || es[0].Name != "a.txt" || es[1].Type != "file" {
				t.Fatalf("details %v: a listing changed with another's entries: %+v", details, es)
			}
		}
	}
}
