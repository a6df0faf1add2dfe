package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
)

func TestCatalogHasSpecActions(t *testing.T) {
	r := Catalog()
	want := map[string]struct {
		runtime string
		risk    Risk
	}{
		"workspace_list_files":    {RuntimeWorkspace, RiskRead},
		"workspace_read_file":     {RuntimeWorkspace, RiskRead},
		"workspace_search_text":   {RuntimeWorkspace, RiskRead},
		"workspace_propose_patch": {RuntimeWorkspace, RiskRead},
		"workspace_apply_patch":   {RuntimeWorkspace, RiskWrite},
		"workspace_run_shell":     {RuntimeWorkspace, RiskExec},
		"mcp_call":                {RuntimeMCP, RiskNetwork},
	}
	for name, w := range want {
		s, ok := r.Lookup(name)
		if !ok {
			t.Errorf("catalog lacks %s", name)
			continue
		}
		if s.Runtime != w.runtime || s.Risk != w.risk || !s.Trusted {
			t.Errorf("%s: runtime %s risk %s trusted %v", name, s.Runtime, s.Risk, s.Trusted)
		}
	}
	if got := len(r.List()); got != len(want) {
		t.Errorf("catalog has %d actions, want %d", got, len(want))
	}
}

func TestValidateCatalogInputs(t *testing.T) {
	r := Catalog()
	cases := []struct {
		name   string
		action string
		input  string
		ok     bool
		field  string // named in the message when refused
	}{
		{"read ok", "workspace_read_file", `{"path":"a.txt"}`, true, ""},
		{"read range", "workspace_read_file", `{"path":"a.txt","offset":2,"limit":5}`, true, ""},
		{"read path wrong type", "workspace_read_file", `{"path":42}`, false, "input.path"},
		{"read missing path", "workspace_read_file", `{}`, false, "path"},
		{"read unknown property", "workspace_read_file", `{"path":"a","mode":"x"}`, false, "mode"},
		{"read negative offset", "workspace_read_file", `{"path":"a","offset":-1}`, false, "input.offset"},
		{"read fractional limit", "workspace_read_file", `{"path":"a","limit":1.5}`, false, "input.limit"},
		{"list empty", "workspace_list_files", `{}`, true, ""},
		{"search empty query", "workspace_search_text", `{"query":""}`, false, "input.query"},
		{"patch content", "workspace_apply_patch", `{"path":"a","content":"x"}`, true, ""},
		{"patch diff", "workspace_apply_patch", `{"patch":"--- a\n+++ b\n"}`, true, ""},
		{"patch both", "workspace_apply_patch", `{"path":"a","content":"x","patch":"p"}`, false, "input"},
		{"patch neither", "workspace_apply_patch", `{"path":"a"}`, false, "input"},
		{"patch bad sha", "workspace_apply_patch", `{"path":"a","content":"x","expected_sha256":"zz"}`, false, "expected_sha256"},
		{"shell ok", "workspace_run_shell", `{"command":"ls -la"}`, true, ""},
		{"mcp ok", "mcp_call", `{"server":"s","tool":"t","arguments":{"q":1}}`, true, ""},
		{"mcp arguments not object", "mcp_call", `{"server":"s","tool":"t","arguments":[1]}`, false, "input.arguments"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := r.Lookup(tc.action)
			var in map[string]any
			if err := json.Unmarshal([]byte(tc.input), &in); err != nil {
				t.Fatal(err)
			}
			err := s.Validate(in)
			if tc.ok {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if action.CodeOf(err) != action.CodeInvalidInput {
				t.Fatalf("code %s", action.CodeOf(err))
			}
			if !strings.Contains(action.MessageOf(err), tc.field) {
				t.Fatalf("message %q does not name %q", action.MessageOf(err), tc.field)
			}
		})
	}
}

func TestRegisterRefusals(t *testing.T) {
	r := NewRegistry()
	good := ActionSchema{Name: "echo", Runtime: RuntimeBuiltin, Input: json.RawMessage(`{"type":"object"}`)}
	if err := r.Register(good); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(good); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate: %v", err)
	}
	bad := map[string]ActionSchema{
		"empty name":     {Runtime: RuntimeBuiltin},
		"bad name":       {Name: "a b", Runtime: RuntimeBuiltin},
		"no runtime":     {Name: "x"},
		"bad risk":       {Name: "x", Runtime: RuntimeBuiltin, Risk: "nuclear"},
		"not an object":  {Name: "x", Runtime: RuntimeBuiltin, Input: json.RawMessage(`{"type":"string"}`)},
		"invalid json":   {Name: "x", Runtime: RuntimeBuiltin, Input: json.RawMessage(`{`)},
		"invalid schema": {Name: "x", Runtime: RuntimeBuiltin, Input: json.RawMessage(`{"type":"object","properties":{"a":{"type":7}}}`)},
	}
	for name, s := range bad {
		if err := r.Register(s); err == nil {
			t.Errorf("%s: registered", name)
		}
	}
}

