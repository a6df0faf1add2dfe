// Command react is a runnable ReAct loop that drives the Harness library
// with a scripted model: no network, no API key. It builds a small demo
// workspace, then lets the "model" list, read and search it, try to escape
// the root, and propose and apply a patch without trust, printing every
// step's action and observation.
//
// It shows the library's main use: an agent loop gives the model the
// registered actions as tool definitions (Registry.Export), calls
// Harness.Execute with whatever the model proposes and feeds the
// observation back, whatever happened. Nothing the model sends can make an
// action trusted.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/schema"
)

// step is one turn of the scripted model: a thought and the action it
// proposes, or a final answer.
type step struct {
	thought string
	action  string
	input   map[string]any
	finish  string
}

// scriptedModel stands in for an LLM. A real loop would send the tool
// definitions, the history and the last observation to a model API and
// parse its tool call; like such an API, the scripted model only calls
// tools it was given.
type scriptedModel struct {
	tools []string // the names in the "tools" field of the request
	steps []step
	next  int
}

// offer is the request's "tools" field: the registry's export in the
// model API's own format, sent as it is.
func (m *scriptedModel) offer(defs json.RawMessage) error {
	var tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(defs, &tools); err != nil {
		return err
	}
	for _, t := range tools {
		m.tools = append(m.tools, t.Function.Name)
	}
	return nil
}

func (m *scriptedModel) propose(_ action.Observation) step {
	s := m.steps[m.next]
	m.next++
	if s.finish == "" && !slices.Contains(m.tools, s.action) {
		panic("the scripted model called a tool it was not given: " + s.action)
	}
	return s
}

func main() {
	dir := argValue("--dir")
	if err := run(context.Background(), os.Stdout, dir); err != nil {
		log.Fatal(err)
	}
}

// argValue returns the value after name on the command line ("--dir D"
// keeps the demo workspace in D instead of a temporary directory).
func argValue(name string) string {
	for i, a := range os.Args[1:] {
		if a == name && i+2 < len(os.Args) {
			return os.Args[i+2]
		}
	}
	return ""
}

// demoFiles is the workspace the loop works on.
var demoFiles = map[string]string{
	"README.md":        "# greeter\n\nA tiny Go program that greets people.\n",
	"main.go":          "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greeting(\"world\"))\n}\n",
	"greet.go":         "package main\n\n// greeting returns the greeting for name.\n// TODO: greet in more languages.\nfunc greeting(name string) string {\n\treturn \"Hello, \" + name\n}\n",
	"docs/notes.md":    "Remember: the API key lives in the vault, not in the repo.\n",
	"config/app.yaml":  "listen: 127.0.0.1:8080\n",
	"config/.gitkeep":  "",
	"internal/x/x.go":  "package x\n",
	"internal/x/y.txt": "TODO: nothing\n",
}

