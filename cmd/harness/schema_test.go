package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/schema"
)

// TestSchemaExportGolden pins what `harness schema export` prints in each
// format (go test ./cmd/harness -run TestSchemaExportGolden -update).
func TestSchemaExportGolden(t *testing.T) {
	cfg, _ := testConfig(t, "")
	for _, f := range schema.Formats() {
		t.Run(string(f), func(t *testing.T) {
			code, out, errOut := runCLI("schema", "export", "--format", string(f), "--config", cfg)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden := filepath.Join("testdata", "schema_export_"+string(f)+".golden.json")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/harness -run TestSchemaExportGolden -update)", err)
			}
			if out != string(want) {
				t.Fatalf("output differs from %s:\n got: %s\nwant: %s", golden, out, want)
			}
		})
	}
}

// exportedNames runs the export and returns the tool names, checking that
// stdout is one JSON array of the format's definitions.
func exportedNames(t *testing.T, format string, args ...string) []string {
	t.Helper()
	code, out, errOut := runCLI(append([]string{"schema", "export", "--format", format}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var defs []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &defs); err != nil {
		t.Fatalf("stdout is not a JSON array of objects: %v\n%s", err, out)
	}
	var names []string
	for _, d := range defs {
		raw := d["name"]
		if format == "openai" {
			var fn map[string]json.RawMessage
			json.Unmarshal(d["function"], &fn)
			raw = fn["name"]
		}
		var n string
		if err := json.Unmarshal(raw, &n); err != nil || n == "" {
			t.Fatalf("a definition without a name: %v", d)
		}
		names = append(names, n)
	}
	return names
}

func TestSchemaExportOffersWhatCanRun(t *testing.T) {
	cfg, _ := testConfig(t, "")
	all := []string{"workspace_apply_patch", "workspace_list_files", "workspace_propose_patch", "workspace_read_file", "workspace_run_shell", "workspace_search_text"}
	for _, f := range []string{"mcp", "openai", "anthropic"} {
		if got := exportedNames(t, f, "--config", cfg); strings.Join(got, ",") != strings.Join(all, ",") {
			t.Errorf("%s: tools %v, want %v (no mcp_call without an MCP server)", f, got, all)
		}
	}
	disabled, _ := testConfig(t, "  disabled-actions: [workspace_run_shell]\n")
	if got := exportedNames(t, "openai", "--config", disabled); strings.Contains(strings.Join(got, ","), "workspace_run_shell") {
		t.Errorf("a disabled action is offered: %v", got)
	}
	// schema list still shows the whole registry, mcp_call included.
	if _, out, _ := runCLI("schema", "list", "--config", cfg); !strings.Contains(out, "mcp_call") {
		t.Error("schema list lost mcp_call")
	}
}

func TestSchemaExportNotOffered(t *testing.T) {
	cfg := config.Default()
	if got := notOffered(cfg); strings.Join(got, ",") != "mcp_call" {
		t.Errorf("no MCP server: %v", got)
	}
	cfg.Harness.MCP.Servers = map[string]config.MCPServerConfig{"fs": {}}
	cfg.Harness.DisabledActions = []string{"workspace_run_shell"}
	if got := notOffered(cfg); strings.Join(got, ",") != "workspace_run_shell" {
		t.Errorf("with an MCP server: %v", got)
	}
}

func TestSchemaExportUsage(t *testing.T) {
	cfg, _ := testConfig(t, "")
	for name, args := range map[string][]string{
		"no format":      {"schema", "export"},
		"unknown format": {"schema", "export", "--format", "gemini"},
		"extra argument": {"schema", "export", "x", "--format", "mcp"},
	} {
		code, out, errOut := runCLI(append(args, "--config", cfg)...)
		if code != exitUsage || out != "" {
			t.Errorf("%s: exit %d, stdout %q", name, code, out)
		}
		if name != "extra argument" && !strings.Contains(errOut, "mcp, openai or anthropic") {
			t.Errorf("%s: stderr %q does not name the formats", name, errOut)
		}
	}
}
