package schema

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// exportFixture is a registry whose export the golden files pin: a
// top-level oneOf (refused by OpenAI and Anthropic), an MCP server's tool
// (dots in its name), a name too long for the model APIs, and each risk.
func exportFixture(t *testing.T) *Registry {
	t.Helper()
	r := NewRegistry()
	for _, s := range []ActionSchema{
		{Name: "edit", Description: "Change a file.", Runtime: RuntimeBuiltin, Risk: RiskWrite, Input: json.RawMessage(`{
  "type": "object",
  "properties": {"path": {"type": "string", "description": "the file"}, "content": {"type": "string"}, "patch": {"type": "string"}},
  "oneOf": [{"required": ["path", "content"], "not": {"required": ["patch"]}}, {"required": ["patch"]}]
}`)},
		{Name: "mcp.docs.search", Description: "[MCP server docs] Search the docs.", Runtime: RuntimeMCP, Risk: RiskNetwork,
			Input: json.RawMessage(`{"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}`)},
		{Name: "read", Description: "Read a file.", Runtime: RuntimeBuiltin, Risk: RiskRead,
			Input: json.RawMessage(`{"type": "object", "required": ["path"], "properties": {"path": {"type": "string", "description": "the file"}}}`)},
		{Name: "run." + strings.Repeat("x", 70), Description: "Run something.", Runtime: RuntimeBuiltin, Risk: RiskExec,
			Input: json.RawMessage(`{"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}, "not": {"required": ["m"]}}`)},
	} {
		if err := r.Register(s); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// TestExportGolden pins each format's JSON (go test ./schema -run
// TestExportGolden -update rewrites it).
func TestExportGolden(t *testing.T) {
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			tools, err := exportFixture(t).Export(f, ExportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(tools, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "export", string(f)+".golden.json")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./schema -run TestExportGolden -update)", err)
			}
			if string(got) != string(want) {
				t.Fatalf("export differs from %s:\n got: %s\nwant: %s", golden, got, want)
			}
		})
	}
}

