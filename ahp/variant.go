package ahp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// variants describes a tagged union as one Go struct holding the fields of
// every variant: for each variant name, its fields by JSON name, each
// marked "name" (required, always written), "name?" (optional, left out
// when empty) or "name~" (optional, written as null when empty). The
// struct's variant name is its field tagged kindTag.
type variants map[string]string

type variantField struct {
	name           string
	required, null bool
}

func (vs variants) fields(kind string) ([]variantField, bool) {
	spec, ok := vs[kind]
	if !ok {
		return nil, false
	}
	var out []variantField
	for _, f := range strings.Fields(spec) {
		switch {
		case strings.HasSuffix(f, "?"):
			out = append(out, variantField{name: strings.TrimSuffix(f, "?")})
		case strings.HasSuffix(f, "~"):
			out = append(out, variantField{name: strings.TrimSuffix(f, "~"), null: true})
		default:
			out = append(out, variantField{name: f, required: true})
		}
	}
	return out, true
}

// fieldByJSON returns the field of struct value sv whose json name is name.
func fieldByJSON(sv reflect.Value, name string) reflect.Value {
	t := sv.Type()
	for i := range t.NumField() {
		n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if n == name {
			return sv.Field(i)
		}
	}
	panic("ahp: no field " + name + " in " + t.String())
}

// marshalVariant writes v (a struct) as the variant its kindTag field names:
// internally tagged ({"decision": kind, fields…}) when external is false,
// externally tagged ({kind: {fields…}}) when true. A variant without
// fields, externally tagged, is written as the bare name.
func marshalVariant(v any, kindTag string, vs variants, external bool) ([]byte, error) {
	sv := reflect.ValueOf(v)
	kind := fieldByJSON(sv, kindTag).String()
	fields, ok := vs.fields(kind)
	if !ok {
		return nil, fmt.Errorf("unknown %s %q", kindTag, kind)
	}
	if external && len(fields) == 0 {
		return json.Marshal(kind)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if !external {
		fmt.Fprintf(&b, "%q:%q", kindTag, kind)
	}
	first := external
	for _, f := range fields {
		fv := fieldByJSON(sv, f.name)
		if !f.required && fv.IsZero() && !f.null {
			continue
		}
		val, err := json.Marshal(fv.Interface())
		if err != nil {
			return nil, err
		}
		if f.null && fv.IsZero() {
			val = []byte("null")
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:", f.name)
		b.Write(val)
	}
	b.WriteByte('}')
	if external {
		return json.Marshal(map[string]json.RawMessage{kind: b.Bytes()})
	}
	return b.Bytes(), nil
}

// unmarshalVariant reads what marshalVariant writes into v (a pointer to
// struct), refusing an unknown variant or a required field that is missing
// or null; fields of other variants are ignored.
func unmarshalVariant(data []byte, v any, kindTag string, vs variants, external bool) error {
	sv := reflect.ValueOf(v).Elem()
	var kind string
	var body map[string]json.RawMessage
	if external {
		if err := json.Unmarshal(data, &kind); err != nil {
			var outer map[string]json.RawMessage
			if err := json.Unmarshal(data, &outer); err != nil || len(outer) != 1 {
				return fmt.Errorf("%s: want a variant name or {name: fields}", kindTag)
			}
			for k, inner := range outer {
				kind = k
				if err := json.Unmarshal(inner, &body); err != nil {
					return fmt.Errorf("%s %q: %w", kindTag, k, err)
				}
			}
		}
	} else {
		if err := json.Unmarshal(data, &body); err != nil {
			return err
		}
		raw, ok := body[kindTag]
		if !ok || isNull(raw) {
			return missingField(kindTag)
		}
		if err := json.Unmarshal(raw, &kind); err != nil {
			return fmt.Errorf("%s: %w", kindTag, err)
		}
	}
	fields, ok := vs.fields(kind)
	if !ok {
		return fmt.Errorf("unknown %s %q", kindTag, kind)
	}
	sv.Set(reflect.Zero(sv.Type()))
	fieldByJSON(sv, kindTag).SetString(kind)
	for _, f := range fields {
		fv := fieldByJSON(sv, f.name)
		raw, ok := body[f.name]
		if !ok || (isNull(raw) && fv.Type() != rawMessageType) {
			if f.required {
				return missingField(f.name)
			}
			continue
		}
		if err := json.Unmarshal(raw, fv.Addr().Interface()); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := checkRequired(fv.Type(), raw); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
	}
	return nil
}
