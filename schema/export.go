package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Format names the tool-definition format of one model API.
type Format string

// Formats Export knows.
const (
	// FormatMCP is an entry of an MCP tools/list result:
	// {"name", "description", "inputSchema", "annotations"}.
	FormatMCP Format = "mcp"
	// FormatOpenAI is a function tool of OpenAI's Chat Completions API:
	// {"type": "function", "function": {"name", "description", "parameters"}}.
	FormatOpenAI Format = "openai"
	// FormatAnthropic is a client tool of Anthropic's Messages API:
	// {"name", "description", "input_schema"}.
	FormatAnthropic Format = "anthropic"
)

// Formats returns the formats Export knows, in a stable order.
func Formats() []Format { return []Format{FormatMCP, FormatOpenAI, FormatAnthropic} }

// ParseFormat returns the Format named s, or an error that lists the known
// ones.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown tool format %q (want mcp, openai or anthropic)", s)
}

// ExportOptions choose what Export leaves out.
type ExportOptions struct {
	// Omit names actions not to offer the model: disabled actions, or
	// mcp_call when no MCP server is configured. Names not registered are
	// ignored.
	Omit []string
}

// Tool is one action as a model API's tool.
type Tool struct {
	// Name is the tool's name as the model sees it and calls it. It is the
	// action's name, except where the API's naming rule forbids it (see
	// Export); Tools.ActionName maps it back.
	Name string
	// Action is the registered action the tool runs.
	Action string
	// Definition is the tool definition, exactly as the API takes it.
	Definition json.RawMessage
}

// Tools is the registered actions as one API's tool definitions. It
// encodes to JSON as the array of definitions, which is what each API's
// "tools" field takes.
type Tools struct {
	Format Format
	List   []Tool
}

// MarshalJSON encodes the definitions as one JSON array.
func (t *Tools) MarshalJSON() ([]byte, error) {
	defs := make([]json.RawMessage, len(t.List))
	for i, tl := range t.List {
		defs[i] = tl.Definition
	}
	return json.Marshal(defs)
}

// Names returns the tool names, in the order of List.
func (t *Tools) Names() []string {
	out := make([]string, len(t.List))
	for i, tl := range t.List {
		out[i] = tl.Name
	}
	return out
}

// ActionName returns the action that the tool the model called runs, and
// whether the model named one of these tools at all.
func (t *Tools) ActionName(tool string) (string, bool) {
	for _, tl := range t.List {
		if tl.Name == tool {
			return tl.Action, true
		}
	}
	return "", false
}

// Export returns the registered actions, sorted by name, as the tool
// definitions of format, so that an agent loop hands them to its model
// unchanged. When the model calls a tool, the loop runs the action
// Tools.ActionName names, with the call's arguments as the input.
//
// Every format gets each action's description and input schema, rewritten
// where the model APIs would refuse it:
//   - OpenAI and Anthropic refuse an input schema with oneOf, anyOf,
//     allOf, not, enum or const at its top level (the whole request fails,
//     not only the one tool). Such keywords are taken out of the schema and
//     said in words at the end of the description ("Exactly one of these
//     field sets must be given: path+content | patch"). MCP clients that
//     forward tools to those APIs hit the same refusal, so the MCP format
//     gets the same schema. Nothing is lost: the registry still validates
//     every input against the whole schema, and a call outside it is
//     answered invalid_input.
//   - OpenAI and Anthropic tool names are at most 64 letters, digits, '_'
//     and '-'. A '.' becomes "__" (an MCP server's tool mcp.srv.search is
//     offered as mcp__srv__search) and a name still too long is cut and
//     given a hash suffix. Two actions that would get the same tool name
//     are an error. MCP tool names are the action names.
//
// The MCP format also carries the annotations MCP clients use to decide
// what to confirm, from the action's risk class (read: read-only and
// idempotent; write and exec: destructive; network: open-world).
func (r *Registry) Export(format Format, opts ExportOptions) (*Tools, error) {
	if _, err := ParseFormat(string(format)); err != nil {
		return nil, err
	}
	omit := make(map[string]bool, len(opts.Omit))
	for _, n := range opts.Omit {
		omit[n] = true
	}
	out := &Tools{Format: format, List: []Tool{}}
	byTool := map[string]string{}
	for _, s := range r.List() {
		if omit[s.Name] {
			continue
		}
		input, note, err := portableInput(s.Input)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", s.Name, err)
		}
		desc := strings.TrimSpace(s.Description)
		if note != "" {
			desc = strings.TrimSpace(desc + " " + note)
		}
		name := s.Name
		if format != FormatMCP {
			name = apiToolName(s.Name)
		}
		if other, dup := byTool[name]; dup {
			return nil, fmt.Errorf("export: actions %s and %s would both be offered as tool %s", other, s.Name, name)
		}
		byTool[name] = s.Name
		def, err := definition(format, name, desc, input, s.Risk)
		if err != nil {
			return nil, fmt.Errorf("export %s: %w", s.Name, err)
		}
		out.List = append(out.List, Tool{Name: name, Action: s.Name, Definition: def})
	}
	return out, nil
}

