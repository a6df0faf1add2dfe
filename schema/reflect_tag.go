package schema

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// tagKeys are the jsonschema tag keys FromType understands, with where
// each applies on a slice: to the array itself or to its items.
var tagKeys = map[string]struct{ items bool }{
	"description": {}, "title": {}, "default": {},
	"format": {true}, "pattern": {true}, "enum": {true}, "minLength": {true}, "maxLength": {true},
	"minimum": {}, "maximum": {}, "exclusiveMinimum": {}, "exclusiveMaximum": {},
	"minItems": {}, "maxItems": {},
}

// applyTag adds what a `jsonschema` tag says to ps, the schema of a field
// of type t, and reports whether the tag makes the field required.
func applyTag(ps map[string]any, t reflect.Type, tag string) (required bool, err error) {
	if tag == "" {
		return false, nil
	}
	for _, item := range splitTag(tag) {
		key, val, hasVal := strings.Cut(item, "=")
		key = strings.TrimSpace(key)
		if !hasVal {
			switch key {
			case "required":
				required = true
			case "":
			default:
				return false, fmt.Errorf("%q is not a flag this package knows (required); keys take a value: %s", key, knownKeys())
			}
			continue
		}
		where, ok := tagKeys[key]
		if !ok {
			return false, fmt.Errorf("unknown key %q (known: %s)", key, knownKeys())
		}
		target, vt := ps, t
		for vt.Kind() == reflect.Pointer {
			vt = vt.Elem()
		}
		if where.items && (vt.Kind() == reflect.Slice || vt.Kind() == reflect.Array) && vt.Elem().Kind() != reflect.Uint8 {
			items, _ := ps["items"].(map[string]any)
			if items == nil {
				return false, fmt.Errorf("%s: the slice has no item schema", key)
			}
			target, vt = items, vt.Elem()
		}
		switch key {
		case "description", "title", "format", "pattern":
			target[key] = val
		case "minLength", "maxLength", "minItems", "maxItems":
			n, err := strconv.ParseUint(val, 10, 31)
			if err != nil {
				return false, fmt.Errorf("%s=%s: want a whole number", key, val)
			}
			target[key] = n
		case "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum":
			n, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return false, fmt.Errorf("%s=%s: want a number", key, val)
			}
			target[key] = n
		case "enum", "default":
			v, err := tagValue(vt, val)
			if err != nil {
				return false, fmt.Errorf("%s=%s: %w", key, val, err)
			}
			if key == "default" {
				target[key] = v
			} else {
				list, _ := target["enum"].([]any)
				target["enum"] = append(list, v)
			}
		}
	}
	return required, nil
}

// tagValue reads s as a value of the JSON type of t.
func tagValue(t reflect.Type, s string) (any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String, reflect.Interface:
		return s, nil
	case reflect.Bool:
		return strconv.ParseBool(s)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.ParseInt(s, 10, 64)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.ParseUint(s, 10, 64)
	case reflect.Float32, reflect.Float64:
		return strconv.ParseFloat(s, 64)
	}
	return nil, fmt.Errorf("not available on a %s", t.Kind())
}

// splitTag splits on commas not written `\,`.
func splitTag(tag string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '\\' && i+1 < len(tag) && tag[i+1] == ',':
			cur.WriteByte(',')
			i++
		case tag[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(tag[i])
		}
	}
	return append(out, cur.String())
}

func knownKeys() string {
	keys := make([]string, 0, len(tagKeys))
	for k := range tagKeys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}
