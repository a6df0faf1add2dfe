package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/schema"
)

// BuiltinFunc is a builtin action's implementation over decoded JSON.
type BuiltinFunc func(ctx context.Context, input map[string]any) (map[string]any, error)

// Builtin is the runtime of Go functions registered by the program. It is
// mounted on every Harness as runtime "builtin".
type Builtin struct {
	mu    sync.RWMutex
	funcs map[string]BuiltinFunc
}

// Run calls the function registered for a.Name.
func (b *Builtin) Run(ctx context.Context, a action.Action) (map[string]any, error) {
	b.mu.RLock()
	fn, ok := b.funcs[a.Name]
	b.mu.RUnlock()
	if !ok {
		return nil, action.Errorf(action.CodeUnknownAction, "no builtin function is registered for %s", a.Name)
	}
	return fn(ctx, a.Input)
}

// Spec describes a builtin action to register. Input is its JSON Schema;
// RegisterFunc derives it from the input type when it is empty.
type Spec struct {
	Name        string
	Description string
	Trusted     bool
	Risk        schema.Risk
	Input       json.RawMessage
	Sensitive   []string
}

// Register adds a builtin action over decoded JSON: its schema goes into
// the registry and fn into the builtin runtime.
func (h *Harness) Register(spec Spec, fn BuiltinFunc) error {
	if fn == nil {
		return fmt.Errorf("register %s: nil function", spec.Name)
	}
	err := h.registry.Register(schema.ActionSchema{
		Name: spec.Name, Description: spec.Description, Runtime: schema.RuntimeBuiltin,
		Trusted: spec.Trusted, Risk: spec.Risk, Input: spec.Input, Sensitive: spec.Sensitive,
	})
	if err != nil {
		return err
	}
	h.builtin.mu.Lock()
	h.builtin.funcs[spec.Name] = fn
	h.builtin.mu.Unlock()
	return nil
}

// RegisterFunc adds a typed builtin action. The input is decoded from JSON
// into In (after schema validation) and the result encoded from Out; Out
// must encode to a JSON object (a struct or a map). When spec.Input is
// empty the schema is derived from In with schema.FromType: property names
// from `json` tags, descriptions and constraints from
// `jsonschema:"description=…,minLength=1"` tags (the older `desc:"…"` tag
// still gives a description). A tag key FromType does not know is an
// error, and nothing is registered.
func RegisterFunc[In, Out any](h *Harness, spec Spec, fn func(ctx context.Context, in In) (Out, error)) error {
	if fn == nil {
		return fmt.Errorf("register %s: nil function", spec.Name)
	}
	if len(spec.Input) == 0 {
		derived, err := schema.FromType(reflect.TypeFor[In]())
		if err != nil {
			return fmt.Errorf("register %s: %w", spec.Name, err)
		}
		spec.Input = derived
	}
	return h.Register(spec, func(ctx context.Context, input map[string]any) (map[string]any, error) {
		var in In
		raw, err := json.Marshal(input)
		if err != nil {
			return nil, action.Errorf(action.CodeInvalidInput, "input: %v", err)
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, action.Errorf(action.CodeInvalidInput, "input: %v", err)
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		if m, ok := any(out).(map[string]any); ok {
			return m, nil
		}
		raw, err = json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("%s result: %w", spec.Name, err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("%s result is not a JSON object: %w", spec.Name, err)
		}
		return m, nil
	})
}
