package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestReActLoop runs the example end to end and checks what a reader of
// its output is promised: the model is offered the registry's tools (no
// mcp_call without an MCP server), reads work, the escape and the untrusted
// write are refused with their codes, the proposal is a diff, the audit
// chain holds.
func TestReActLoop(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, t.TempDir()); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"Tools offered to the model: workspace_apply_patch, workspace_list_files, workspace_propose_patch, workspace_read_file, workspace_run_shell, workspace_search_text\n",
		"greet.go:4: // TODO: greet in more languages.",
		"blocked (path_outside_root, from workspace)",
		"blocked (trust_required, from policy)",
		"-// TODO: greet in more languages.",
		"Audit log: ok: ",
		"Final answer:",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "root:") {
		t.Error("output shows something of /etc/shadow")
	}
}
