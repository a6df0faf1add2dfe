package ahp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// PreActionPayload is what a pre_action payload says of a tool call. The
// payload's shape is a convention, not a rule of the protocol: the
// protocol's documentation names the tool "tool_name", the most used
// agent "tool"; NewPreAction writes both, ReadPreAction reads either.
type PreActionPayload struct {
	Tool      string
	Arguments json.RawMessage
	// Extra holds the payload's other keys (Harness's own: action_id,
	// tenant, decision, …), written beside the tool and its arguments.
	Extra map[string]any
}

// NewPreAction returns a pre_action payload naming tool under both
// "tool_name" and "tool", with its arguments (any JSON-encodable value;
// nil is written as {}) and extra keys beside them. Extra keys named
// tool_name, tool or arguments are refused.
func NewPreAction(tool string, arguments any, extra map[string]any) (json.RawMessage, error) {
	m := make(map[string]any, len(extra)+3)
	for k, v := range extra {
		if k == "tool_name" || k == "tool" || k == "arguments" {
			return nil, fmt.Errorf("pre_action: extra key %q would replace the tool call", k)
		}
		m[k] = v
	}
	if arguments == nil {
		arguments = map[string]any{}
	}
	m["tool_name"], m["tool"], m["arguments"] = tool, tool, arguments
	return json.Marshal(m)
}

// ReadPreAction reads a pre_action payload: the tool from "tool_name" or
// "tool" (when both are present they must agree: a payload naming two
// tools is refused, so that no peer checks one and runs the other), the
// arguments from "arguments" (absent: nil), and the other keys into
// Extra.
func ReadPreAction(payload json.RawMessage) (*PreActionPayload, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(payload, &m); err != nil || m == nil {
		return nil, errors.New("pre_action payload must be an object")
	}
	var name, tool *string
	if raw, ok := m["tool_name"]; ok && !isNull(raw) {
		name = new(string)
		if err := json.Unmarshal(raw, name); err != nil {
			return nil, fmt.Errorf("pre_action tool_name: %w", err)
		}
	}
	if raw, ok := m["tool"]; ok && !isNull(raw) {
		tool = new(string)
		if err := json.Unmarshal(raw, tool); err != nil {
			return nil, fmt.Errorf("pre_action tool: %w", err)
		}
	}
	p := &PreActionPayload{}
	switch {
	case name != nil && tool != nil && *name != *tool:
		return nil, fmt.Errorf("pre_action names two tools: tool_name %q, tool %q", *name, *tool)
	case name != nil:
		p.Tool = *name
	case tool != nil:
		p.Tool = *tool
	default:
		return nil, errors.New("pre_action payload names no tool (tool_name or tool)")
	}
	if raw, ok := m["arguments"]; ok && !isNull(raw) {
		p.Arguments = raw
	}
	for k, raw := range m {
		if k == "tool_name" || k == "tool" || k == "arguments" {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, err
		}
		if p.Extra == nil {
			p.Extra = map[string]any{}
		}
		p.Extra[k] = v
	}
	return p, nil
}

// Command returns the arguments' "command" when it is a string: the
// command line of a shell-like tool ("" otherwise).
func (p *PreActionPayload) Command() string {
	var a struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(p.Arguments, &a) != nil {
		return ""
	}
	return a.Command
}
