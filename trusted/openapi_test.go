package trusted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/runtime"
)

// servedOpenAPI fetches /openapi.json from f.
func servedOpenAPI(t *testing.T, f *fixture) []byte {
	t.Helper()
	resp, err := http.Get(f.URL + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return body
}

type openAPIDoc struct {
	Components struct {
		Schemas map[string]json.RawMessage `json:"schemas"`
	} `json:"components"`
}

// TestOpenAPIHasEachActionFromTheRegistry checks that the served document
// is made from the registry at serve time: each action's input schema as
// the registry validates it, the request bodies discriminated by name,
// an observation per action, and the code enum of action.Codes.
func TestOpenAPIHasEachActionFromTheRegistry(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	body := servedOpenAPI(t, f)
	var doc openAPIDoc
	require.NoError(t, json.Unmarshal(body, &doc))
	s := doc.Components.Schemas

	var act struct {
		OneOf         []map[string]string `json:"oneOf"`
		Discriminator struct {
			PropertyName string            `json:"propertyName"`
			Mapping      map[string]string `json:"mapping"`
		} `json:"discriminator"`
	}
	require.NoError(t, json.Unmarshal(s["Action"], &act))
	require.Equal(t, "name", act.Discriminator.PropertyName)
	list := f.Harness.Registry().List()
	require.Len(t, act.OneOf, len(list))
	for _, sc := range list {
		var input, want map[string]any
		require.NoError(t, json.Unmarshal(s["Input_"+sc.Name], &input), sc.Name)
		require.NoError(t, json.Unmarshal(sc.Input, &want))
		delete(input, "description")
		require.Equal(t, want, input, "Input_%s is the registry's schema", sc.Name)
		require.Equal(t, "#/components/schemas/Action_"+sc.Name, act.Discriminator.Mapping[sc.Name])

		var a struct {
			Properties map[string]map[string]any `json:"properties"`
		}
		require.NoError(t, json.Unmarshal(s["Action_"+sc.Name], &a))
		require.Equal(t, sc.Name, a.Properties["name"]["const"])
		require.Equal(t, "#/components/schemas/Input_"+sc.Name, a.Properties["input"]["$ref"])
		require.Contains(t, s, "Observation_"+sc.Name)
	}

	var codes struct {
		Enum []string `json:"enum"`
	}
	require.NoError(t, json.Unmarshal(s["ActionCode"], &codes))
	var want []string
	for _, c := range action.Codes() {
		want = append(want, string(c.Code))
	}
	require.Equal(t, want, codes.Enum)

	// Every reference points at a schema the document has.
	for _, m := range regexp.MustCompile(`"\$ref":\s*"#/components/(schemas|responses)/([^"]+)"`).FindAllStringSubmatch(string(body), -1) {
		require.Contains(t, string(body), `"`+m[2]+`": {`, "dangling $ref %s", m[0])
	}

	// An action registered later (an MCP server's tools) is in the next
	// document.
	require.NoError(t, f.Harness.Register(runtime.Spec{Name: "later", Description: "registered after start"},
		func(context.Context, map[string]any) (map[string]any, error) { return map[string]any{}, nil }))
	require.Contains(t, string(servedOpenAPI(t, f)), `"Input_later"`)
}

// compileOpenAPI compiles one component of the served document as a JSON
// Schema (OpenAPI 3.1's schemas are JSON Schema 2020-12).
func compileOpenAPI(t *testing.T, doc []byte, component string) *jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	require.NoError(t, c.AddResource("harness:///openapi.json", bytes.NewReader(doc)))
	s, err := c.Compile("harness:///openapi.json#/components/schemas/" + component)
	require.NoError(t, err, component)
	return s
}

func asJSON(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(raw, &out))
	return out
}