func definition(format Format, name, desc string, input json.RawMessage, risk Risk) (json.RawMessage, error) {
	var v any
	switch format {
	case FormatMCP:
		v = struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Annotations mcpAnnotations  `json:"annotations"`
		}{name, desc, input, annotationsFor(name, risk)}
	case FormatOpenAI:
		type function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		v = struct {
			Type     string   `json:"type"`
			Function function `json:"function"`
		}{"function", function{name, desc, input}}
	case FormatAnthropic:
		v = struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{name, desc, input}
	}
	return json.Marshal(v)
}

// mcpAnnotations are the MCP tool annotations (hints a client may use to
// decide what to ask its user about; never a guarantee, which is the
// guard's job).
type mcpAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

func annotationsFor(name string, risk Risk) mcpAnnotations {
	yes, no := true, false
	a := mcpAnnotations{Title: name}
	switch risk {
	case RiskRead:
		a.ReadOnlyHint, a.DestructiveHint, a.IdempotentHint, a.OpenWorldHint = &yes, &no, &yes, &no
	case RiskWrite, RiskExec:
		a.ReadOnlyHint, a.DestructiveHint, a.OpenWorldHint = &no, &yes, &no
	case RiskNetwork:
		a.ReadOnlyHint, a.OpenWorldHint = &no, &yes
	}
	return a
}

// maxAPIToolName is OpenAI's and Anthropic's limit on a tool name.
const maxAPIToolName = 64

// apiToolName is name under OpenAI's and Anthropic's naming rule
// (^[a-zA-Z0-9_-]{1,64}$). Registry names use only those characters and
// '.', so only dots and length need care.
func apiToolName(name string) string {
	n := strings.ReplaceAll(name, ".", "__")
	if len(n) <= maxAPIToolName {
		return n
	}
	sum := sha256.Sum256([]byte(name))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return n[:maxAPIToolName-len(suffix)] + suffix
}

// topLevelRefused are the keywords OpenAI refuses at the top level of a
// function's parameters (Anthropic refuses the first three).
var topLevelRefused = []string{"oneOf", "anyOf", "allOf", "not", "enum", "const"}

// portableInput returns the input schema without the top-level keywords
// the model APIs refuse, and a sentence that says what they required.
func portableInput(raw json.RawMessage) (json.RawMessage, string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, "", fmt.Errorf("input schema: %w", err)
	}
	var notes []string
	removed := false
	for _, k := range topLevelRefused {
		v, ok := m[k]
		if !ok {
			continue
		}
		delete(m, k)
		removed = true
		notes = append(notes, describeKeyword(k, v))
	}
	if !removed {
		return raw, "", nil
	}
	if _, ok := m["type"]; !ok {
		m["type"] = json.RawMessage(`"object"`)
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, "", err
	}
	return out, strings.Join(notes, " "), nil
}

// describeKeyword says in words what a top-level keyword required. A
// oneOf or anyOf whose branches only require fields (and may forbid
// others) reads "Exactly one of these field sets must be given: a+b | c.";
// anything else is given as its JSON.
func describeKeyword(k string, v json.RawMessage) string {
	if k == "oneOf" || k == "anyOf" {
		if sets, ok := requiredSets(v); ok {
			lead := "Exactly one"
			if k == "anyOf" {
				lead = "At least one"
			}
			return lead + " of these field sets must be given: " + strings.Join(sets, " | ") + "."
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, v); err != nil {
		compact.Write(v)
	}
	return fmt.Sprintf("The input must also satisfy %s: %s.", k, compact.String())
}

// requiredSets reads branches of the form {"required": [...]} with an
// optional {"not": {"required": [...]}}, as "a+b" per branch.
func requiredSets(v json.RawMessage) ([]string, bool) {
	var branches []map[string]json.RawMessage
	if err := json.Unmarshal(v, &branches); err != nil || len(branches) == 0 {
		return nil, false
	}
	var sets []string
	for _, b := range branches {
		var req []string
		for k, raw := range b {
			switch k {
			case "required":
				if json.Unmarshal(raw, &req) != nil || len(req) == 0 {
					return nil, false
				}
			case "not":
				var not map[string]json.RawMessage
				if json.Unmarshal(raw, &not) != nil {
					return nil, false
				}
				for nk := range not {
					if nk != "required" {
						return nil, false
					}
				}
			default:
				return nil, false
			}
		}
		if len(req) == 0 {
			return nil, false
		}
		sets = append(sets, strings.Join(req, "+"))
	}
	return sets, true
}
