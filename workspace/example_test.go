package workspace_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/workspace"
)

// Example shows the file side of a workspace: list, read and search, all
// confined to the root, and a path that tries to leave it.
func Example() {
	dir, _ := os.MkdirTemp("", "workspace-example-")
	defer os.RemoveAll(dir)
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "README.md"), []byte("# demo\nsay hello\n"), 0o644)

	w, err := workspace.New(dir, workspace.DefaultOptions())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	ctx := context.Background()
	run := func(name string, in map[string]any) (map[string]any, error) {
		return w.Run(ctx, action.Action{Name: name, Input: in})
	}

	list, _ := run("workspace_list_files", map[string]any{"recursive": true})
	for _, e := range list["entries"].(action.Entries) {
		fmt.Println(e.Type, e.Path)
	}

	read, _ := run("workspace_read_file", map[string]any{"path": "src/main.go", "offset": 2, "limit": 2})
	fmt.Printf("%q of %d lines\n", read["content"], read["lines"])

	found, _ := run("workspace_search_text", map[string]any{"query": "hello"})
	for _, m := range found["matches"].([]any) {
		mm := m.(map[string]any)
		fmt.Printf("%s:%d:%d %s\n", mm["path"], mm["line"], mm["column"], mm["text"])
	}

	_, err = run("workspace_read_file", map[string]any{"path": "../etc/passwd"})
	fmt.Println(action.CodeOf(err))
	// Output:
	// file README.md
	// dir src
	// file src/main.go
	// "func main() {\n\tprintln(\"hello\")\n" of 5 lines
	// README.md:2:5 say hello
	// src/main.go:4:11 	println("hello")
	// path_outside_root
}
