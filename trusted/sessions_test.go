package trusted

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
)

// governedServer is the API over a dispatcher with governance, as
// harness serve builds it.
func governedServer(t *testing.T, limits policy.Limits, withSessions bool) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\n"), 0o644))
	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	cfg.Harness.Workspace.Sandbox = "off"
	cfg.Harness.AutoApprovedActions = []string{"workspace_read_file"}
	cfg.Harness.Auth.Keys = []config.AuthKey{
		{Principal: "alice", SHA256: sha(keyAlice), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "bob", SHA256: sha(keyBob), Permissions: []string{"agent:execute"}},
		{Principal: "erin", Tenant: "t1", SHA256: sha(keyErin1), Permissions: []string{"admin"}},
		{Principal: "root", SHA256: sha(keyAdmin), Permissions: []string{"admin"}},
	}
	gov, err := policy.NewGovernor(policy.GovernanceOptions{Limits: limits})
	require.NoError(t, err)
	san, err := sanitize.New(sanitize.Options{Key: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	h, ws, err := runtime.Build(cfg, runtime.BuildOptions{
		Sanitizer: san, Steps: policy.Steps{Validating: []policy.Step{gov.Step()}}, Observer: gov,
	})
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	svc, err := NewService(Options{Harness: h})
	require.NoError(t, err)
	keys, err := NewKeys(cfg.Harness.Auth.Keys)
	require.NoError(t, err)
	opts := ServerOptions{Service: svc, Keys: keys}
	if withSessions {
		opts.Sessions = gov
	}
	srv, err := NewServer(opts)
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

func postRaw(t *testing.T, url, key string, body any) (*http.Response, map[string]any) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest("POST", url, bytes.NewReader(data))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var m map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	return resp, m
}

func readIn(session string) map[string]any {
	return map[string]any{"name": "workspace_read_file", "input": map[string]any{"path": "f.txt"}, "session_id": session}
}

// TestRateLimitedActionIs429WithRetryAfter: SPEC 5, a governance rate
// limit answers 429 with Retry-After on /v1/actions and on a preview;
// other governance refusals are observations (200).
func TestRateLimitedActionIs429WithRetryAfter(t *testing.T) {
	url := governedServer(t, policy.Limits{SessionRate: 2, MaxActions: 10}, true)
	for range 2 {
		resp, obs := postRaw(t, url+"/v1/actions", keyAlice, readIn("burst"))
		require.Equal(t, 200, resp.StatusCode, "%v", obs)
		require.Equal(t, "ok", obs["status"])
	}
	resp, body := postRaw(t, url+"/v1/actions", keyAlice, readIn("burst"))
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%v", body)
	require.Equal(t, "rate_limited", errCode(body))
	secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", resp.Header.Get("Retry-After"))
	assert.Equal(t, 1, secs)
	decision, _ := body["error"].(map[string]any)["decision"].(map[string]any)
	assert.Equal(t, policy.RateSession, decision["rule"])
	assert.Equal(t, policy.StepGovernance, decision["step"])

	// A preview in the same session is checked against the same bucket.
	patch := map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": "g.txt", "content": "x\n"}, "session_id": "burst"}
	resp, body = postRaw(t, url+"/v1/actions/preview", keyAlice, patch)
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%v", body)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	// Another session is not limited.
	resp, _ = postRaw(t, url+"/v1/actions", keyAlice, readIn("calm"))
	require.Equal(t, 200, resp.StatusCode)
}

// TestSessionResetNeedsAdminAndStartsTheBudgetAgain: POST
// /v1/sessions/{id}/reset, permission admin.
func TestSessionResetNeedsAdminAndStartsTheBudgetAgain(t *testing.T) {
	url := governedServer(t, policy.Limits{MaxActions: 2}, true)
	for range 2 {
		_, obs := postRaw(t, url+"/v1/actions", keyAlice, readIn("s1"))
		require.Equal(t, "ok", obs["status"])
	}
	resp, obs := postRaw(t, url+"/v1/actions", keyAlice, readIn("s1"))
	require.Equal(t, 200, resp.StatusCode, "a spent budget is an observation")
	require.Equal(t, "budget_exhausted", obs["code"])
	require.Contains(t, obs["message"], "max-actions")

	st, _ := call(t, "POST", url+"/v1/sessions/s1/reset", "", nil)
	require.Equal(t, 401, st)
	st, body := call(t, "POST", url+"/v1/sessions/s1/reset", keyAlice, nil)
	require.Equal(t, 403, st, "%v", body)
	_, obs = postRaw(t, url+"/v1/actions", keyAlice, readIn("s1"))
	require.Equal(t, "budget_exhausted", obs["code"], "a refused reset reset something")

	// A tenant-bound admin cannot reset another tenant's session.
	st, body = call(t, "POST", url+"/v1/sessions/s1/reset?tenant=t2", keyErin1, nil)
	require.Equal(t, 403, st, "%v", body)
	st, _ = call(t, "POST", url+"/v1/sessions/s1/reset", keyErin1, nil) // resets t1's s1, not this one
	require.Equal(t, 200, st)
	_, obs = postRaw(t, url+"/v1/actions", keyAlice, readIn("s1"))
	require.Equal(t, "budget_exhausted", obs["code"], "another tenant's reset reached this session")

	st, body = call(t, "POST", url+"/v1/sessions/s1/reset", keyAdmin, nil)
	require.Equal(t, 200, st, "%v", body)
	require.Equal(t, true, body["reset"])
	_, obs = postRaw(t, url+"/v1/actions", keyAlice, readIn("s1"))
	require.Equal(t, "ok", obs["status"], "%v", obs)

	st, _ = call(t, "GET", url+"/v1/sessions/s1/reset", keyAdmin, nil)
	require.Equal(t, 405, st)
}

func TestSessionResetWithoutGovernanceIs404(t *testing.T) {
	url := governedServer(t, policy.Limits{MaxActions: 2}, false)
	st, body := call(t, "POST", url+"/v1/sessions/s1/reset", keyAdmin, nil)
	require.Equal(t, 404, st, "%v", body)
}
