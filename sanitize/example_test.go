package sanitize_test

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-runtime/harness/sanitize"
)

func Example() {
	dir, err := os.MkdirTemp("", "sanitize-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	key, err := sanitize.LoadOrCreateKey(filepath.Join(dir, "sanitize.key"))
	if err != nil {
		log.Fatal(err)
	}
	s, err := sanitize.New(sanitize.Options{Key: key, MaxString: 64})
	if err != nil {
		log.Fatal(err)
	}

	input := map[string]any{
		"command": "git push https://bot:hunter2@example.com/repo.git",
		"pin":     "0000", // declared sensitive by the action's schema
		"api_key": "anything at all",
		"note":    "short and clean",
	}
	clean := s.Value(input, []string{"pin"}).(map[string]any)

	// Markers depend on the key, so print their shape only.
	for _, k := range []string{"api_key", "command", "note", "pin"} {
		fmt.Printf("%s: %s\n", k, shape(clean[k].(string)))
	}
	fmt.Println(s.ContainsSecret("token ghp_QoaF1LlqsajAIxNKu8iS2G8NPRVdD53X83RZ"))
	// Output:
	// api_key: hmac-sha256:<64 hex>
	// command: git push https://bot:hmac-sha256:<64 hex>@example.com/repo.git
	// note: short and clean
	// pin: hmac-sha256:<64 hex>
	// true
}

func ExampleSummarize() {
	payload := map[string]any{"stdout": "hello\n", "exit_code": 0}
	b, _ := json.Marshal(sanitize.Summarize(payload))
	fmt.Println(string(b))
	// Output: {"bytes":34,"keys":["exit_code","stdout"]}
}

func ExampleSanitizer_String() {
	s, err := sanitize.New(sanitize.Options{Key: []byte("0123456789abcdef"), MaxString: 12})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(s.String("a log line that is rather long"))
	// Output: a log line t…[truncated, 30 bytes]
}

// shape replaces each marker's hex digits by a placeholder.
func shape(v string) string {
	const p = sanitize.MarkerPrefix
	out := ""
	for {
		i := strings.Index(v, p)
		if i < 0 || len(v) < i+len(p)+64 {
			return out + v
		}
		out += v[:i] + p + "<64 hex>"
		v = v[i+len(p)+64:]
	}
}
