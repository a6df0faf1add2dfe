package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigProblemsNameLineKeyAndWhy: every kind of problem is reported in
// the configuration's own terms, with its line, and nothing else.
func TestConfigProblemsNameLineKeyAndWhy(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  map[string]string
		want []string // the problems, exactly, in order
	}{
		{"unknown key, near a valid one",
			"harness:\n  workspace:\n    write-enabeld: false\n",
			nil, []string{"line 3: harness.workspace.write-enabeld: unknown key; did you mean write-enabled?"}},
		{"unknown key in another case",
			"harness:\n  Profile: dev\n",
			nil, []string{"line 2: harness.Profile: unknown key; did you mean profile?"}},
		{"unknown key that lives at another level",
			"harness:\n  root: /srv\n",
			nil, []string{"line 2: harness.root: unknown key; did you mean harness.workspace.root?"}},
		{"keys outside harness:",
			"workspace:\n  root: /srv\n",
			nil, []string{"line 1: workspace: unknown key; did you mean harness.workspace?"}},
		{"unknown key far from any",
			"harness:\n  trusted:\n    frobnicate: 1\n",
			nil, []string{"line 3: harness.trusted.frobnicate: unknown key; the keys here are max-token-bytes-per-principal, max-tokens-per-principal, store, token-ttl-seconds"}},
		{"unknown key in a list of mappings",
			"harness:\n  auth:\n    keys:\n      - principal: a\n        sha: x\n        permissions: [admin]\n",
			nil, []string{"line 5: harness.auth.keys[0].sha: unknown key; did you mean sha256?"}},
		{"unknown key in a named server",
			"harness:\n  mcp:\n    servers:\n      fs:\n        command: [srv]\n        tool: [read]\n",
			nil, []string{"line 6: harness.mcp.servers.fs.tool: unknown key; did you mean tools?"}},
		{"a list of strings",
			"harness:\n  disabled-actions: workspace_run_shell\n",
			nil, []string{`line 2: harness.disabled-actions: must be a list of strings, not "workspace_run_shell"`}},
		{"a string in a list",
			"harness:\n  workspace:\n    allowed-commands:\n      - ls\n      - {git: status}\n",
			nil, []string{"line 5: harness.workspace.allowed-commands[1]: must be a string, not a mapping"}},
		{"a whole number",
			"harness:\n  workspace:\n    command-timeout-seconds: 10s\n",
			nil, []string{`line 3: harness.workspace.command-timeout-seconds: must be a whole number, not "10s"`}},
		{"a whole number, not a list",
			"harness:\n  trusted:\n    token-ttl-seconds: [300]\n",
			nil, []string{"line 3: harness.trusted.token-ttl-seconds: must be a whole number, not a list"}},
		{"true or false",
			"harness:\n  workspace:\n    write-enabled: maybe\n",
			nil, []string{`line 3: harness.workspace.write-enabled: must be true or false, not "maybe"`}},
		{"a mapping",
			"harness:\n  workspace: [root]\n",
			nil, []string{"line 2: harness.workspace: must be a mapping, not a list"}},
		{"a mapping of names to lists",
			"harness:\n  tenant-allowed-actions: [workspace_read_file]\n",
			nil, []string{"line 2: harness.tenant-allowed-actions: must be a mapping of names to lists of strings, not a list"}},
		{"the top level is a mapping",
			"- harness\n",
			nil, []string{"line 1: must be a mapping, not a list"}},
		{"a wrong type hides no other problem",
			"harness:\n  profile: staging\n  workspace:\n    max-file-bytes: lots\n    command-timeout-seconds: -1\n  disabled-actions: [workspace_serch_text]\n",
			nil, []string{
				`line 2: harness.profile: "staging" is not one of: dev production`,
				`line 4: harness.workspace.max-file-bytes: must be a whole number, not "lots"`,
				"line 5: harness.workspace.command-timeout-seconds: must be at least 0",
				`line 6: harness.disabled-actions[0]: "workspace_serch_text" is not a registered action; did you mean workspace_search_text?`,
			}},
		{"a wrong type is one problem, not also a missing value",
			"harness:\n  mcp:\n    servers:\n      fs:\n        command: node server.js\n",
			nil, []string{`line 5: harness.mcp.servers.fs.command: must be a list of strings, not "node server.js"`}},
		{"a missing value is placed at its mapping",
			"harness:\n  mcp:\n    servers:\n      fs:\n        tools: [read]\n",
			nil, []string{"line 5: harness.mcp.servers.fs: set command or url"}},
		{"both of two that exclude each other",
			"harness:\n  mcp:\n    servers:\n      fs: {command: [srv], url: 'http://127.0.0.1:1/mcp'}\n",
			nil, []string{"line 4: harness.mcp.servers.fs: set command or url, not both"}},
		{"a key set twice",
			"harness:\n  profile: dev\n  profile: production\n",
			nil, []string{"line 3: harness.profile: set twice (first on line 2)"}},
		{"not YAML: a list not closed",
			"harness:\n  disabled-actions: [a\n  profile: dev\n",
			nil, []string{"line 2: not valid YAML: did not find expected ',' or ']'"}},
		{"not YAML: a key out of place",
			"harness:\n  profile: dev\n - x\n",
			nil, []string{"line 3: not valid YAML: did not find expected key"}},
		{"not YAML: a tab",
			"harness:\n\tprofile: dev\n",
			nil, []string{"line 2: not valid YAML: found character that cannot start any token"}},
		{"two documents",
			"harness: {}\n---\nharness: {profile: production}\n",
			nil, []string{"line 2: a second YAML document (after ---): the configuration is one document"}},
		{"a value set by the environment",
			"harness:\n  profile: dev\n",
			map[string]string{"HARNESS_PROFILE": "prod"},
			[]string{`$HARNESS_PROFILE: harness.profile: "prod" is not one of: dev production`}},
		{"an anchor and a merge key",
			"base: &b {write-enabled: false}\nharness:\n  workspace:\n    <<: *b\n    shel-enabled: false\n",
			nil, []string{
				"line 1: base: unknown key; the keys here are harness",
				"line 5: harness.workspace.shel-enabled: unknown key; did you mean shell-enabled?",
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := Parse("c.yaml", []byte(tc.yaml))
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "want *ConfigError, got %v", err)
			assert.Equal(t, "c.yaml", ce.File)
			assert.Equal(t, tc.want, ce.Problems)
			assert.True(t, strings.HasPrefix(err.Error(), "config c.yaml: "+strconv.Itoa(len(tc.want))+" problem(s):\n  "), err.Error())
			assertNoGoWords(t, err.Error())
		})
	}
}

