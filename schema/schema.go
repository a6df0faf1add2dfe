// Package schema is the action schema registry: for every action Harness
// knows, its input's JSON Schema (compiled once), the runtime that runs it,
// whether it needs trust, its risk class and its sensitive fields.
//
// A Registry is safe for concurrent use. Schemas are compiled with
// github.com/santhosh-tekuri/jsonschema/v5 (draft 2020-12 unless the schema
// names another draft). Unknown input properties are refused unless the
// schema says otherwise: a top-level object schema without an
// "additionalProperties" keyword gets "additionalProperties": false.
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"

	"github.com/harness-runtime/harness/action"
)

// Risk classifies what an action can do to the world.
type Risk string

// Risk classes.
const (
	RiskRead    Risk = "read"
	RiskWrite   Risk = "write"
	RiskExec    Risk = "exec"
	RiskNetwork Risk = "network"
)

// Runtime names used by the shipped catalog.
const (
	RuntimeBuiltin   = "builtin"
	RuntimeWorkspace = "workspace"
	RuntimeMCP       = "mcp"
)

// ActionSchema describes one action.
type ActionSchema struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Runtime names the runtime that runs the action ("builtin",
	// "workspace", "mcp", or one a program registers).
	Runtime string `json:"runtime"`
	// Trusted actions run only with trust: through preview/execute, or when
	// auto-approved by configuration.
	Trusted bool `json:"trusted"`
	Risk    Risk `json:"risk"`
	// Input is the JSON Schema of the action's input object.
	Input json.RawMessage `json:"input_schema"`
	// Sensitive lists input fields (dot paths such as "headers.token")
	// whose values never reach an event or the audit log.
	Sensitive []string `json:"sensitive_fields,omitempty"`

	compiled *compiledSchema
	fast     *fastNode // nil when the schema is outside the fast subset
}

// compiledSchema is an input schema compiled on first use: an input the
// fast validator accepts never needs it, and most programs validate the
// inputs of a few actions only. Copies of an ActionSchema share it.
type compiledSchema struct {
	once   sync.Once
	name   string
	raw    json.RawMessage
	schema *jsonschema.Schema
	err    error
}

func (c *compiledSchema) get() (*jsonschema.Schema, error) {
	c.once.Do(func() { c.schema, c.err = compileInput(c.name, c.raw) })
	return c.schema, c.err
}

// compileInput compiles the (closed) input schema of action name.
func compileInput(name string, raw json.RawMessage) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	url := "harness:///actions/" + name + ".json"
	if err := c.AddResource(url, bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("register %s: input schema: %w", name, err)
	}
	compiled, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("register %s: input schema: %w", name, err)
	}
	return compiled, nil
}

// Validate checks input against the action's compiled input schema. The
// error is an *action.Error with code invalid_input whose message names the
// offending field.
func (s *ActionSchema) Validate(input map[string]any) error {
	if s.compiled == nil {
		return action.Errorf(action.CodeInternal, "schema %s is not compiled", s.Name)
	}
	var v any = input
	if input == nil {
		v = map[string]any{}
	}
	if s.fast != nil && s.fast.check(v) == valid {
		return nil
	}
	compiled, err := s.compiled.get()
	if err != nil {
		return action.Errorf(action.CodeInternal, "schema %s does not compile: %v", s.Name, err)
	}
	err = validate(compiled, v)
	if err == nil {
		return nil
	}
	return &action.Error{Code: action.CodeInvalidInput, Message: describe(err), Err: err}
}

// validate runs the compiled schema. jsonschema/v5 knows only the types
// encoding/json produces (and Go's integer and float kinds); a value of any
// other type (a []string a program built by hand, say) is brought to its
// JSON form first.
func validate(c *jsonschema.Schema, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = retryNormalized(c, v)
		}
	}()
	err = c.Validate(v)
	var bad jsonschema.InvalidJSONTypeError
	if errors.As(err, &bad) {
		return retryNormalized(c, v)
	}
	return err
}

