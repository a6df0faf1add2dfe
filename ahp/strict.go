package ahp

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// decodeStrict decodes data into v (a pointer) and then refuses what
// encoding/json lets through but the protocol does not: a required field
// that is missing or null. A field is required unless its json tag says
// omitempty or omitzero, or its ahp tag says optional (a field the wire
// may leave out but that is always written). Types with their own
// UnmarshalJSON check themselves. Unknown fields are ignored, as peers
// expect.
func decodeStrict(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return err
	}
	return checkRequired(reflect.TypeOf(v), data)
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

func checkRequired(t reflect.Type, raw json.RawMessage) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(raw) || reflect.PointerTo(t).Implements(unmarshalerType) || t == rawMessageType {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return err
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			optional := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero") ||
				f.Tag.Get("ahp") == "optional"
			fr, ok := fields[name]
			nullable := f.Type == rawMessageType || f.Type.Kind() == reflect.Interface
			if !ok || (isNull(fr) && !nullable) {
				if optional {
					continue
				}
				return missingField(name)
			}
			if err := checkRequired(f.Type, fr); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
	case reflect.Slice, reflect.Array:
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return err
		}
		for i, e := range elems {
			if err := checkRequired(t.Elem(), e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	}
	return nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// unmarshalEnum decodes a JSON string into dst when it is one of valid.
func unmarshalEnum[T ~string](data []byte, dst *T, what string, valid ...T) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	for _, v := range valid {
		if string(v) == s {
			*dst = v
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q", what, s)
}

// openEnum is an enumeration that also takes a free-form value, written
// as the bare name ("step_by_step") or as an object holding the free-form
// value under otherKey ({"custom": "my-plan"}).
type openEnum struct {
	Name  string // one of the known names, or otherKey
	Value string // the free-form value when Name is otherKey
}

func (o openEnum) marshal(otherKey string) ([]byte, error) {
	if o.Name == otherKey {
		return json.Marshal(map[string]string{otherKey: o.Value})
	}
	return json.Marshal(o.Name)
}

func (o *openEnum) unmarshal(data []byte, what, otherKey string, known ...string) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		for _, k := range known {
			if k == s {
				*o = openEnum{Name: s}
				return nil
			}
		}
		return fmt.Errorf("unknown %s %q", what, s)
	}
	var m map[string]string
	if err := json.Unmarshal(data, &m); err != nil || len(m) != 1 {
		return fmt.Errorf("%s: want a name or {%q: value}", what, otherKey)
	}
	v, ok := m[otherKey]
	if !ok {
		return fmt.Errorf("%s: want a name or {%q: value}", what, otherKey)
	}
	*o = openEnum{Name: otherKey, Value: v}
	return nil
}
