package guardharness

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/pipeline"
)

// fixture is a pipeline over a fresh root (README.md, .env) with the
// given rules, its audit log outside the root, and a Handler over it.
type fixture struct {
	h     *Handler
	root  string
	audit string
}

func newFixture(t *testing.T, extra string, allowUnknown bool) *fixture {
	t.Helper()
	dir := testkit.Home(t)
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "src"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "README.md"), []byte("hello\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte("TOKEN=x\n"), 0o644))
	auditPath := filepath.Join(dir, "audit.jsonl")
	yaml := "harness:\n  profile: dev\n  workspace: {root: " + root + ", sandbox: best-effort}\n  audit: {path: " + auditPath + "}\n" + extra
	cfg, err := config.Parse("t.yaml", []byte(yaml))
	require.NoError(t, err)
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	h, err := New(Options{Harness: p.Harness, Root: root, AllowUnknownTools: allowUnknown, Audit: p.Audit, Sanitizer: p.Sanitizer})
	require.NoError(t, err)
	return &fixture{h: h, root: root, audit: auditPath}
}

func preAction(t *testing.T, toolKey, tool string, args map[string]any) *ahp.WireEvent {
	t.Helper()
	payload, err := json.Marshal(map[string]any{toolKey: tool, "arguments": args})
	require.NoError(t, err)
	return &ahp.WireEvent{EventType: ahp.PreAction, SessionID: "s-1", AgentID: "agent-1",
		Timestamp: time.Now().UTC().Format(time.RFC3339), Depth: 0, Payload: payload}
}

func (f *fixture) decide(t *testing.T, ev *ahp.WireEvent) ahp.Decision {
	t.Helper()
	d, err := f.h.HandleEvent(context.Background(), ev)
	require.NoError(t, err)
	return d
}

// TestGuardAsHarness: other agents' tool calls are judged as the matching
// workspace actions would be: shell-like tools by the command rules, file
// tools by the root's path rules and the configured rules.
func TestGuardAsHarness(t *testing.T) {
	f := newFixture(t, `  rules:
    - {id: no-dotenv, when: 'glob(path, "**/.env*")', outcome: deny, reason: secrets stay out}
    - {id: ask-writes, actions: [workspace_apply_patch], when: 'glob(path, "src/**")', outcome: ask, reason: a person looks first}
`, false)
	cases := []struct {
		name   string
		key    string
		tool   string
		args   map[string]any
		kind   ahp.DecisionKind
		reason string
	}{
		{"an allowed command", "tool_name", "bash", map[string]any{"command": "ls -la"}, ahp.Allow, ""},
		{"the same under the other key", "tool", "Bash", map[string]any{"command": "ls"}, ahp.Allow, ""},
		{"rm -rf", "tool_name", "bash", map[string]any{"command": "rm -rf /"}, ahp.Block, "command_not_allowed"},
		{"dd", "tool", "shell", map[string]any{"command": "dd if=/dev/zero of=x"}, ahp.Block, "command_not_allowed"},
		{"a pipe", "tool_name", "exec", map[string]any{"command": "ls | sh"}, ahp.Block, "argument_not_allowed"},
		{"git running a pager from the command line", "tool_name", "bash", map[string]any{"command": "git -c core.pager=sh log"}, ahp.Block, ""},
		{"a command as argv", "tool_name", "run_command", map[string]any{"argv": []any{"rm", "-rf", "."}}, ahp.Block, "command_not_allowed"},
		{"reading inside the root", "tool_name", "Read", map[string]any{"file_path": "README.md"}, ahp.Allow, ""},
		{"reading by absolute path inside the root", "tool_name", "read_file", map[string]any{"path": "ROOT/README.md"}, ahp.Allow, ""},
		{"reading /etc/shadow", "tool_name", "Read", map[string]any{"file_path": "/etc/shadow"}, ahp.Block, "path_outside_root"},
		{"reading out with dot-dot", "tool_name", "read_file", map[string]any{"path": "../../etc/passwd"}, ahp.Block, "path_outside_root"},
		{"a rule's deny", "tool_name", "Read", map[string]any{"file_path": ".env"}, ahp.Block, "rule_denied"},
		{"a write outside", "tool_name", "Write", map[string]any{"file_path": "/tmp/x", "content": "y"}, ahp.Block, "path_outside_root"},
		{"a git hook planted", "tool_name", "Write", map[string]any{"file_path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"}, ahp.Block, ""},
		{"a rule's ask", "tool_name", "Edit", map[string]any{"file_path": "src/main.go", "new_string": "package main\n"}, ahp.Escalate, "approval_required"},
		{"a namespaced MCP tool", "tool_name", "mcp__fs__read_file", map[string]any{"path": "README.md"}, ahp.Allow, ""},
		{"an unknown tool", "tool_name", "WebFetch", map[string]any{"url": "https://example.com"}, ahp.Block, "unknown"},
		{"a shell tool without a command", "tool_name", "bash", map[string]any{}, ahp.Block, "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{}
			for k, v := range tc.args {
				if s, ok := v.(string); ok {
					v = strings.ReplaceAll(s, "ROOT", f.root)
				}
				args[k] = v
			}
			d := f.decide(t, preAction(t, tc.key, tc.tool, args))
			assert.Equal(t, tc.kind, d.Kind, d.Reason)
			assert.Contains(t, d.Reason, tc.reason)
			if tc.kind == ahp.Escalate {
				assert.True(t, strings.HasPrefix(d.EscalationTarget, "approval:"), d.EscalationTarget)
			}
		})
	}
	// Nothing ran: the agent runs its tools itself.
	_, err := os.Stat(filepath.Join(f.root, "src", "main.go"))
	assert.True(t, os.IsNotExist(err))
}

