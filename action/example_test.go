package action_test

import (
	"encoding/json"
	"fmt"

	"github.com/harness-runtime/harness/action"
)

// The canonical hash binds a preview token to one action: key order,
// whitespace and number spelling do not change it; the input does.
func ExampleAction_Hash() {
	var a, b action.Action
	json.Unmarshal([]byte(`{"name":"workspace_read_file","input":{"path":"a.txt","limit":10}}`), &a)
	json.Unmarshal([]byte(`{"input":{"limit":1e1,  "path":"a.txt"},"name":"workspace_read_file"}`), &b)
	ha, _ := a.Hash()
	hb, _ := b.Hash()
	fmt.Println(ha == hb)

	b.Input["path"] = "b.txt"
	hb, _ = b.Hash()
	fmt.Println(ha == hb)
	// Output:
	// true
	// false
}

// A listing's entries are typed in process and encode as the generic
// objects HTTP and audit clients see.
func ExampleEntries() {
	es := action.Entries{
		{Path: "src", Name: "src", Type: "dir"},
		{Path: "src/main.go", Name: "main.go", Type: "file", Detailed: true, Size: 120, ModTime: "2026-01-02T03:04:05Z"},
	}
	for _, e := range es {
		fmt.Println(e.Type, e.Path)
	}
	b, _ := json.Marshal(map[string]any{"entries": es})
	fmt.Println(string(b))
	// Output:
	// dir src
	// file src/main.go
	// {"entries":[{"name":"src","path":"src","type":"dir"},{"mod_time":"2026-01-02T03:04:05Z","name":"main.go","path":"src/main.go","size":120,"type":"file"}]}
}
