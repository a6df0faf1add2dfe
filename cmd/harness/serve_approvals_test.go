package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/internal/testkit"
)

// Keys of the approvals replicas test.
const (
	apprAgentKey    = "serve-appr-agent-81c2"
	apprReviewerKey = "serve-appr-reviewer-4e07"
)

func keyHash(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

// callAs sends one request with key and decodes the JSON answer.
func callAs(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := serveClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestServeApprovalsAcrossRedisReplicas runs two `harness serve`
// processes on one workspace and one Redis store, with a rule that asks
// before patches: the agent's patch waits as an approval on replica A,
// the reviewer lists and approves it on replica B, the agent's long poll
// on A gets the token, and B runs exactly the change, once. Each replica
// also serves the console.
func TestServeApprovalsAcrossRedisReplicas(t *testing.T) {
	testkit.Redis(t) // reachable, or skipped (failed under CI=true)
	bin := harnessBinary(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\n"), 0o644))
	keyPath := filepath.Join(dir, "hmac.key")
	config := func(name string) string {
		y := fmt.Sprintf(`harness:
  profile: dev
  workspace: {root: %s}
  trusted: {store: %q}
  audit: {path: %q, instance: %s}
  sanitize: {key-path: %s}
  rules:
    - {id: ask-writes, actions: [workspace_apply_patch], outcome: ask, reason: a person looks first}
  auth:
    keys:
      - {principal: agent, sha256: "%s", permissions: [agent:execute, agent:trusted]}
      - {principal: reviewer, sha256: "%s", permissions: [agent:approve, agent:audit]}
`, root, testkit.RedisURL(), filepath.Join(dir, name+".jsonl"), name, keyPath, keyHash(apprAgentKey), keyHash(apprReviewerKey))
		p := filepath.Join(dir, name+".yaml")
		require.NoError(t, os.WriteFile(p, []byte(y), 0o600))
		return p
	}
	a := startServe(t, bin, config("a"))
	b := startServe(t, bin, config("b"))

	// A session of its own: its governance counters live in the shared
	// Redis and would otherwise carry over from earlier runs (an identical
	// action repeated across runs is a repeated_action).
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	act := map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": "a.txt", "content": "one\nTWO\n"},
		"session_id": "approvals-replicas-" + hex.EncodeToString(nonce[:])}
	st, obs := callAs(t, "POST", a.URL+"/v1/actions", apprAgentKey, act)
	require.Equal(t, 200, st)
	require.Equal(t, "needs_confirmation", obs["status"], "%v", obs)
	id := obs["approval"].(map[string]any)["id"].(string)

	st, list := callAs(t, "GET", b.URL+"/v1/approvals?status=pending", apprReviewerKey, nil)
	require.Equal(t, 200, st)
	var mine map[string]any
	for _, x := range list["approvals"].([]any) {
		if m := x.(map[string]any); m["id"] == id {
			mine = m
		}
	}
	require.NotNil(t, mine, "replica B lists replica A's approval")
	require.Contains(t, fmt.Sprint(mine["preview"]), "TWO")

	st, v := callAs(t, "POST", b.URL+"/v1/approvals/"+id+"/approve", apprReviewerKey, map[string]any{"scope": "once"})
	require.Equal(t, 200, st, "%v", v)
	st, v = callAs(t, "GET", a.URL+"/v1/approvals/"+id+"?wait=5", apprAgentKey, nil)
	require.Equal(t, 200, st)
	tok, _ := v["token"].(string)
	require.NotEmpty(t, tok, "%v", v)
	st, v = callAs(t, "GET", b.URL+"/v1/approvals/"+id, apprAgentKey, nil)
	require.Equal(t, 200, st)
	require.Nil(t, v["token"], "the token is handed out once, on any replica")

	st, obs = callAs(t, "POST", b.URL+"/v1/actions/execute/"+tok, apprAgentKey, nil)
	require.Equal(t, 200, st, "%v", obs)
	require.Equal(t, "ok", obs["status"], "%v", obs)
	require.Equal(t, "one\nTWO\n", readFile(t, root, "a.txt"))
	st, _ = callAs(t, "POST", a.URL+"/v1/actions/execute/"+tok, apprAgentKey, nil)
	require.Equal(t, 404, st)

	// The decision is in the audit log of the replica that took it.
	logB, err := os.ReadFile(filepath.Join(dir, "b.jsonl"))
	require.NoError(t, err)
	require.Contains(t, string(logB), `"approver":"reviewer"`)

	for _, r := range []*replica{a, b} {
		resp, err := testHTTP.Get(r.URL + "/console/")
		require.NoError(t, err)
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		require.True(t, strings.Contains(string(page), "<form") || strings.Contains(string(page), "<button"), "the console's page")
	}
}
