package pipeline_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/policy"
)

// governed opens the pipeline of yaml (workspace root and sandbox added)
// on a root holding files, and returns it with its audit log's path.
func governed(t *testing.T, yaml string, files map[string]string) (*pipeline.Pipeline, string) {
	t.Helper()
	h := home(t)
	root := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(content), 0o644))
	}
	cfg, err := config.Parse("test.yaml", []byte("harness:\n  workspace: {root: "+strconv.Quote(root)+", sandbox: \"off\"}\n"+yaml))
	require.NoError(t, err)
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p, filepath.Join(h, "state", "harness", "audit.jsonl")
}

// auditEvents reads the events the audit log recorded for action id.
func auditEvents(t *testing.T, path, id string) map[ahp.EventType]ahp.Event {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[ahp.EventType]ahp.Event{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Event json.RawMessage `json:"event"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
		var ev ahp.Event
		if json.Unmarshal(rec.Event, &ev) == nil && ev.Payload != nil && ev.Payload.ActionID == id {
			out[ev.EventType] = ev
		}
	}
	require.NoError(t, sc.Err())
	return out
}

// model is a scripted agent: it proposes the next action from the last
// observation, as a ReAct loop's model does, until it says finish.
type model func(step int, last *action.Observation) (action.Action, bool)

// loop runs m against p for at most max steps and returns every
// observation; it stops at the first governance halt, as an agent's loop
// does when it is told to stop.
func loop(p *pipeline.Pipeline, m model, max int) []action.Observation {
	var obs []action.Observation
	var last *action.Observation
	for step := range max {
		a, more := m(step, last)
		if !more {
			break
		}
		a.SessionID, a.StepID, a.Trusted = "react-1", string(rune('0'+step%10)), true
		o := p.Execute(context.Background(), a)
		obs = append(obs, o)
		last = &obs[len(obs)-1]
		if o.Code == action.CodeRepeatedAction || o.Code == action.CodeBudgetExhausted {
			break
		}
	}
	return obs
}

// TestReActLoopRepeatingAFailingCommandIsHalted: a model that keeps
// issuing the same failing command is stopped by the default
// repeat-failing (3) on its fourth try, and the audit record says why.
func TestReActLoopRepeatingAFailingCommandIsHalted(t *testing.T) {
	p, auditPath := governed(t, "", nil)
	stubborn := func(int, *action.Observation) (action.Action, bool) {
		return action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": "ls no-such-dir"}}, true
	}
	obs := loop(p, stubborn, 20)
	require.Len(t, obs, 4, "halted on the fourth step")
	for i, o := range obs[:3] {
		require.Equal(t, action.StatusOK, o.Status, "step %d: %s", i, o.JSON())
		require.NotZero(t, o.Payload["exit_code"], "step %d: the command failed", i)
	}
	halt := obs[3]
	require.Equal(t, action.CodeRepeatedAction, halt.Code, halt.JSON())
	require.Equal(t, action.StatusBlocked, halt.Status)
	require.Equal(t, action.SourcePolicy, halt.Source)
	require.Equal(t, "repeat-failing", halt.Decision.Rule)
	require.Equal(t, "governance", halt.Decision.Step)

	evs := auditEvents(t, auditPath, halt.ActionID)
	pre := evs[ahp.PreAction]
	require.NotNil(t, pre.Payload, "no pre_action record of the halt")
	require.Equal(t, "repeat-failing", pre.Payload.Decision.Rule)
	g := pre.Payload.Governance
	require.False(t, g.IsZero(), "the decision's record carries no counters")
	assert.Equal(t, int64(3), g.FailingRepeats)
	assert.Equal(t, int64(3), g.Actions)
	assert.Equal(t, int64(3), g.Errors)
	assert.False(t, g.Counted)
	post := evs[ahp.PostAction].Payload.Governance
	require.False(t, post.IsZero())
	assert.Equal(t, int64(1), post.Refusals, "the halt is counted as a refusal")
}

// TestReActLoopExhaustingMaxActions: a model that keeps working is stopped
// when the session's max-actions is spent, and every record of the session
// shows what remains.
func TestReActLoopExhaustingMaxActions(t *testing.T) {
	p, auditPath := governed(t, "  governance: {max-actions: 5}\n", map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	busy := func(step int, _ *action.Observation) (action.Action, bool) {
		if step%2 == 0 {
			return action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}}, true
		}
		return action.Action{Name: "workspace_list_files", Input: map[string]any{}}, true
	}
	obs := loop(p, busy, 20)
	require.Len(t, obs, 6)
	for i, o := range obs[:5] {
		require.Equal(t, action.StatusOK, o.Status, "step %d: %s", i, o.JSON())
		g := auditEvents(t, auditPath, o.ActionID)[ahp.PreAction].Payload.Governance
		left, ok := g.Remaining.Get("max-actions")
		require.True(t, ok, "step %d: no max-actions in the record", i)
		assert.Equal(t, int64(5-(i+1)), left, "step %d", i)
	}
	require.Equal(t, action.CodeBudgetExhausted, obs[5].Code, obs[5].JSON())
	require.Equal(t, "max-actions", obs[5].Decision.Rule)
	require.Contains(t, obs[5].Message, "max-actions")

	// An operator resets the session; the loop can go on.
	require.NoError(t, p.Governor.Reset(context.Background(), policy.SessionKey{Session: "react-1"}))
	more := loop(p, busy, 1)
	require.Equal(t, action.StatusOK, more[0].Status, more[0].JSON())
}

// The secrets a command prints, as the contract plants them.
const (
	awsKey      = "AKIA2E0A8F3B244C9986"
	githubToken = "ghp_R8x2Lk9Qm4Tz7Vb1Nc6Yd3Wf5Hj0Ps2Ua8Ee"
)

// TestRedactedCommandOutputKeepsSecretsFromTheModel: with
// redact-observations, a command printing an AWS key and a GitHub token
// gives the model markers instead, the observation counts them, and the
// audit record names the markers; without it (the dev default) the model
// sees them, which shows the test is not vacuous. The audit log never holds
// them either way.
func TestRedactedCommandOutputKeepsSecretsFromTheModel(t *testing.T) {
	files := map[string]string{
		"Makefile": "leak:\n\t@echo 'aws_access_key_id = " + awsKey + "'\n\t@echo 'github = " + githubToken + "'\n",
		"leak.txt": "key " + awsKey + "\ntoken " + githubToken + "\n",
	}
	for _, tc := range []struct {
		name   string
		yaml   string
		redact bool
	}{
		{"redaction on", "  redact-observations: true\n", true},
		{"dev default, off", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, auditPath := governed(t, tc.yaml, files)
			for _, a := range []action.Action{
				{Name: "workspace_run_shell", Input: map[string]any{"command": "make leak"}, Trusted: true},
				{Name: "workspace_read_file", Input: map[string]any{"path": "leak.txt"}, Trusted: true},
			} {
				obs := p.Execute(context.Background(), a)
				require.Equal(t, action.StatusOK, obs.Status, obs.JSON())
				text := string(obs.JSON())
				log, err := os.ReadFile(auditPath)
				require.NoError(t, err)
				for _, secret := range []string{awsKey, githubToken} {
					require.NotContains(t, string(log), secret, "a secret reached the audit log")
					if !tc.redact {
						require.Contains(t, text, secret, "the control: without redaction the model sees it")
						continue
					}
					require.NotContains(t, text, secret, "a secret reached the model")
				}
				post := auditEvents(t, auditPath, obs.ActionID)[ahp.PostAction].Payload.Observation
				if !tc.redact {
					require.Nil(t, post.Redacted)
					continue
				}
				red, ok := obs.Payload["redacted"].(ahp.Redaction)
				require.True(t, ok, "the observation does not say what was redacted: %s", text)
				require.Equal(t, 2, red.Count)
				require.Len(t, red.Markers, 2)
				require.NotNil(t, post.Redacted, "the audit record does not name the markers")
				require.Equal(t, red, *post.Redacted)
				for _, m := range red.Markers {
					require.True(t, strings.HasPrefix(m, "hmac-sha256:"))
					require.Contains(t, text, m, "the model sees the marker where the secret was")
				}
			}
		})
	}
}

// TestRuleWithRedactFalseShowsAFixtureAsWritten: with redact-observations
// on, a read that a rule with redact: false decides reaches the model as
// written (a fixture of sample keys), while a read of another file with
// the same content is redacted; the audit log holds neither secret.
func TestRuleWithRedactFalseShowsAFixtureAsWritten(t *testing.T) {
	content := "key " + awsKey + "\ntoken " + githubToken + "\n"
	p, auditPath := governed(t, `  redact-observations: true
  rules:
    - id: fixtures-as-written
      actions: [workspace_read_file]
      when: 'glob(path, "fixture-*.txt")'
      outcome: allow
      redact: false
      examples: {match: [{path: fixture-keys.txt}], not_match: [{path: leak.txt}]}
`, map[string]string{"fixture-keys.txt": content, "leak.txt": content})
	read := func(path string) action.Observation {
		obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": path}, Trusted: true})
		require.Equal(t, action.StatusOK, obs.Status, obs.JSON())
		return obs
	}
	fixture := read("fixture-keys.txt")
	assert.Equal(t, content, fixture.Payload["content"], "the exempted read was changed")
	assert.NotContains(t, fixture.Payload, "redacted")

	leak := read("leak.txt")
	text := string(leak.JSON())
	for _, secret := range []string{awsKey, githubToken} {
		assert.NotContains(t, text, secret, "a read no rule exempts was not redacted")
	}
	assert.Contains(t, leak.Payload, "redacted")

	log, err := os.ReadFile(auditPath)
	require.NoError(t, err)
	for _, secret := range []string{awsKey, githubToken} {
		assert.NotContains(t, string(log), secret, "the audit log's own sanitizer still applies")
	}
}

// TestReadmeRulesSnippetLoads: the README's configuration of rules,
// governance and redaction is one a deployment can use as written.
func TestReadmeRulesSnippetLoads(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	section := string(readme)
	start := strings.Index(section, "## Rules and governance")
	require.GreaterOrEqual(t, start, 0, "README has no section Rules and governance")
	section = section[start:]
	a := strings.Index(section, "```yaml\n")
	require.GreaterOrEqual(t, a, 0)
	b := strings.Index(section[a+8:], "```")
	require.GreaterOrEqual(t, b, 0)
	cfg, err := config.Parse("README.md", []byte(section[a+8:a+8+b]))
	require.NoError(t, err)
	ids := []string{}
	for _, r := range cfg.Harness.Rules {
		ids = append(ids, r.ID)
	}
	assert.Equal(t, []string{"ask-before-push", "no-dotenv", "fixtures-as-written"}, ids)
	require.NotNil(t, cfg.Harness.Rules[2].Redact)
	assert.False(t, *cfg.Harness.Rules[2].Redact)
}
