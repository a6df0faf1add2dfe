package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// FromType derives a JSON Schema for values of t, a struct type (or a
// pointer to one), as encoding/json would decode them.
//
// Field names follow `json` tags. A field is required unless its tag says
// omitempty or its type is a pointer. Supported kinds: bool, integers,
// floats, string, slices and arrays, maps with string keys, structs, and
// interfaces (any JSON value). Channels, functions and complex numbers are
// refused.
//
// A `jsonschema` tag describes and constrains the property, in the
// convention of github.com/invopop/jsonschema: comma-separated items,
// `key=value` or a bare flag, and a comma inside a value escaped with a
// backslash (written `\\,` in Go source, since the tag's value is a
// quoted string):
//
//	Path string `json:"path" jsonschema:"description=file to read\\, relative to the root,minLength=1"`
//
// Keys: description, title, format, pattern, enum (repeated, one value
// each), default, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
// minLength, maxLength, minItems, maxItems, and the flag required (the
// property is required even with omitempty). On a slice, enum, pattern,
// format, minLength and maxLength constrain its items. Values are read as
// the property's type (enum=3 on an int is the number 3). `jsonschema:"-"`
// leaves the field out of the schema (an input that sets it is then
// refused). Any other key is an error, so that a constraint the author
// wrote is never silently dropped. The older `desc:"…"` tag still gives a
// description when the jsonschema tag gives none.
func FromType(t reflect.Type) (json.RawMessage, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("schema from %s: an action's input must be a struct", t)
	}
	m, err := typeSchema(t, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

func typeSchema(t reflect.Type, depth int) (map[string]any, error) {
	if depth > 32 {
		return nil, fmt.Errorf("schema from %s: type nests too deep (recursive?)", t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeSchema(t.Elem(), depth+1)
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s := map[string]any{"type": "integer"}
		if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
			s["minimum"] = 0
		}
		return s, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
		}
		items, err := typeSchema(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("schema from %s: map keys must be strings", t)
		}
		vals, err := typeSchema(t.Elem(), depth+1)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" && opts == "" || f.Tag.Get("jsonschema") == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			ps, err := typeSchema(f.Type, depth+1)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", f.Name, err)
			}
			tag, ok := f.Tag.Lookup("jsonschema")
			if !ok && strings.Contains(string(f.Tag), `jsonschema:"`) {
				// reflect gives nothing for a value it cannot unquote
				// (`\,` instead of `\\,`): refuse rather than lose it.
				return nil, fmt.Errorf("field %s: jsonschema tag is not a valid quoted string (escape a comma as \\\\, in Go source)", f.Name)
			}
			forced, err := applyTag(ps, f.Type, tag)
			if err != nil {
				return nil, fmt.Errorf("field %s: jsonschema tag: %w", f.Name, err)
			}
			if d := f.Tag.Get("desc"); d != "" && ps["description"] == nil {
				ps["description"] = d
			}
			props[name] = ps
			if forced || !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
				required = append(required, name)
			}
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s, nil
	}
	return nil, fmt.Errorf("schema from %s: kind %s has no JSON form", t, t.Kind())
}
