package pipeline_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeAskSnippetIsTheExample keeps the README's snippet of ask (not
// a whole program, so internal/docs does not build it) identical to the
// code of Example_ask: each of its code lines is a line of the Example, in
// the same order.
func TestReadmeAskSnippetIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(readme)
	start := strings.Index(section, "## Trusted actions from the library")
	if start < 0 {
		t.Fatal("README has no section Trusted actions from the library")
	}
	section = section[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var snippet string
	for _, b := range regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(section, -1) {
		if strings.Contains(b[1], "policy.AskWith") {
			snippet = b[1]
		}
	}
	if snippet == "" {
		t.Fatal("the section has no snippet of ask")
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(example), "\n")
	at := 0
	for _, l := range strings.Split(snippet, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || l == "…" || strings.HasPrefix(l, "//") {
			continue
		}
		found := false
		for ; at < len(lines); at++ {
			if strings.TrimSpace(lines[at]) == l {
				found = true
				break
			}
		}
		if !found {
			t.Fatalf("README line %q is not in Example_ask (in this order)", l)
		}
	}
}