// toolShape reads one definition in the format's own field names, refusing
// fields the format does not have.
func toolShape(t *testing.T, f Format, def json.RawMessage) (name, desc string, input map[string]any) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(def, &m); err != nil {
		t.Fatal(err)
	}
	allowed := map[Format][]string{
		FormatMCP:       {"name", "description", "inputSchema", "annotations"},
		FormatOpenAI:    {"type", "function"},
		FormatAnthropic: {"name", "description", "input_schema"},
	}[f]
	for k := range m {
		if !contains(allowed, k) {
			t.Fatalf("%s definition has field %q: %s", f, k, def)
		}
	}
	schemaKey := map[Format]string{FormatMCP: "inputSchema", FormatAnthropic: "input_schema"}[f]
	if f == FormatOpenAI {
		var typ string
		json.Unmarshal(m["type"], &typ)
		if typ != "function" {
			t.Fatalf(`openai tool type %q, want "function"`, typ)
		}
		var fn map[string]json.RawMessage
		if err := json.Unmarshal(m["function"], &fn); err != nil {
			t.Fatal(err)
		}
		for k := range fn {
			if !contains([]string{"name", "description", "parameters"}, k) {
				t.Fatalf("openai function has field %q", k)
			}
		}
		m, schemaKey = fn, "parameters"
	}
	json.Unmarshal(m["name"], &name)
	json.Unmarshal(m["description"], &desc)
	if err := json.Unmarshal(m[schemaKey], &input); err != nil || input == nil {
		t.Fatalf("%s: no %s object in %s", f, schemaKey, def)
	}
	return name, desc, input
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestExportEveryCatalogAction checks, per format, that every built-in
// action is offered once, in the format's shape, with a schema the model
// APIs take (an object, nothing they refuse at the top level) and a name
// that maps back to the action.
func TestExportEveryCatalogAction(t *testing.T) {
	r := Catalog()
	for _, f := range Formats() {
		t.Run(string(f), func(t *testing.T) {
			tools, err := r.Export(f, ExportOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var arr []json.RawMessage
			raw, _ := json.Marshal(tools)
			if err := json.Unmarshal(raw, &arr); err != nil {
				t.Fatalf("export is not a JSON array: %s", raw)
			}
			seen := map[string]bool{}
			for i, def := range arr {
				name, desc, input := toolShape(t, f, def)
				action, ok := tools.ActionName(name)
				if !ok || action != tools.List[i].Action {
					t.Fatalf("tool %s maps to %q, %v", name, action, ok)
				}
				sc, _ := r.Lookup(action)
				if desc == "" || !strings.HasPrefix(desc, sc.Description) {
					t.Errorf("%s: description %q does not start with the registry's", name, desc)
				}
				if input["type"] != "object" {
					t.Errorf("%s: input type %v", name, input["type"])
				}
				for _, k := range topLevelRefused {
					if _, bad := input[k]; bad {
						t.Errorf("%s: %s at the top level of its input schema", name, k)
					}
				}
				var full map[string]any
				json.Unmarshal(sc.Input, &full)
				if !jsonEqual(input["properties"], full["properties"]) || !jsonEqual(input["required"], full["required"]) {
					t.Errorf("%s: properties or required differ from the registry's", name)
				}
				seen[action] = true
			}
			for _, sc := range r.List() {
				if !seen[sc.Name] {
					t.Errorf("%s not exported", sc.Name)
				}
			}
			if len(arr) != len(r.List()) {
				t.Errorf("%d tools for %d actions", len(arr), len(r.List()))
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// TestExportSaysWhatItTookOut checks that the patch actions' oneOf, which
// the schema no longer carries, is said in the description, and that the
// registry still enforces it.
func TestExportSaysWhatItTookOut(t *testing.T) {
	r := Catalog()
	tools, err := r.Export(FormatAnthropic, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"workspace_apply_patch", "workspace_propose_patch"} {
		_, desc, _ := toolShape(t, FormatAnthropic, defOf(t, tools, name))
		if !strings.Contains(desc, "Exactly one of these field sets must be given: path+content | patch.") {
			t.Errorf("%s: description %q", name, desc)
		}
		sc, _ := r.Lookup(name)
		if err := sc.Validate(map[string]any{"path": "a", "content": "x", "patch": "y"}); err == nil {
			t.Errorf("%s: the registry no longer refuses content and patch together", name)
		}
	}
	_, desc, _ := toolShape(t, FormatAnthropic, defOf(t, tools, "workspace_read_file"))
	sc, _ := r.Lookup("workspace_read_file")
	if desc != sc.Description {
		t.Errorf("an action without refused keywords got a note: %q", desc)
	}
}

func defOf(t *testing.T, tools *Tools, action string) json.RawMessage {
	t.Helper()
	for _, tl := range tools.List {
		if tl.Action == action {
			return tl.Definition
		}
	}
	t.Fatalf("%s not exported", action)
	return nil
}

func TestExportNames(t *testing.T) {
	r := exportFixture(t)
	cases := []struct {
		format Format
		action string
		tool   string
	}{
		{FormatMCP, "mcp.docs.search", "mcp.docs.search"},
		{FormatOpenAI, "mcp.docs.search", "mcp__docs__search"},
		{FormatAnthropic, "mcp.docs.search", "mcp__docs__search"},
		{FormatOpenAI, "read", "read"},
	}
	for _, tc := range cases {
		tools, err := r.Export(tc.format, ExportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := tools.ActionName(tc.tool); !ok || got != tc.action {
			t.Errorf("%s: tool %s maps to %q, %v; want %s", tc.format, tc.tool, got, ok, tc.action)
		}
	}
	for _, f := range []Format{FormatOpenAI, FormatAnthropic} {
		tools, _ := r.Export(f, ExportOptions{})
		for _, n := range tools.Names() {
			if len(n) > 64 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
				t.Errorf("%s: tool name %q breaks ^[a-zA-Z0-9_-]{1,64}$", f, n)
			}
		}
		if _, ok := tools.ActionName("mcp.docs.search"); ok {
			t.Errorf("%s: the action's own dotted name is not a tool name", f)
		}
	}
}

func TestExportRefusesTwoActionsForOneToolName(t *testing.T) {
	r := NewRegistry()
	for _, n := range []string{"a.b", "a__b"} {
		if err := r.Register(ActionSchema{Name: n, Runtime: RuntimeBuiltin}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.Export(FormatMCP, ExportOptions{}); err != nil {
		t.Fatalf("MCP keeps the names apart: %v", err)
	}
	_, err := r.Export(FormatOpenAI, ExportOptions{})
	if err == nil || !strings.Contains(err.Error(), "a.b") || !strings.Contains(err.Error(), "a__b") {
		t.Fatalf("err %v, want both actions named", err)
	}
}

func TestExportOmit(t *testing.T) {
	tools, err := Catalog().Export(FormatOpenAI, ExportOptions{Omit: []string{"mcp_call", "workspace_run_shell", "not_registered"}})
	if err != nil {
		t.Fatal(err)
	}
	names := tools.Names()
	sort.Strings(names)
	want := []string{"workspace_apply_patch", "workspace_list_files", "workspace_propose_patch", "workspace_read_file", "workspace_search_text"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("names %v, want %v", names, want)
	}
}

func TestExportUnknownFormat(t *testing.T) {
	if _, err := Catalog().Export("gemini", ExportOptions{}); err == nil || !strings.Contains(err.Error(), "anthropic") {
		t.Fatalf("err %v", err)
	}
	if _, err := ParseFormat("OpenAI"); err == nil {
		t.Fatal("format names are exact")
	}
}
