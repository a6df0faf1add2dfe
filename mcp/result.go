package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-runtime/harness/action"
)

// maxErrorText bounds how much of a tool's error text goes into an
// observation's message (the whole text stays in the payload).
const maxErrorText = 512

// resultPayload turns a tools/call result into an observation payload:
//
//	{"server", "tool", "content": [MCP content blocks as JSON],
//	 "text": the text blocks joined by newlines,
//	 "structured_content": the tool's structured result, when it gave one}
//
// A result flagged isError becomes an mcp_error carrying the same payload.
func resultPayload(server, tool string, r *mcpgo.CallToolResult) (map[string]any, error) {
	if r == nil {
		return nil, action.Errorf(action.CodeMCPError, "tool %s of MCP server %s returned no result", tool, server)
	}
	p := map[string]any{"server": server, "tool": tool}
	content, err := toJSONValue(r.Content)
	if err != nil {
		return nil, action.Errorf(action.CodeMCPError, "tool %s of MCP server %s returned content that cannot be encoded: %v", tool, server, err)
	}
	if content == nil {
		content = []any{}
	}
	p["content"] = content
	var texts []string
	for _, c := range r.Content {
		if t, ok := mcpgo.AsTextContent(c); ok {
			texts = append(texts, t.Text)
		}
	}
	text := strings.Join(texts, "\n")
	p["text"] = text
	switch {
	case len(r.RawStructuredContent) > 0 && string(r.RawStructuredContent) != "null":
		v, err := decodeJSON(r.RawStructuredContent)
		if err != nil {
			return nil, action.Errorf(action.CodeMCPError, "tool %s of MCP server %s returned malformed structured content: %v", tool, server, err)
		}
		p["structured_content"] = v
	case r.StructuredContent != nil:
		v, err := toJSONValue(r.StructuredContent)
		if err != nil {
			return nil, action.Errorf(action.CodeMCPError, "tool %s of MCP server %s returned structured content that cannot be encoded: %v", tool, server, err)
		}
		p["structured_content"] = v
	}
	if r.IsError {
		msg := strings.TrimSpace(text)
		if msg == "" {
			msg = "no error text"
		}
		if len(msg) > maxErrorText {
			msg = msg[:maxErrorText] + "…"
		}
		return nil, &action.Error{Code: action.CodeMCPError, Message: fmt.Sprintf("tool %s of MCP server %s reported an error: %s", tool, server, msg), Payload: p}
	}
	return p, nil
}

// toJSONValue converts v to the generic form encoding/json decodes into,
// keeping numbers exact.
func toJSONValue(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeJSON(raw)
}

func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}