// goWords are how Go and the YAML library name types; a person who writes
// the configuration reads none of them.
var goWords = regexp.MustCompile(`\bu?int(8|16|32|64)?\b|\bfloat64\b|\[\]string|map\[|\*bool|!!(str|int|bool|map|seq|float)|unmarshal|reflect|struct`)

func assertNoGoWords(t *testing.T, msg string) {
	t.Helper()
	assert.False(t, goWords.MatchString(msg), "a Go word in %q", msg)
}

// TestUnknownActionNamesAreProblems: every action list is checked against
// the registered actions, and each unknown name suggests the nearest.
func TestUnknownActionNamesAreProblems(t *testing.T) {
	const servers = `  mcp:
    servers:
      fs: {command: [srv], tools: [read_text_file, write_file], register-tools: true}
      plain: {command: [srv], tools: [echo]}
`
	cases := []struct {
		name string
		yaml string
		want []string
	}{
		{"disabled-actions",
			"harness:\n  disabled-actions: [workspace_serch_text]\n",
			[]string{`line 2: harness.disabled-actions[0]: "workspace_serch_text" is not a registered action; did you mean workspace_search_text?`}},
		{"auto-approved-actions, one per line",
			"harness:\n  auto-approved-actions:\n    - workspace_read_file\n    - workspace_list_file\n",
			[]string{`line 4: harness.auto-approved-actions[1]: "workspace_list_file" is not a registered action; did you mean workspace_list_files?`}},
		{"tenant-allowed-actions values",
			"harness:\n  tenant-allowed-actions:\n    acme: [workspace_read_file]\n    beta: [workspace_raed_file]\n",
			[]string{`line 4: harness.tenant-allowed-actions.beta[0]: "workspace_raed_file" is not a registered action; did you mean workspace_read_file?`}},
		{"mcp.bridge.trusted-actions",
			"harness:\n  mcp:\n    bridge:\n      trusted-actions: [workspace_apply_pach]\n",
			[]string{`line 4: harness.mcp.bridge.trusted-actions[0]: "workspace_apply_pach" is not a registered action; did you mean workspace_apply_patch?`}},
		{"a name far from every action lists them",
			"harness:\n  disabled-actions: [shell]\n",
			[]string{`line 2: harness.disabled-actions[0]: "shell" is not a registered action; the registered actions are mcp_call, workspace_apply_patch, workspace_list_files, workspace_propose_patch, workspace_read_file, workspace_run_shell, workspace_search_text`}},
		{"a server's tool is registered with register-tools",
			"harness:\n  auto-approved-actions: [mcp.fs.read_text_file, mcp.fs.read_txt_file]\n" + servers,
			[]string{`line 2: harness.auto-approved-actions[1]: "mcp.fs.read_txt_file" is not a registered action; did you mean mcp.fs.read_text_file?`}},
		{"a tool the server does not list",
			"harness:\n  auto-approved-actions: [mcp.fs.delete]\n" + servers,
			[]string{`line 2: harness.auto-approved-actions[0]: "mcp.fs.delete" is not a registered action; delete is not among harness.mcp.servers.fs.tools`}},
		{"a server without register-tools",
			"harness:\n  auto-approved-actions: [mcp.plain.echo]\n" + servers,
			[]string{`line 2: harness.auto-approved-actions[0]: "mcp.plain.echo" is not a registered action; MCP server plain does not set register-tools, so its tools are not actions of their own (set register-tools: true, or call them through mcp_call)`}},
		{"an unknown server",
			"harness:\n  auto-approved-actions: [mcp.fz.read_text_file]\n" + servers,
			[]string{`line 2: harness.auto-approved-actions[0]: "mcp.fz.read_text_file" is not a registered action; did you mean mcp.fs.read_text_file?`}},
		{"every list at once",
			"harness:\n  disabled-actions: [a_b]\n  auto-approved-actions: [workspace_read_fil]\n  tenant-allowed-actions: {t: [mcp_cal]}\n",
			[]string{
				`line 2: harness.disabled-actions[0]: "a_b" is not a registered action; the registered actions are mcp_call, workspace_apply_patch, workspace_list_files, workspace_propose_patch, workspace_read_file, workspace_run_shell, workspace_search_text`,
				`line 3: harness.auto-approved-actions[0]: "workspace_read_fil" is not a registered action; did you mean workspace_read_file?`,
				`line 4: harness.tenant-allowed-actions.t[0]: "mcp_cal" is not a registered action; did you mean mcp_call?`,
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			var ce *ConfigError
			require.True(t, errors.As(err, &ce), "want *ConfigError, got %v", err)
			assert.Equal(t, tc.want, ce.Problems)
		})
	}
}