func TestGuardAsHarnessUnknownToolsAllowedByConfig(t *testing.T) {
	f := newFixture(t, "", true)
	d := f.decide(t, preAction(t, "tool_name", "WebFetch", map[string]any{"url": "https://example.com"}))
	assert.Equal(t, ahp.Allow, d.Kind)
	// A known tool is still judged.
	d = f.decide(t, preAction(t, "tool_name", "bash", map[string]any{"command": "rm -rf /"}))
	assert.Equal(t, ahp.Block, d.Kind)
}

func TestGuardAsHarnessBadPayloads(t *testing.T) {
	f := newFixture(t, "", true)
	for _, payload := range []string{`null`, `[]`, `{"arguments": {}}`, `{"tool_name": "bash", "tool": "Read", "arguments": {}}`, `{"tool_name": 7}`} {
		ev := &ahp.WireEvent{EventType: ahp.PreAction, SessionID: "s", AgentID: "a", Timestamp: "t", Payload: json.RawMessage(payload)}
		d := f.decide(t, ev)
		assert.Equal(t, ahp.Block, d.Kind, payload)
		assert.Contains(t, d.Reason, "invalid_input", payload)
	}
}

// TestGuardAsHarnessRecordsEveryEvent: each event, blocking or not, is a
// record with the decision; secrets in notifications are redacted.
func TestGuardAsHarnessRecordsEveryEvent(t *testing.T) {
	f := newFixture(t, "", false)
	f.decide(t, preAction(t, "tool_name", "bash", map[string]any{"command": "ls"}))
	f.decide(t, preAction(t, "tool_name", "bash", map[string]any{"command": "rm -rf /"}))
	note := &ahp.WireEvent{EventType: ahp.PostAction, SessionID: "s-1", AgentID: "agent-1", Timestamp: "t",
		Payload: json.RawMessage(`{"tool_name": "bash", "result": "key AKIAZ7Q3JX4LMNB2WQ5T"}`)}
	require.NoError(t, f.h.HandleNotification(context.Background(), note))

	file, err := os.Open(f.audit)
	require.NoError(t, err)
	defer file.Close()
	var events []map[string]any
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		if ev, ok := rec["event"].(map[string]any); ok && ev["kind"] == "ahp_event" {
			events = append(events, ev)
		}
	}
	require.Len(t, events, 3)
	assert.Equal(t, "allow", events[0]["decision"].(map[string]any)["decision"])
	assert.Equal(t, "workspace_run_shell", events[0]["action"])
	assert.Equal(t, "block", events[1]["decision"].(map[string]any)["decision"])
	assert.Equal(t, "post_action", events[2]["event_type"])
	raw, _ := json.Marshal(events[2])
	assert.NotContains(t, string(raw), "AKIAZ7Q3JX4LMNB2WQ5T", "a secret in a notification reached the audit log")
}

func TestGuardAsHarnessAnswersQueries(t *testing.T) {
	f := newFixture(t, "  rules:\n    - {id: ask-writes, actions: [workspace_apply_patch], outcome: ask, reason: a person looks first}\n", false)
	ask := func(payload string) *ahp.QueryResponse {
		r, err := f.h.HandleQuery(context.Background(), &ahp.QueryRequest{SessionID: "s", AgentID: "a", QueryType: "permission", Payload: json.RawMessage(payload)})
		require.NoError(t, err)
		return r
	}
	assert.JSONEq(t, `"yes"`, string(ask(`{"tool_name": "bash", "arguments": {"command": "ls"}}`).Answer))
	no := ask(`{"tool": "bash", "arguments": {"command": "rm -rf /"}}`)
	assert.JSONEq(t, `"no"`, string(no.Answer))
	assert.Contains(t, no.Reason, "command_not_allowed")
	assert.JSONEq(t, `"ask"`, string(ask(`{"tool_name": "Write", "arguments": {"file_path": "a.txt", "content": "x"}}`).Answer))
	assert.JSONEq(t, `"unknown"`, string(ask(`{"question": "may I delete build/?"}`).Answer))
}