func retryNormalized(c *jsonschema.Schema, v any) error {
	norm, err := normalize(v)
	if err != nil {
		return fmt.Errorf("input is not JSON: %w", err)
	}
	return c.Validate(norm)
}

func normalize(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// describe turns a validation error into one line that names each failing
// field by its JSON pointer, for example "input/path: expected string, but
// got number".
func describe(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := strings.TrimPrefix(e.InstanceLocation, "/")
			if loc == "" {
				loc = "input"
			} else {
				loc = "input." + strings.ReplaceAll(loc, "/", ".")
			}
			parts = append(parts, loc+": "+e.Message)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(parts)
	if len(parts) > 5 {
		parts = append(parts[:5], fmt.Sprintf("and %d more", len(parts)-5))
	}
	return strings.Join(parts, "; ")
}

// Registry holds action schemas by name. The zero value is not usable; call
// NewRegistry or Catalog.
type Registry struct {
	mu      sync.RWMutex
	schemas map[string]*ActionSchema
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{schemas: make(map[string]*ActionSchema)}
}

// ErrDuplicate is returned by Register for a name already registered.
var ErrDuplicate = errors.New("action already registered")

// Register compiles s's input schema and adds it. It refuses a duplicate
// name, an empty or malformed name, an unknown risk class and a schema that
// does not compile.
func (r *Registry) Register(s ActionSchema) error {
	if err := prepare(&s); err != nil {
		return err
	}
	if _, err := s.compiled.get(); err != nil {
		return err
	}
	return r.add(&s)
}

// prepare checks s's name and risk and readies its input schema (closed,
// with its fast validator); the compiled schema is made on first use.
func prepare(s *ActionSchema) error {
	if err := checkName(s.Name); err != nil {
		return err
	}
	switch s.Risk {
	case RiskRead, RiskWrite, RiskExec, RiskNetwork:
	case "":
		s.Risk = RiskRead
	default:
		return fmt.Errorf("register %s: unknown risk %q", s.Name, s.Risk)
	}
	if s.Runtime == "" {
		return fmt.Errorf("register %s: no runtime", s.Name)
	}
	raw, err := closeObject(s.Input)
	if err != nil {
		return fmt.Errorf("register %s: input schema: %w", s.Name, err)
	}
	s.Input = raw
	s.compiled = &compiledSchema{name: s.Name, raw: raw}
	s.fast = compileFast(raw)
	s.Sensitive = append([]string(nil), s.Sensitive...)
	return nil
}

// add adds a prepared schema.
func (r *Registry) add(s *ActionSchema) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.schemas[s.Name]; dup {
		return fmt.Errorf("register %s: %w", s.Name, ErrDuplicate)
	}
	r.schemas[s.Name] = s
	return nil
}

func checkName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("register: action name must be 1 to 128 characters")
	}
	for _, c := range name {
		ok := c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !ok {
			return fmt.Errorf("register %q: action names use letters, digits, '_', '-' and '.'", name)
		}
	}
	return nil
}

// closeObject returns the schema with "additionalProperties": false added
// at the top level when the schema describes an object and says nothing
// about additional properties. An empty schema means an object with no
// properties.
func closeObject(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{"type":"object","additionalProperties":false}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if t, ok := m["type"]; ok && t != "object" {
		return nil, fmt.Errorf(`an action's input must be an object, not %v`, t)
	}
	m["type"] = "object"
	_, hasAP := m["additionalProperties"]
	_, hasUP := m["unevaluatedProperties"]
	if !hasAP && !hasUP {
		m["additionalProperties"] = false
	}
	return json.Marshal(m)
}

// Lookup returns the schema registered under name.
func (r *Registry) Lookup(name string) (*ActionSchema, bool) {
	r.mu.RLock()
	s, ok := r.schemas[name]
	r.mu.RUnlock()
	return s, ok
}

// List returns every registered schema, sorted by name.
func (r *Registry) List() []*ActionSchema {
	r.mu.RLock()
	out := make([]*ActionSchema, 0, len(r.schemas))
	for _, s := range r.schemas {
		out = append(out, s)
	}
	r.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
