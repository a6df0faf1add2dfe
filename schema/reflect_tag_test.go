package schema

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

type tagged struct {
	Path    string   `json:"path" jsonschema:"description=file to read\\, relative to the root,minLength=1,maxLength=4096"`
	Old     string   `json:"old,omitempty" desc:"the desc tag"`
	Both    string   `json:"both,omitempty" desc:"loses" jsonschema:"description=wins"`
	Mode    string   `json:"mode,omitempty" jsonschema:"title=Mode,enum=fast,enum=safe,default=safe"`
	Level   int      `json:"level,omitempty" jsonschema:"required,minimum=1,maximum=9,enum=1,enum=5"`
	Ratio   float64  `json:"ratio,omitempty" jsonschema:"exclusiveMinimum=0,exclusiveMaximum=1"`
	Tags    []string `json:"tags,omitempty" jsonschema:"description=labels,minItems=1,maxItems=3,pattern=^[a-z]+$,maxLength=8"`
	Hidden  string   `json:"hidden,omitempty" jsonschema:"-"`
	Created string   `json:"created,omitempty" jsonschema:"format=date-time"`
}

func props(t *testing.T, v reflect.Type) (map[string]map[string]any, []any) {
	t.Helper()
	raw, err := FromType(v)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []any                     `json:"required"`
	}
	must(t, json.Unmarshal(raw, &got))
	return got.Properties, got.Required
}

func TestFromTypeJSONSchemaTag(t *testing.T) {
	p, req := props(t, reflect.TypeFor[tagged]())
	cases := []struct {
		name, prop, key string
		want            any
	}{
		{"description with an escaped comma", "path", "description", "file to read, relative to the root"},
		{"minLength", "path", "minLength", 1.0},
		{"maxLength", "path", "maxLength", 4096.0},
		{"desc tag still works", "old", "description", "the desc tag"},
		{"jsonschema description over desc", "both", "description", "wins"},
		{"title", "mode", "title", "Mode"},
		{"string enum", "mode", "enum", []any{"fast", "safe"}},
		{"default", "mode", "default", "safe"},
		{"integer enum is numbers", "level", "enum", []any{1.0, 5.0}},
		{"minimum", "level", "minimum", 1.0},
		{"maximum", "level", "maximum", 9.0},
		{"exclusiveMinimum", "ratio", "exclusiveMinimum", 0.0},
		{"exclusiveMaximum", "ratio", "exclusiveMaximum", 1.0},
		{"slice description on the array", "tags", "description", "labels"},
		{"minItems on the array", "tags", "minItems", 1.0},
		{"maxItems on the array", "tags", "maxItems", 3.0},
		{"format", "created", "format", "date-time"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := p[tc.prop][tc.key]; !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s.%s = %#v, want %#v", tc.prop, tc.key, got, tc.want)
			}
		})
	}
	items := p["tags"]["items"].(map[string]any)
	if items["pattern"] != "^[a-z]+$" || items["maxLength"] != 8.0 || p["tags"]["pattern"] != nil {
		t.Errorf("pattern and maxLength of a slice belong to its items: %v", p["tags"])
	}
	if _, ok := p["hidden"]; ok {
		t.Error(`jsonschema:"-" field is in the schema`)
	}
	if !reflect.DeepEqual(req, []any{"path", "level"}) {
		t.Errorf("required %v, want path and level (the required flag beats omitempty)", req)
	}
}

// TestFromTypeTagConstraintsAreEnforced registers the derived schema and
// checks that what the tag says is what validation does.
func TestFromTypeTagConstraintsAreEnforced(t *testing.T) {
	raw, err := FromType(reflect.TypeFor[tagged]())
	must(t, err)
	r := NewRegistry()
	must(t, r.Register(ActionSchema{Name: "tagged", Runtime: RuntimeBuiltin, Input: raw}))
	s, _ := r.Lookup("tagged")
	ok := map[string]any{"path": "a", "level": 5}
	if err := s.Validate(ok); err != nil {
		t.Fatalf("valid input refused: %v", err)
	}
	for name, in := range map[string]map[string]any{
		"empty path":        {"path": "", "level": 5},
		"level not in enum": {"path": "a", "level": 3},
		"level missing":     {"path": "a"},
		"mode not in enum":  {"path": "a", "level": 1, "mode": "slow"},
		"ratio at bound":    {"path": "a", "level": 1, "ratio": 1},
		"tag pattern":       {"path": "a", "level": 1, "tags": []any{"A"}},
		"too many tags":     {"path": "a", "level": 1, "tags": []any{"a", "b", "c", "d"}},
		"hidden field":      {"path": "a", "level": 1, "hidden": "x"},
	} {
		if err := s.Validate(in); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestFromTypeTagErrors(t *testing.T) {
	cases := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"unknown key", reflect.TypeFor[struct {
			A string `json:"a" jsonschema:"descripton=x"`
		}](), `unknown key "descripton"`},
		{"unknown flag", reflect.TypeFor[struct {
			A string `json:"a" jsonschema:"nullable"`
		}](), `"nullable"`},
		{"bad number", reflect.TypeFor[struct {
			A int `json:"a" jsonschema:"minimum=low"`
		}](), "minimum=low"},
		{"enum of the wrong type", reflect.TypeFor[struct {
			A int `json:"a" jsonschema:"enum=one"`
		}](), "enum=one"},
		// Built at run time: go vet rightly refuses this tag in source.
		{"comma not escaped for Go", reflect.StructOf([]reflect.StructField{{
			Name: "A", Type: reflect.TypeFor[string](), Tag: `json:"a" jsonschema:"description=x\, y"`,
		}}), "not a valid quoted string"},
		{"negative length", reflect.TypeFor[struct {
			A string `json:"a" jsonschema:"maxLength=-1"`
		}](), "maxLength=-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromType(tc.typ)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "field A") {
				t.Fatalf("err %v, want it to name field A and %q", err, tc.want)
			}
		})
	}
}