// TestOpenAPIDescribesRealTraffic validates what the service really takes
// and answers against the served document: so a generated client's types
// are the truth, not a hope. Each built-in action's success, refusals and
// errors, previews of a patch, a command and a read, and request bodies
// good and bad.
func TestOpenAPIDescribesRealTraffic(t *testing.T) {
	f := newFixture(t, fixtureOpts{cfg: func(c *config.Config) {
		c.Harness.Workspace.AllowedCommands = []string{"ls"}
	}})
	doc := servedOpenAPI(t, f)
	actionSchema := compileOpenAPI(t, doc, "Action")
	observation := compileOpenAPI(t, doc, "Observation")
	preview := compileOpenAPI(t, doc, "Preview")

	requests := []struct {
		name  string
		body  map[string]any
		valid bool
	}{
		{"read", map[string]any{"name": "workspace_read_file", "input": map[string]any{"path": "f.txt"}}, true},
		{"list", map[string]any{"name": "workspace_list_files", "input": map[string]any{"recursive": true}}, true},
		{"search", map[string]any{"name": "workspace_search_text", "input": map[string]any{"query": "two"}}, true},
		{"propose", map[string]any{"name": "workspace_propose_patch", "input": map[string]any{"path": "f.txt", "content": "one\n2\n"}}, true},
		{"shell", map[string]any{"name": "workspace_run_shell", "input": map[string]any{"command": "ls"}}, true},
		{"builtin", map[string]any{"name": "echo", "input": map[string]any{"text": "hi"}}, true},
		{"a read without its path", map[string]any{"name": "workspace_read_file", "input": map[string]any{}}, false},
		{"a path of the wrong type", map[string]any{"name": "workspace_read_file", "input": map[string]any{"path": 1}}, false},
		{"content and patch together", map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": "f.txt", "content": "x", "patch": "y"}}, false},
		{"an unregistered name", map[string]any{"name": "no_such_action", "input": map[string]any{}}, false},
	}
	for _, rq := range requests {
		err := actionSchema.Validate(asJSON(t, rq.body))
		require.Equal(t, rq.valid, err == nil, "%s: %v", rq.name, err)
	}

	ran := map[string]bool{}
	for _, rq := range requests {
		st, obs := call(t, "POST", f.URL+"/v1/actions", keyAlice, rq.body)
		require.Equal(t, 200, st)
		require.NoError(t, observation.Validate(asJSON(t, obs)), "%s: %v", rq.name, obs)
		if obs["status"] == "ok" {
			ran[rq.name] = true
		}
	}
	for _, name := range []string{"read", "list", "search", "propose", "builtin"} {
		require.True(t, ran[name], "%s did not run ok, so its payload was not checked", name)
	}
	// A missing file (an error with details) and an escape (a refusal).
	for _, in := range []map[string]any{{"path": "nope.txt"}, {"path": "../../etc/passwd"}} {
		_, obs := call(t, "POST", f.URL+"/v1/actions", keyAlice, map[string]any{"name": "workspace_read_file", "input": in})
		require.NotEqual(t, "ok", obs["status"])
		require.NoError(t, observation.Validate(asJSON(t, obs)), "%v", obs)
	}

	// Previews of a patch, a command and a read, and their executions.
	for _, a := range []action.Action{
		{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": "one\n2\n"}},
		{Name: "workspace_run_shell", Input: map[string]any{"command": "ls"}},
		{Name: "workspace_read_file", Input: map[string]any{"path": "f.txt"}},
	} {
		st, p := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, a)
		require.Equal(t, 200, st, "%v", p)
		require.NoError(t, preview.Validate(asJSON(t, p)), "%s: %v", a.Name, p)
		st, obs := call(t, "POST", f.URL+"/v1/actions/execute/"+p["token"].(string), keyAlice, nil)
		require.Equal(t, 200, st, "%v", obs)
		require.Equal(t, "ok", obs["status"], "%v", obs)
		require.NoError(t, observation.Validate(asJSON(t, obs)), "%s: %v", a.Name, obs)
	}

	// The payload schemas are not vacuous: a read's payload without its
	// content is not a read's observation.
	_, obs := call(t, "POST", f.URL+"/v1/actions", keyAlice, map[string]any{"name": "workspace_read_file", "input": map[string]any{"path": "f.txt"}})
	delete(obs["payload"].(map[string]any), "content")
	require.Error(t, observation.Validate(asJSON(t, obs)))
}

// TestOpenAPIGeneratesATypedTypeScriptClient generates the TypeScript
// types of the served document with openapi-typescript and type-checks a
// client against them with tsc: inputs, payloads, previews and codes are
// typed (an action's input with the wrong type, or a code that does not
// exist, does not compile), not empty records.
func TestOpenAPIGeneratesATypedTypeScriptClient(t *testing.T) {
	dir := openAPINodeDir(t)
	f := newFixture(t, fixtureOpts{})
	work := t.TempDir()
	spec := filepath.Join(work, "openapi.json")
	require.NoError(t, os.WriteFile(spec, servedOpenAPI(t, f), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gen := exec.CommandContext(ctx, "node", filepath.Join(dir, "node_modules", "openapi-typescript", "bin", "cli.js"), spec, "-o", filepath.Join(work, "api.d.ts"))
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "%s", out)
	dts, err := os.ReadFile(filepath.Join(work, "api.d.ts"))
	require.NoError(t, err)
	types := string(dts)

	for _, want := range []string{
		`Input_workspace_read_file: {`,
		`"trust_required"`,
		`Observation_workspace_read_file: {`,
		`payload: components["schemas"]["ReadFilePayload"]`,
		`preview: components["schemas"]["ActionPreview"]`,
		`input?: components["schemas"]["Input_workspace_apply_patch"]`,
	} {
		require.Contains(t, types, want)
	}
	for _, field := range []string{"input", "payload", "preview", "input_schema"} {
		require.NotRegexp(t, `\b`+field+`\??: Record<string, never>`, types, "%s is an empty record", field)
	}

	client := `import type { components } from "./api";
type S = components["schemas"];

export function content(o: S["Observation"]): string | undefined {
  if (o.status === "ok" && o.action === "workspace_read_file") return o.payload.content;
  if (o.status === "needs_confirmation") return o.approval?.id;
  return undefined;
}
export function diff(p: S["Preview"]): string | undefined {
  return "diff" in p.preview ? p.preview.diff : undefined;
}
export const read: S["Action"] = { name: "workspace_read_file", input: { path: "f.txt", limit: 10 } };
export const code: S["ActionCode"] = "trust_required";
// @ts-expect-error: a path is a string
export const badInput: S["Action"] = { name: "workspace_read_file", input: { path: 42 } };
// @ts-expect-error: no such property of a read
export const badProp: S["Action"] = { name: "workspace_read_file", input: { path: "f.txt", mode: "x" } };
// @ts-expect-error: not a code
export const badCode: S["ActionCode"] = "no_such_code";
`
	require.NoError(t, os.WriteFile(filepath.Join(work, "client.ts"), []byte(client), 0o644))
	tsc := exec.CommandContext(ctx, "node", filepath.Join(dir, "node_modules", "typescript", "bin", "tsc"),
		"--noEmit", "--strict", "--target", "es2022", "--moduleResolution", "bundler", "--module", "esnext", filepath.Join(work, "client.ts"))
	out, err = tsc.CombinedOutput()
	require.NoError(t, err, "tsc:\n%s\ntypes:\n%s", out, strings.Join(grepLines(types, "Input_workspace_read_file", 12), "\n"))
}

func grepLines(s, needle string, after int) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.Contains(l, needle) {
			return lines[i:min(len(lines), i+after)]
		}
	}
	return nil
}

