package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// differentialSchemas are inside the fast subset; each is checked by both
// validators.
var differentialSchemas = []string{
	`{"type":"object","properties":{"path":{"type":"string","minLength":1,"maxLength":8},"n":{"type":"integer","minimum":0,"maximum":10}},"required":["path"],"additionalProperties":false}`,
	`{"type":"object","properties":{"tags":{"type":"array","items":{"type":"string"},"minItems":1,"maxItems":3},"x":{"type":["number","null"],"exclusiveMinimum":-1.5,"exclusiveMaximum":2}}}`,
	`{"type":"object","additionalProperties":{"type":"boolean"}}`,
	`{"type":"object","properties":{"o":{"type":"object","properties":{"b":{"type":"boolean"}},"required":["b"],"additionalProperties":false}}}`,
	`{"type":"object","properties":{"any":{},"s":{"type":"string","description":"x","title":"y"}}}`,
	`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"patch":{"type":"string","minLength":1},"sha":{"type":"string","pattern":"^[0-9a-fA-F]{4}$"}},"oneOf":[{"required":["path","content"],"not":{"required":["patch"]}},{"required":["patch"],"not":{"required":["content"]}}],"additionalProperties":false}`,
	`{"type":"object","properties":{"v":{"anyOf":[{"type":"string","pattern":"^a"},{"type":"integer","minimum":5}]},"w":{"allOf":[{"type":"number"},{"not":{"type":"integer"}}]}}}`,
}

func registerAll(t testing.TB) []*ActionSchema {
	r := NewRegistry()
	var out []*ActionSchema
	for i, s := range differentialSchemas {
		name := fmt.Sprintf("s%d", i)
		if err := r.Register(ActionSchema{Name: name, Runtime: "builtin", Input: json.RawMessage(s)}); err != nil {
			t.Fatal(err)
		}
		sc, _ := r.Lookup(name)
		if sc.fast == nil {
			t.Fatalf("schema %d is not in the fast subset", i)
		}
		out = append(out, sc)
	}
	return out
}

func TestFastSubsetRecognition(t *testing.T) {
	outside := []string{
		`{"type":"object","properties":{"a":{"enum":[1,2]}}}`,
		`{"type":"object","oneOf":[{"required":["a"]},{"$ref":"#/$defs/b"}],"$defs":{"b":{}}}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`,
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{}}}`,
		`{"type":"object","patternProperties":{"^a":{}}}`,
		`{"type":"object","properties":{"u":{"type":"string","format":"uri"}}}`,
	}
	for _, s := range outside {
		if compileFast(json.RawMessage(s)) != nil {
			t.Errorf("fast validator claimed %s", s)
		}
	}
	for _, s := range Catalog().List() {
		if s.fast == nil {
			t.Errorf("%s should take the fast path", s.Name)
		}
	}
}

func TestFastAgreesOnCases(t *testing.T) {
	schemas := registerAll(t)
	inputs := []string{
		`{"path":"a"}`, `{"path":""}`, `{"path":"123456789"}`, `{"path":"ééééé"}`, `{"path":"a","n":3}`,
		`{"path":"a","n":3.5}`, `{"path":"a","n":-1}`, `{"path":"a","n":11}`, `{"path":"a","n":1.0}`,
		`{"path":"a","z":1}`, `{}`, `{"tags":[]}`, `{"tags":["a","b","c","d"]}`, `{"tags":["a",1]}`,
		`{"x":null}`, `{"x":2}`, `{"x":-1.5}`, `{"x":1.99}`, `{"k":true,"j":false}`, `{"k":"no"}`,
		`{"o":{}}`, `{"o":{"b":true}}`, `{"o":{"b":true,"c":1}}`, `{"any":[1,{"a":null}],"s":"text"}`, `{"s":5}`,
		`{"path":"a","content":"x"}`, `{"patch":"p"}`, `{"path":"a","patch":"p"}`, `{"path":"a","content":"x","patch":"p"}`,
		`{"content":"x","patch":"p"}`, `{"path":"a"}`, `{"patch":""}`, `{"patch":"p","sha":"abcd"}`, `{"patch":"p","sha":"abcde"}`,
		`{"v":"abc"}`, `{"v":"xbc"}`, `{"v":7}`, `{"v":3}`, `{"v":5.5}`, `{"w":1.5}`, `{"w":2}`, `{"w":"x"}`,
	}
	for _, in := range inputs {
		for i, sc := range schemas {
			compare(t, sc, i, []byte(in))
		}
	}
}

// compare decodes data both ways and checks that the fast verdict, when it
// has one, matches the general validator's.
func compare(t *testing.T, sc *ActionSchema, i int, data []byte) {
	t.Helper()
	for _, useNumber := range []bool{false, true} {
		dec := json.NewDecoder(bytes.NewReader(data))
		if useNumber {
			dec.UseNumber()
		}
		var v map[string]any
		if dec.Decode(&v) != nil || v == nil {
			return
		}
		fast := sc.fast.check(v)
		if fast == cannotTell {
			continue
		}
		compiled, err := sc.compiled.get()
		if err != nil {
			t.Fatal(err)
		}
		libErr := compiled.Validate(v)
		if (fast == valid) != (libErr == nil) {
			t.Fatalf("schema %d, input %s (useNumber=%v): fast says %v, library says %v", i, data, useNumber, fast == valid, libErr)
		}
	}
}

// FuzzFastMatchesLibrary holds the fast validator to the general one: on
// any input where it gives a verdict, the verdicts agree.
func FuzzFastMatchesLibrary(f *testing.F) {
	for _, s := range []string{`{"path":"a","n":3}`, `{"tags":["x"],"x":0.5}`, `{"o":{"b":false}}`, `{"k":true}`, `{"path":"\u00e9","n":1e1}`,
		`{"patch":"p","sha":"abcd"}`, `{"path":"a","content":"x"}`, `{"v":"a","w":0.5}`} {
		f.Add([]byte(s))
	}
	schemas := registerAll(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		for i, sc := range schemas {
			compare(t, sc, i, data)
		}
	})
}
