package trusted

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/schema"
)

//go:embed openapi.json
var openAPI []byte

// OpenAPI returns the OpenAPI 3.1 document of the API as written: every
// route, generic Action and Observation schemas, and the payload and
// preview schemas of the built-in actions. The document a Server serves is
// OpenAPIFor its registry.
func OpenAPI() []byte { return bytes.Clone(openAPI) }

// httpCodes are the error codes of the HTTP layer that are not action
// codes.
var httpCodes = []string{CodeInvalidJSON, CodeUnauthorized, CodeForbidden, CodeMethodNotAllowed, CodeNotReady, string(CodeAlreadyDecided)}

// payloadSchemas names the component that describes each built-in
// action's payload when it succeeds. An action of the mcp runtime gets
// MCPPayload; any other action (a program's own builtin) a JSON object.
var payloadSchemas = map[string]string{
	"workspace_list_files":    "ListFilesPayload",
	"workspace_read_file":     "ReadFilePayload",
	"workspace_search_text":   "SearchTextPayload",
	"workspace_propose_patch": "PatchPayload",
	"workspace_apply_patch":   "PatchPayload",
	"workspace_run_shell":     "RunShellPayload",
}

// OpenAPIFor returns the OpenAPI document with reg's actions in it, so that
// a client generated from it types each action's input, the payload of its
// success, previews and codes:
//   - Input_<name> is the action's input schema, as the registry validates it;
//   - Action_<name> is the request body for that action (name is a const);
//     Action is their oneOf, discriminated by name;
//   - Observation_<name> is that action's observation with status ok and
//     its payload; ObservationNotOK is every other status, with the
//     decision and approval; Observation is their oneOf;
//   - ActionCode enumerates action.Codes, ErrorCode those and the HTTP
//     layer's own codes.
//
// The document describes every registered action, as GET /v1/schemas
// lists them (which needs agent:execute); /openapi.json is public, as SPEC
// section 5 asks, so a deployment that must not disclose its MCP servers'
// tools keeps the listener private.
func OpenAPIFor(reg *schema.Registry) ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	envelope, _ := schemas["Action"].(map[string]any)
	observation, _ := schemas["Observation"].(map[string]any)
	if envelope == nil || observation == nil {
		return nil, fmt.Errorf("openapi.json: no Action or Observation schema")
	}

	codes := []any{}
	errorCodes := []any{}
	for _, c := range action.Codes() {
		codes = append(codes, string(c.Code))
		if c.Code != action.CodeNone {
			errorCodes = append(errorCodes, string(c.Code))
		}
	}
	for _, c := range httpCodes {
		errorCodes = append(errorCodes, c)
	}
	schemas["ActionCode"] = map[string]any{"type": "string", "enum": codes,
		"description": "Empty when ok; otherwise one stable snake_case code (SPEC section 3)."}
	schemas["ErrorCode"] = map[string]any{"type": "string", "enum": errorCodes,
		"description": "An action code, or one of the HTTP layer's own."}

	var actions, observations []any
	mapping := map[string]any{}
	for _, sc := range reg.List() {
		var input map[string]any
		if err := json.Unmarshal(sc.Input, &input); err != nil {
			return nil, fmt.Errorf("input schema of %s: %w", sc.Name, err)
		}
		if sc.Description != "" {
			input["description"] = sc.Description
		}
		schemas["Input_"+sc.Name] = input

		a := cloneMap(envelope)
		a["description"] = fmt.Sprintf("Run %s (%s risk, %s).", sc.Name, sc.Risk, trustWord(sc.Trusted))
		props := cloneMap(a["properties"].(map[string]any))
		props["name"] = map[string]any{"const": sc.Name}
		props["input"] = ref("Input_" + sc.Name)
		a["properties"] = props
		schemas["Action_"+sc.Name] = a
		actions = append(actions, ref("Action_"+sc.Name))
		mapping[sc.Name] = "#/components/schemas/Action_" + sc.Name

		o := cloneMap(observation)
		delete(o, "description")
		props = cloneMap(o["properties"].(map[string]any))
		props["action"] = map[string]any{"const": sc.Name}
		props["status"] = map[string]any{"const": string(action.StatusOK)}
		props["code"] = map[string]any{"const": string(action.CodeNone)}
		props["payload"] = payloadOf(sc)
		o["properties"] = props
		schemas["Observation_"+sc.Name] = o
		observations = append(observations, ref("Observation_"+sc.Name))
	}

	notOK := cloneMap(observation)
	notOK["description"] = "An observation that is not ok: an error, a refusal, or a wait for a person (needs_confirmation, with approval). Its payload, when any, gives details (the offending word, the file's size, a command's output)."
	props := cloneMap(notOK["properties"].(map[string]any))
	props["status"] = map[string]any{"enum": []any{string(action.StatusError), string(action.StatusBlocked), string(action.StatusNeedsConfirmation)}}
	notOK["properties"] = props
	schemas["ObservationNotOK"] = notOK
	observations = append(observations, ref("ObservationNotOK"))

	schemas["Action"] = map[string]any{
		"description":   "An action to run: one of the registered actions, with its input.",
		"oneOf":         actions,
		"discriminator": map[string]any{"propertyName": "name", "mapping": mapping},
	}
	if len(actions) == 0 {
		schemas["Action"] = envelope // nothing registered: any name is refused with unknown_action
	}
	schemas["Observation"] = map[string]any{
		"description": "What an action gave: the action's own observation when ok, ObservationNotOK otherwise.",
		"oneOf":       observations,
	}
	return json.MarshalIndent(doc, "", "  ")
}

func trustWord(trusted bool) string {
	if trusted {
		return "trusted: preview and execute, or auto-approved"
	}
	return "untrusted"
}

func payloadOf(sc *schema.ActionSchema) map[string]any {
	if name, ok := payloadSchemas[sc.Name]; ok {
		return ref(name)
	}
	if sc.Runtime == schema.RuntimeMCP {
		return ref("MCPPayload")
	}
	return map[string]any{"type": []any{"object", "null"}, "additionalProperties": true}
}

func ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// cloneMap copies m one level deep (the values are shared, and never
// changed).
func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// openAPICache is the document of one registry's actions, made again when
// the actions change (an MCP server's tools registered after start).
type openAPICache struct {
	mu    sync.Mutex
	names string
	doc   []byte
}

func (c *openAPICache) get(reg *schema.Registry) ([]byte, error) {
	list := reg.List()
	var key strings.Builder
	for _, sc := range list {
		key.WriteString(sc.Name)
		key.WriteByte(0)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.doc != nil && c.names == key.String() {
		return c.doc, nil
	}
	doc, err := OpenAPIFor(reg)
	if err != nil {
		return nil, err
	}
	c.names, c.doc = key.String(), doc
	return doc, nil
}
