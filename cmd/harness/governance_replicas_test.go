package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/policy"
)

// replicaAdminKey is the bearer token of the operator who resets sessions.
const replicaAdminKey = "replica-admin-key-9c2f"

// writeGovernedReplicaConfig writes the configuration of one replica of a
// deployment whose governance counters live in the Redis at store:
// max-actions as given (repeat halts off: the load repeats one read on
// purpose), an agent key (alice) and an operator key (ops, admin).
func writeGovernedReplicaConfig(t *testing.T, root, store, instance, keyPath string, maxActions int) string {
	t.Helper()
	agent := sha256.Sum256([]byte(serveKey))
	admin := sha256.Sum256([]byte(replicaAdminKey))
	y := fmt.Sprintf(`harness:
  profile: dev
  workspace:
    root: %s
  trusted:
    store: %s
  audit:
    path: %q
    instance: %q
  sanitize:
    key-path: %s
  governance: {max-actions: %d, repeat-failing: 0, repeat-identical: 0}
  auth:
    keys:
      - {principal: alice, sha256: "%s", permissions: [agent:execute, agent:trusted]}
      - {principal: ops, sha256: "%s", permissions: [admin]}
`, root, store, filepath.Join(t.TempDir(), "audit.jsonl"), instance, keyPath, maxActions,
		hex.EncodeToString(agent[:]), hex.EncodeToString(admin[:]))
	p := filepath.Join(t.TempDir(), "harness.yaml")
	require.NoError(t, os.WriteFile(p, []byte(y), 0o600))
	return p
}

// postAs posts body to url with bearer key and returns the status and the
// decoded answer.
func postAs(t *testing.T, key, url string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest("POST", url, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := serveClient.Do(req)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return 0, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Errorf("POST %s: answer: %v", url, err)
	}
	return resp.StatusCode, m
}

// TestGovernanceReplicasShareOneBudget runs two `harness serve` processes
// whose governance counters live in one Redis: a session's max-actions is
// one budget across both. Of many concurrent actions of one session spread
// over both replicas exactly max-actions run and every other one is
// refused with budget_exhausted naming max-actions; the next one is
// refused on either replica; an operator's reset through one replica
// (POST /v1/sessions/{id}/reset, permission admin) gives the budget back
// on the other, which then again admits exactly max-actions.
func TestGovernanceReplicasShareOneBudget(t *testing.T) {
	const maxActions = 7
	bin := harnessBinary(t)
	rc := testkit.Redis(t) // fails, not skips, when CI=true and Redis is away
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\n"), 0o644))
	keyPath := filepath.Join(t.TempDir(), "hmac.key") // one installation, two replicas
	a := startServe(t, bin, writeGovernedReplicaConfig(t, root, testkit.RedisURL(), "replica-a", keyPath, maxActions))
	b := startServe(t, bin, writeGovernedReplicaConfig(t, root, testkit.RedisURL(), "replica-b", keyPath, maxActions))
	replicas := []*replica{a, b}

	var nonce [6]byte
	rand.Read(nonce[:])
	session := "replicas-" + hex.EncodeToString(nonce[:])
	t.Cleanup(func() {
		rc.Del(context.Background(), policy.DefaultGovernancePrefix+"session:"+policy.SessionKey{Session: session}.String())
	})
	act := map[string]any{"name": "workspace_list_files", "input": map[string]any{}, "session_id": session}

	// burst sends n actions of the session at once, alternating replicas,
	// and returns how many ran on each replica and how many were refused
	// (each refusal checked to be the budget's).
	burst := func(t *testing.T, n int) (ran [2]int, refused int) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				st, o := postAs(t, serveKey, replicas[i%2].URL+"/v1/actions", act)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case st == 200 && o["status"] == "ok":
					ran[i%2]++
				case st == 200 && o["code"] == "budget_exhausted":
					refused++
					d, _ := o["decision"].(map[string]any)
					assert.Equal(t, "max-actions", d["rule"], "%v", o)
					assert.Equal(t, "blocked", o["status"], "%v", o)
				default:
					t.Errorf("unexpected answer %d: %v", st, o)
				}
			}()
		}
		close(start)
		wg.Wait()
		return ran, refused
	}

	const load = 60
	ran, refused := burst(t, load)
	require.Equal(t, maxActions, ran[0]+ran[1], "actions run across both replicas (a %d, b %d)", ran[0], ran[1])
	require.Equal(t, load-maxActions, refused)

	// The (N+1)th, on either replica, is refused with the governance code.
	for _, r := range replicas {
		st, o := postAs(t, serveKey, r.URL+"/v1/actions", act)
		require.Equal(t, 200, st, "%v", o)
		require.Equal(t, "budget_exhausted", o["code"], "%v", o)
		require.Contains(t, o["message"], "max-actions")
	}

	// Resetting needs admin.
	st, o := postAs(t, serveKey, a.URL+"/v1/sessions/"+session+"/reset", map[string]any{})
	require.Equal(t, 403, st, "an agent key resets nothing: %v", o)

	// An operator resets the session on replica a; replica b sees it.
	st, o = postAs(t, replicaAdminKey, a.URL+"/v1/sessions/"+session+"/reset", map[string]any{})
	require.Equal(t, 200, st, "%v", o)
	require.Equal(t, true, o["reset"])
	st, o = postAs(t, serveKey, b.URL+"/v1/actions", act)
	require.Equal(t, 200, st, "%v", o)
	require.Equal(t, "ok", o["status"], "after the reset on a, b admits again: %v", o)

	// The budget starts again from that one action, still shared exactly.
	ran, refused = burst(t, load)
	require.Equal(t, maxActions-1, ran[0]+ran[1], "after the reset (a %d, b %d)", ran[0], ran[1])
	require.Equal(t, load-(maxActions-1), refused)
}