func TestWithActionsAllowsAProgramsOwnActions(t *testing.T) {
	const yaml = "harness:\n  auto-approved-actions: [slow_write]\n  tenant-allowed-actions: {acme: [echo]}\n"
	_, err := Parse("c.yaml", []byte(yaml))
	require.Error(t, err, "an action nobody registered is accepted")
	c, err := Parse("c.yaml", []byte(yaml), WithActions("slow_write", "echo"))
	require.NoError(t, err)
	assert.Equal(t, []string{"slow_write"}, c.Harness.AutoApprovedActions)

	// Validate checks a configuration built in Go the same way, without lines.
	c = Default()
	c.Harness.DisabledActions = []string{"workspace_serch_text"}
	err = c.Validate("")
	require.Error(t, err)
	assert.Equal(t, "config (no file): 1 problem(s):\n  harness.disabled-actions[0]: \"workspace_serch_text\" is not a registered action; did you mean workspace_search_text?", err.Error())
	c.Harness.DisabledActions = []string{"mine"}
	assert.NoError(t, c.Validate("", WithActions("mine")))
}

// A resolved dev configuration auto-approves the reads; disabling one of
// them in the file is not a contradiction, listing it in both is.
func TestDisabledAndAutoApprovedOverlap(t *testing.T) {
	c, err := Parse("c.yaml", []byte("harness:\n  disabled-actions: [workspace_search_text]\n"))
	require.NoError(t, err)
	assert.NoError(t, c.Validate("c.yaml"), "the dev default list is not the file's")
	_, err = Parse("c.yaml", []byte("harness:\n  disabled-actions: [workspace_search_text]\n  auto-approved-actions: [workspace_read_file, workspace_search_text]\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 3: harness.auto-approved-actions[1]: workspace_search_text is also in harness.disabled-actions")
}

// Aliases and merge keys that multiply without end cost a bounded amount
// of work, and are a problem.
func TestAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 {profile: dev}\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "a%d: &a%d {<<: [", i, i)
		for j := 0; j < 8; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]}\n")
	}
	b.WriteString("harness:\n  <<: *a30\n")
	done := make(chan error, 1)
	go func() { _, err := Parse("bomb.yaml", []byte(b.String())); done <- err }()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "too many values")
	case <-time.After(30 * time.Second):
		t.Fatal("an alias bomb is still being decoded")
	}
}