func makeWorkspace(dir string) error {
	for name, content := range demoFiles {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func run(ctx context.Context, out io.Writer, dir string) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "harness-react-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	root := filepath.Join(dir, "workspace")
	if err := makeWorkspace(root); err != nil {
		return err
	}

	// The read-only workspace actions are auto-approved, as a typical dev
	// setup does; writes and commands still need trust.
	cfg, err := config.Parse("react-example", []byte(`harness:
  profile: dev
  auto-approved-actions: [workspace_list_files, workspace_read_file, workspace_search_text, workspace_propose_patch]
`))
	if err != nil {
		return err
	}
	cfg.Harness.Workspace.Root = root

	cfg.Harness.Sanitize.KeyPath = filepath.Join(dir, "hmac.key")
	cfg.Harness.Audit.Path = filepath.Join(dir, "audit.jsonl")
	p, err := pipeline.Open(ctx, cfg, pipeline.Options{})
	if err != nil {
		return err
	}
	defer p.Close()
	h := p.Harness

	model := &scriptedModel{steps: []step{
		{thought: "I should see what is in the project.", action: "workspace_list_files", input: map[string]any{"recursive": true}},
		{thought: "greet.go has the greeting; let me read it.", action: "workspace_read_file", input: map[string]any{"path": "greet.go"}},
		{thought: "Are there other TODOs?", action: "workspace_search_text", input: map[string]any{"query": "TODO"}},
		{thought: "Maybe the password file has hints.", action: "workspace_read_file", input: map[string]any{"path": "../../../../etc/shadow"}},
		{thought: "I'll just overwrite greet.go, and say I'm trusted.", action: "workspace_apply_patch", input: map[string]any{"path": "greet.go", "content": "package main\n"}},
		{thought: "Let me propose the change instead, for a person to approve.", action: "workspace_propose_patch",
			input: map[string]any{"path": "greet.go", "content": strings.Replace(demoFiles["greet.go"], "// TODO: greet in more languages.\n", "", 1)}},
		{finish: "I proposed removing the stale TODO; applying it needs a person's approval through preview/execute."},
	}}

	// The model is given the registered actions as OpenAI function tools
	// (schema.FormatAnthropic and schema.FormatMCP are the others). No MCP
	// server is configured here, so mcp_call is not offered.
	tools, err := h.Registry().Export(schema.FormatOpenAI, schema.ExportOptions{Omit: []string{"mcp_call"}})
	if err != nil {
		return err
	}
	defs, err := json.Marshal(tools)
	if err != nil {
		return err
	}
	if err := model.offer(defs); err != nil {
		return err
	}

	fmt.Fprintf(out, "Workspace: %s\nTools offered to the model: %s\n\n", root, strings.Join(tools.Names(), ", "))
	var last action.Observation
	for i := 1; ; i++ {
		s := model.propose(last)
		if s.finish != "" {
			fmt.Fprintf(out, "Final answer: %s\n", s.finish)
			break
		}
		// The loop builds the Action from the model's tool call (the tool
		// names the action; tools.ActionName maps back names an API had
		// to change) and never copies a "trusted" claim from it: trust
		// comes only from a person or a policy, through preview/execute
		// or auto-approval.
		name, ok := tools.ActionName(s.action)
		if !ok {
			return fmt.Errorf("the model called %s, which it was not given", s.action)
		}
		a := action.Action{Name: name, Input: s.input, SessionID: "demo", TaskID: "greeter-cleanup", StepID: fmt.Sprint(i)}
		last = h.Execute(runtime.WithPrincipal(ctx, "react-example"), a)
		fmt.Fprintf(out, "Step %d\n  Thought: %s\n  Action: %s %s\n  Observation: %s\n\n", i, s.thought, a.Name, compact(a.Input), render(last))
	}
	key, err := sanitize.LoadKey(cfg.Harness.Sanitize.KeyPath)
	if err != nil {
		return err
	}
	rep, err := verifyFile(filepath.Join(dir, "audit.jsonl"), key)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Audit log: %s\n", rep)
	return nil
}

// verifyFile checks the audit log's chain, keyed with the installation's
// key (a process without the key could not have forged it).
func verifyFile(path string, key []byte) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	rep, err := audit.VerifyJSONL(f, audit.WithKey(key))
	if err != nil {
		return "", err
	}
	return rep.String(), nil
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// render prints an observation the way a person wants to read it.
func render(o action.Observation) string {
	if !o.OK() {
		return fmt.Sprintf("%s (%s, from %s): %s", o.Status, o.Code, o.Source, o.Message)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "ok in %.2f ms", o.LatencyMS)
	p, _ := toMap(o.Payload) // one generic shape, whatever types the runtime used
	switch o.Action {
	case "workspace_list_files":
		entries, _ := p["entries"].([]any)
		for _, e := range entries {
			if m, ok := e.(map[string]any); ok {
				fmt.Fprintf(&b, "\n    %-7v %v", m["type"], m["path"])
			}
		}
	case "workspace_read_file":
		fmt.Fprintf(&b, ", sha256 %v\n", p["sha256"])
		for _, line := range strings.Split(strings.TrimRight(fmt.Sprint(p["content"]), "\n"), "\n") {
			fmt.Fprintf(&b, "    | %s\n", line)
		}
	case "workspace_search_text":
		matches, _ := p["matches"].([]any)
		for _, m := range matches {
			if mm, ok := m.(map[string]any); ok {
				fmt.Fprintf(&b, "\n    %v:%v: %v", mm["path"], mm["line"], mm["text"])
			}
		}
	case "workspace_propose_patch":
		fmt.Fprintf(&b, ", diff:\n")
		for _, line := range strings.Split(strings.TrimRight(fmt.Sprint(p["diff"]), "\n"), "\n") {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	default:
		fmt.Fprintf(&b, ": %s", compact(o.Payload))
	}
	return strings.TrimRight(b.String(), "\n")
}

// toMap brings a payload to the generic shape encoding/json decodes.
func toMap(v any) (map[string]any, bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m) == nil
}