// openAPINodeDir returns testdata/node when its npm packages are
// installed (make deps); without them the test is skipped, or fails when
// CI=true.
func openAPINodeDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "node"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "openapi-typescript", "package.json")); err != nil {
		msg := "the TypeScript client test needs openapi-typescript: run `npm ci --prefix trusted/testdata/node` (make deps)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	return dir
}

// TestOpenAPIWhileActionsAreRegistered serves the document to concurrent
// readers while actions are registered (as an MCP server's tools are, in
// the background); run with -race.
func TestOpenAPIWhileActionsAreRegistered(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				resp, err := http.Get(f.URL + "/openapi.json")
				if err != nil {
					errs <- err
					return
				}
				var doc openAPIDoc
				err = json.NewDecoder(resp.Body).Decode(&doc)
				resp.Body.Close()
				if err != nil || doc.Components.Schemas["Input_echo"] == nil {
					errs <- fmt.Errorf("bad document: %v", err)
					return
				}
			}
		}()
	}
	for i := range 20 {
		require.NoError(t, f.Harness.Register(runtime.Spec{Name: fmt.Sprintf("late_%d", i)},
			func(context.Context, map[string]any) (map[string]any, error) { return nil, nil }))
	}
	close(done)
	for range 4 {
		require.NoError(t, <-errs)
	}
	require.Contains(t, string(servedOpenAPI(t, f)), `"Input_late_19"`)
}
