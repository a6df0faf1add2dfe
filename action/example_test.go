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