func TestUnknownPropertiesRefusedUnlessAllowed(t *testing.T) {
	r := NewRegistry()
	must(t, r.Register(ActionSchema{Name: "closed", Runtime: "builtin", Input: json.RawMessage(`{"properties":{"a":{"type":"string"}}}`)}))
	must(t, r.Register(ActionSchema{Name: "open", Runtime: "builtin", Input: json.RawMessage(`{"properties":{"a":{"type":"string"}},"additionalProperties":true}`)}))
	closed, _ := r.Lookup("closed")
	open, _ := r.Lookup("open")
	in := map[string]any{"a": "x", "b": 1}
	if closed.Validate(in) == nil {
		t.Fatal("closed schema accepted an unknown property")
	}
	if err := open.Validate(in); err != nil {
		t.Fatalf("open schema refused: %v", err)
	}
}

func TestValidateGoValues(t *testing.T) {
	r := NewRegistry()
	must(t, r.Register(ActionSchema{Name: "tags", Runtime: "builtin", Input: json.RawMessage(`{"properties":{"tags":{"type":"array","items":{"type":"string"}},"n":{"type":"integer"}}}`)}))
	s, _ := r.Lookup("tags")
	if err := s.Validate(map[string]any{"tags": []string{"a", "b"}, "n": int16(3)}); err != nil {
		t.Fatalf("Go values refused: %v", err)
	}
	if err := s.Validate(map[string]any{"tags": []int{1}}); err == nil {
		t.Fatal("[]int accepted as []string")
	}
}

type sample struct {
	Path    string            `json:"path" desc:"a file"`
	Limit   int               `json:"limit,omitempty"`
	Tags    []string          `json:"tags,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Ratio   *float64          `json:"ratio"`
	Ignored string            `json:"-"`
	private int
}

func TestFromType(t *testing.T) {
	raw, err := FromType(reflect.TypeFor[sample]())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	must(t, json.Unmarshal(raw, &got))
	props := got["properties"].(map[string]any)
	if len(props) != 5 {
		t.Fatalf("properties %v", props)
	}
	if req := got["required"].([]any); len(req) != 1 || req[0] != "path" {
		t.Fatalf("required %v", req)
	}
	if props["path"].(map[string]any)["description"] != "a file" {
		t.Fatal("desc tag lost")
	}
	if _, err := FromType(reflect.TypeFor[int]()); err == nil {
		t.Fatal("non-struct accepted")
	}
	if _, err := FromType(reflect.TypeFor[struct{ C chan int }]()); err == nil {
		t.Fatal("channel field accepted")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Every property of every built-in action's input says what it is: the
// tool definitions a model receives are read by the model.
func TestCatalogDescribesEveryProperty(t *testing.T) {
	for _, s := range Catalog().List() {
		var in struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(s.Input, &in); err != nil {
			t.Fatal(err)
		}
		for name, p := range in.Properties {
			if d, _ := p["description"].(string); d == "" {
				t.Errorf("%s.%s has no description", s.Name, name)
			}
		}
	}
}

// TestCatalogCompiles compiles every built-in input schema, which Catalog
// leaves to first use, and checks that registries share them but not
// their lists.
func TestCatalogCompiles(t *testing.T) {
	a, b := Catalog(), Catalog()
	for _, s := range a.List() {
		if _, err := s.compiled.get(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		other, ok := b.Lookup(s.Name)
		if !ok || other == s || other.compiled != s.compiled {
			t.Errorf("%s: registries should hold their own schema sharing one compiled form", s.Name)
		}
	}
	if err := a.Register(ActionSchema{Name: "extra", Runtime: RuntimeBuiltin}); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Lookup("extra"); ok {
		t.Fatal("a registration in one catalog shows in another")
	}
}

// TestCatalogValidatesBeyondFastSubset checks that an input the fast
// validator refuses or cannot judge is decided by the compiled schema,
// compiled on demand.
func TestCatalogValidatesBeyondFastSubset(t *testing.T) {
	s, ok := Catalog().Lookup("workspace_read_file")
	if !ok {
		t.Fatal("no workspace_read_file")
	}
	err := s.Validate(map[string]any{"path": "a", "limit": 0})
	if action.CodeOf(err) != action.CodeInvalidInput || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("limit 0: %v, want invalid_input naming limit", err)
	}
	if err := s.Validate(map[string]any{"path": "a", "limit": 3}); err != nil {
		t.Fatal(err)
	}
}
