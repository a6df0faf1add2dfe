package trusted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
)

func TestPreviewThenExecuteRunsThePatchOnce(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	st, p := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, patchAction("f.txt", "one\n2\n"))
	require.Equal(t, 200, st, "%v", p)
	require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"), "preview must not write")
	require.Regexp(t, `^htk_[A-Za-z0-9_-]{43}$`, p["token"])
	require.Len(t, p["action_hash"], 64)
	exp, err := time.Parse(time.RFC3339Nano, p["expires_at"].(string))
	require.NoError(t, err)
	require.WithinDuration(t, f.Clock.Now().Add(DefaultTTL), exp, time.Second)
	pv := p["preview"].(map[string]any)
	require.Contains(t, pv["diff"], "-two\n+2\n")
	files := pv["files"].([]any)
	require.Len(t, files, 1)
	require.Equal(t, sha("one\ntwo\n"), files[0].(map[string]any)["sha256_before"])

	want, err := (action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "f.txt", "content": "one\n2\n"}}).Hash()
	require.NoError(t, err)
	require.Equal(t, want, p["action_hash"], "the token is bound to the canonical action hash")

	st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+p["token"].(string), keyAlice, nil)
	require.Equal(t, 200, st, "%v", o)
	require.Equal(t, "ok", o["status"], "%v", o)
	require.Equal(t, "one\n2\n", f.read(t, "f.txt"))

	st, o = call(t, "POST", f.URL+"/v1/actions/execute/"+p["token"].(string), keyAlice, nil)
	require.Equal(t, 404, st)
	require.Equal(t, "not_found", errCode(o))
}

func TestUnknownUsedExpiredForeignTokensLookTheSame(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	used := f.preview(t, keyAlice, patchAction("a.txt", "a\n"))
	st, _ := call(t, "POST", f.URL+"/v1/actions/execute/"+used, keyAlice, nil)
	require.Equal(t, 200, st)
	foreign := f.preview(t, keyAlice, patchAction("b.txt", "b\n"))
	tenant := f.preview(t, keyErin1, patchAction("c.txt", "c\n"))
	unknown, _, _ := NewToken()

	cases := []struct{ name, key, token string }{
		{"unknown", keyAlice, unknown},
		{"malformed", keyAlice, "not-a-token"},
		{"used", keyAlice, used},
		{"foreign principal", keyCarol, foreign},
		{"same principal, other tenant", keyErin2, tenant},
	}
	var bodies []string
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+c.token, c.key, nil)
			require.Equal(t, 404, st)
			require.Equal(t, "not_found", errCode(o))
			b, _ := json.Marshal(o)
			bodies = append(bodies, string(b))
		})
	}
	for _, b := range bodies {
		require.Equal(t, bodies[0], b, "every refusal must read the same")
	}
	require.Equal(t, "<absent>", f.read(t, "b.txt"))
	require.Equal(t, "<absent>", f.read(t, "c.txt"))
	// A foreign attempt does not burn the token: its owner still redeems it.
	st, _ = call(t, "POST", f.URL+"/v1/actions/execute/"+foreign, keyAlice, nil)
	require.Equal(t, 200, st)
	st, _ = call(t, "POST", f.URL+"/v1/actions/execute/"+tenant, keyErin1, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "c\n", f.read(t, "c.txt"))
}

func TestExpiredTokenNeverRuns(t *testing.T) {
	f := newFixture(t, fixtureOpts{cfg: func(c *config.Config) { c.Harness.Trusted.TokenTTLSeconds = 60 }})
	tok := f.preview(t, keyAlice, patchAction("f.txt", "expired\n"))
	f.Clock.Advance(61 * time.Second)
	st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
	require.Equal(t, 404, st)
	require.Equal(t, "not_found", errCode(o))
	require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"))
	_, m := metricsText(t, f)
	require.Contains(t, m, `harness_trusted_tokens_total{event="expired"} 1`)
}

func TestTokenForActionANeverRunsActionB(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tok := f.preview(t, keyAlice, patchAction("a.txt", "A\n"))
	// Whatever a caller sends with the execute call is ignored.
	st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, patchAction("b.txt", "B\n"))
	require.Equal(t, 200, st, "%v", o)
	require.Equal(t, "A\n", f.read(t, "a.txt"))
	require.Equal(t, "<absent>", f.read(t, "b.txt"))

	// A store that hands back another action than the one hashed at preview
	// (tampering, corruption) is refused before anything runs.
	token, id, err := NewToken()
	require.NoError(t, err)
	a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "a2.txt", "content": "A\n"}}
	b := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "b2.txt", "content": "B\n"}}
	ha, _ := a.Hash()
	now := f.Clock.Now()
	require.NoError(t, f.Service.Store().Put(t.Context(), id, Record{Action: b, ActionHash: ha, Principal: "alice", CreatedAt: now, ExpiresAt: now.Add(time.Minute)}))
	st, o = call(t, "POST", f.URL+"/v1/actions/execute/"+token, keyAlice, nil)
	require.Equal(t, 500, st, "%v", o)
	require.Equal(t, "<absent>", f.read(t, "a2.txt"))
	require.Equal(t, "<absent>", f.read(t, "b2.txt"))
}

func TestStalePreviewIsRefusedAndTouchesNothing(t *testing.T) {
	cases := []struct {
		name   string
		action map[string]any
		change func(f *fixture)
		check  string // file whose content must be what change left
		want   string
	}{
		{"modified file changed", patchAction("f.txt", "new\n"), func(f *fixture) { f.write(t, "f.txt", "changed by someone\n") }, "f.txt", "changed by someone\n"},
		{"modified file removed", patchAction("f.txt", "new\n"), func(f *fixture) { os.Remove(filepath.Join(f.Root, "f.txt")) }, "f.txt", "<absent>"},
		{"created file appeared", patchAction("n.txt", "new\n"), func(f *fixture) { f.write(t, "n.txt", "theirs\n") }, "n.txt", "theirs\n"},
		{"patch target changed", map[string]any{"name": "workspace_apply_patch", "input": map[string]any{
			"path": "f.txt", "patch": "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"}},
			func(f *fixture) { f.write(t, "f.txt", "one\ntwo\nthree\n") }, "f.txt", "one\ntwo\nthree\n"},
		{"rename target appeared", map[string]any{"name": "workspace_apply_patch", "input": map[string]any{
			"patch": "*** Begin Patch\n*** Update File: f.txt\n*** Move to: g.txt\n@@\n one\n-two\n+2\n*** End Patch\n"}},
			func(f *fixture) { f.write(t, "g.txt", "theirs\n") }, "g.txt", "theirs\n"},
		{"rename source changed", map[string]any{"name": "workspace_apply_patch", "input": map[string]any{
			"patch": "*** Begin Patch\n*** Update File: f.txt\n*** Move to: g.txt\n@@\n one\n-two\n+2\n*** End Patch\n"}},
			func(f *fixture) { f.write(t, "f.txt", "one\ntwo\n\n") }, "g.txt", "<absent>"},
		{"deleted file changed", map[string]any{"name": "workspace_apply_patch", "input": map[string]any{
			"patch": "diff --git a/f.txt b/f.txt\ndeleted file mode 100644\n--- a/f.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"}},
			func(f *fixture) { f.write(t, "f.txt", "keep me\n") }, "f.txt", "keep me\n"},
		{"second file of a multi-file patch changed", map[string]any{"name": "workspace_apply_patch", "input": map[string]any{
			"patch": "*** Begin Patch\n*** Update File: f.txt\n@@\n one\n-two\n+2\n*** Add File: h.txt\n+new\n*** End Patch\n"}},
			func(f *fixture) { f.write(t, "h.txt", "theirs\n") }, "f.txt", "one\ntwo\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			tok := f.preview(t, keyAlice, c.action)
			c.change(f)
			st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
			require.Equal(t, 409, st, "%v", o)
			require.Equal(t, "stale_preview", errCode(o))
			require.Equal(t, c.want, f.read(t, c.check))
			st, _ = call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
			require.Equal(t, 404, st, "a stale token is used up")
		})
	}
}

func TestConcurrentRedeemExactlyOneWins(t *testing.T) {
	stores := map[string]func(t *testing.T) TokenStore{
		"memory": func(t *testing.T) TokenStore { return nil },
		"redis":  storeFactories()["redis"],
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{store: open(t)})
			tok := f.preview(t, keyAlice, patchAction("race.txt", "won\n"))
			var mu sync.Mutex
			codes := map[int]int{}
			var wg sync.WaitGroup
			for i := 0; i < 200; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					st, _ := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
					mu.Lock()
					codes[st]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			require.Equal(t, map[int]int{200: 1, 404: 199}, codes)
			require.Equal(t, "won\n", f.read(t, "race.txt"))
		})
	}
}

// TestBadInputKeepsServing sends every kind of bad request, checks each
// status and code, and then a good request.
func TestBadInputKeepsServing(t *testing.T) {
	f := newFixture(t, fixtureOpts{maxBody: 1 << 20})
	good := patchAction("f.txt", "good\n")
	cases := []struct {
		name, method, path, key string
		body                    any
		status                  int
		code                    string
	}{
		{"malformed JSON", "POST", "/v1/actions/preview", keyAlice, "{not json", 400, "invalid_json"},
		{"empty body", "POST", "/v1/actions/preview", keyAlice, "", 400, "invalid_json"},
		{"name not a string", "POST", "/v1/actions/preview", keyAlice, `{"name": 5}`, 400, "invalid_input"},
		{"input not an object", "POST", "/v1/actions", keyAlice, `{"name": "echo", "input": "x"}`, 400, "invalid_input"},
		{"unknown field", "POST", "/v1/actions", keyAlice, `{"name": "echo", "input": {}, "bogus": 1}`, 400, "invalid_input"},
		{"two values", "POST", "/v1/actions", keyAlice, `{"name": "echo"} {"name": "echo"}`, 400, "invalid_json"},
		{"array body", "POST", "/v1/actions/preview", keyAlice, `[1,2]`, 400, "invalid_input"},
		{"wrong input types", "POST", "/v1/actions/preview", keyAlice, `{"name": "workspace_apply_patch", "input": {"path": 3, "content": true}}`, 400, "invalid_input"},
		{"unknown action", "POST", "/v1/actions/preview", keyAlice, `{"name": "no_such", "input": {}}`, 400, "unknown_action"},
		{"path outside root", "POST", "/v1/actions/preview", keyAlice, patchAction("../escape.txt", "x"), 403, "path_outside_root"},
		{"absolute path", "POST", "/v1/actions/preview", keyAlice, patchAction("/etc/passwd", "x"), 403, "path_outside_root"},
		{"huge body", "POST", "/v1/actions/preview", keyAlice, strings.Repeat("x", 2<<20), 413, "too_large"},
		{"unknown route", "GET", "/v2/nothing", keyAlice, nil, 404, "not_found"},
		{"empty token", "POST", "/v1/actions/execute/", keyAlice, nil, 404, "not_found"},
		{"wrong method", "GET", "/v1/actions/preview", keyAlice, nil, 405, "method_not_allowed"},
		{"no credentials", "POST", "/v1/actions/preview", "", good, 401, "unauthorized"},
		{"bad credentials", "POST", "/v1/actions/preview", "wrong-key", good, 401, "unauthorized"},
		{"no credentials on execute", "POST", "/v1/actions/execute/htk_x", "", nil, 401, "unauthorized"},
		{"no credentials on schemas", "GET", "/v1/schemas", "", nil, 401, "unauthorized"},
		{"without agent:trusted", "POST", "/v1/actions/preview", keyBob, good, 403, "forbidden"},
		{"without agent:trusted on execute", "POST", "/v1/actions/execute/htk_x", keyBob, nil, 403, "forbidden"},
		{"tenant-bound key, other tenant", "POST", "/v1/actions/preview", keyErin1, map[string]any{"name": "echo", "input": map[string]any{"text": "x"}, "tenant": "t2"}, 403, "tenant_not_allowed"},
		{"unknown schema", "GET", "/v1/schemas/no_such", keyBob, nil, 404, "unknown_action"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, body := call(t, c.method, f.URL+c.path, c.key, c.body)
			require.Equal(t, c.status, st, "%v", body)
			require.Equal(t, c.code, errCode(body), "%v", body)
			require.NotEmpty(t, body["error"].(map[string]any)["message"])
		})
	}
	t.Run("huge body by chunks", func(t *testing.T) {
		// A raw connection: the server may answer and close while the body
		// is still being sent, which an http.Client can report as a write
		// error instead of the answer.
		c, err := net.Dial("tcp", strings.TrimPrefix(f.URL, "http://"))
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/actions/preview HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nTransfer-Encoding: chunked\r\n\r\n", keyAlice)
		go func() {
			chunk := strings.Repeat("x", 64<<10)
			for i := 0; i < 40; i++ {
				if _, err := fmt.Fprintf(c, "%x\r\n%s\r\n", len(chunk), chunk); err != nil {
					return
				}
			}
			fmt.Fprint(c, "0\r\n\r\n")
		}()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 512)
		n, _ := io.ReadAtLeast(c, buf, 12)
		require.Contains(t, string(buf[:n]), "HTTP/1.1 413")
	})
	t.Run("huge Content-Length is refused on the headers", func(t *testing.T) {
		c, err := net.Dial("tcp", strings.TrimPrefix(f.URL, "http://"))
		require.NoError(t, err)
		defer c.Close()
		fmt.Fprintf(c, "POST /v1/actions/preview HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n", keyAlice, 8<<20)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		buf := make([]byte, 512)
		n, _ := io.ReadAtLeast(c, buf, 12)
		require.Contains(t, string(buf[:n]), "HTTP/1.1 413", "answered without the body being sent")
	})
	t.Run("trusted flag in the body is ignored", func(t *testing.T) {
		a := patchAction("f.txt", "sneaky\n")
		a["trusted"] = true
		st, o := call(t, "POST", f.URL+"/v1/actions", keyAlice, a)
		require.Equal(t, 200, st)
		require.Equal(t, "blocked", o["status"])
		require.Equal(t, "trust_required", o["code"])
		require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"))
	})
	t.Run("then a good request works", func(t *testing.T) {
		tok := f.preview(t, keyAlice, good)
		st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
		require.Equal(t, 200, st, "%v", o)
		require.Equal(t, "good\n", f.read(t, "f.txt"))
	})
}

func TestPreviewRefusalStatuses(t *testing.T) {
	cases := []struct {
		name   string
		cfg    func(*config.Config)
		action any
		status int
		code   string
	}{
		{"trusted runtime disabled", func(c *config.Config) { f := false; c.Harness.TrustedRuntimeEnabled = &f }, patchAction("f.txt", "x\n"), 403, "trusted_runtime_disabled"},
		{"action disabled", func(c *config.Config) { c.Harness.DisabledActions = []string{"workspace_apply_patch"} }, patchAction("f.txt", "x\n"), 403, "action_disabled"},
		{"writes disabled", func(c *config.Config) { f := false; c.Harness.Workspace.WriteEnabled = &f }, patchAction("f.txt", "x\n"), 403, "write_disabled"},
		{"shell disabled", func(c *config.Config) { f := false; c.Harness.Workspace.ShellEnabled = &f },
			map[string]any{"name": "workspace_run_shell", "input": map[string]any{"command": "pwd"}}, 403, "shell_disabled"},
		{"command not allowed", nil, map[string]any{"name": "workspace_run_shell", "input": map[string]any{"command": "rm -rf /"}}, 403, "command_not_allowed"},
		{"shell metacharacter", nil, map[string]any{"name": "workspace_run_shell", "input": map[string]any{"command": "ls; rm x"}}, 403, "argument_not_allowed"},
		{"patch does not apply", nil, map[string]any{"name": "workspace_apply_patch", "input": map[string]any{
			"path": "f.txt", "patch": "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n zero\n-nine\n+2\n"}}, 400, "patch_failed"},
		{"tenant not allowed", func(c *config.Config) { c.Harness.TenantAllowedActions = map[string][]string{"t1": {"echo"}} },
			map[string]any{"name": "workspace_apply_patch", "tenant": "t1", "input": map[string]any{"path": "f.txt", "content": "x"}}, 403, "tenant_not_allowed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{cfg: c.cfg})
			st, body := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, c.action)
			require.Equal(t, c.status, st, "%v", body)
			require.Equal(t, c.code, errCode(body), "%v", body)
			require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"))
		})
	}
}

func TestPreviewCommandShowsArgvAndLimits(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	st, p := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, map[string]any{"name": "workspace_run_shell", "input": map[string]any{"command": "ls -la 'a b'"}})
	require.Equal(t, 200, st, "%v", p)
	pv := p["preview"].(map[string]any)
	require.Equal(t, []any{"ls", "-la", "a b"}, pv["argv"])
	require.NotEmpty(t, pv["dir"])
	require.EqualValues(t, 10, pv["timeout_seconds"])
	require.Contains(t, pv, "sandbox")
	require.Contains(t, pv, "max_output_bytes")
}

func TestPreviewOfOtherActionsShowsSanitizedInput(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	secret := "AKIA2E0A8F3B244C9986"
	st, p := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, map[string]any{"name": "echo", "input": map[string]any{"text": "key " + secret}})
	require.Equal(t, 200, st, "%v", p)
	b, _ := json.Marshal(p["preview"])
	require.Contains(t, string(b), "input")
	require.NotContains(t, string(b), secret)
	st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+p["token"].(string), keyAlice, nil)
	require.Equal(t, 200, st)
	require.Equal(t, "ok", o["status"])
}

func TestUntrustedActionRunsAndBlockedIs200(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cases := []struct {
		name, key      string
		body           any
		status, code   string
		payloadContain string
	}{
		{"untrusted builtin runs", keyBob, map[string]any{"name": "echo", "input": map[string]any{"text": "hi"}}, "ok", "", "hi"},
		{"unknown action is blocked", keyBob, map[string]any{"name": "no_such", "input": map[string]any{}}, "blocked", "unknown_action", ""},
		{"trusted action needs preview", keyAlice, patchAction("f.txt", "x"), "blocked", "trust_required", ""},
		{"invalid input is blocked", keyBob, map[string]any{"name": "echo", "input": map[string]any{}}, "blocked", "invalid_input", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, o := call(t, "POST", f.URL+"/v1/actions", c.key, c.body)
			require.Equal(t, 200, st, "%v", o)
			require.Equal(t, c.status, o["status"], "%v", o)
			require.Equal(t, c.code, o["code"], "%v", o)
			if c.payloadContain != "" {
				b, _ := json.Marshal(o["payload"])
				require.Contains(t, string(b), c.payloadContain)
			}
		})
	}
}

func TestSchemasRoutes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	st, body := call(t, "GET", f.URL+"/v1/schemas", keyBob, nil)
	require.Equal(t, 200, st)
	var names []string
	for _, s := range body["actions"].([]any) {
		names = append(names, s.(map[string]any)["name"].(string))
	}
	require.Contains(t, names, "workspace_apply_patch")
	require.Contains(t, names, "echo")
	st, body = call(t, "GET", f.URL+"/v1/schemas/workspace_apply_patch", keyBob, nil)
	require.Equal(t, 200, st)
	require.Equal(t, true, body["trusted"])
	require.Contains(t, body, "input_schema")
	st, _ = call(t, "GET", f.URL+"/v1/schemas", keyAdmin, nil)
	require.Equal(t, 200, st, "admin implies agent:execute")
}

func TestHealthAndReadiness(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	st, body := call(t, "GET", f.URL+"/healthz", "", nil)
	require.Equal(t, 200, st)
	require.Equal(t, "ok", body["status"])
	st, body = call(t, "GET", f.URL+"/readyz", "", nil)
	require.Equal(t, 200, st)
	require.Equal(t, "ok", body["checks"].(map[string]any)["token_store"])

	down := newFixture(t, fixtureOpts{ready: []ReadyCheck{{Name: "audit", Check: func(context.Context) error { return errors.New("audit sink unreachable") }}}})
	st, body = call(t, "GET", down.URL+"/readyz", "", nil)
	require.Equal(t, 503, st)
	require.Equal(t, "not_ready", body["status"])
	require.Equal(t, "audit sink unreachable", body["checks"].(map[string]any)["audit"])
	require.Equal(t, "ok", body["checks"].(map[string]any)["token_store"])
	st, _ = call(t, "GET", down.URL+"/healthz", "", nil)
	require.Equal(t, 200, st, "liveness does not depend on dependencies")
}

func metricsText(t testing.TB, f *fixture) (int, string) {
	t.Helper()
	resp, err := http.Get(f.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestMetricsCountRequestsLatencyAndTokens(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	tok := f.preview(t, keyAlice, patchAction("m.txt", "m\n"))
	call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
	call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
	call(t, "POST", f.URL+"/v1/actions", keyBob, map[string]any{"name": "echo", "input": map[string]any{"text": "x"}})
	call(t, "POST", f.URL+"/v1/actions", keyBob, map[string]any{"name": "made_up_" + tok[:8], "input": map[string]any{}})
	st, m := metricsText(t, f)
	require.Equal(t, 200, st)
	for _, want := range []string{
		`harness_http_requests_total{code="200",route="/v1/actions/preview"} 1`,
		`harness_http_requests_total{code="200",route="/v1/actions/execute/{token}"} 1`,
		`harness_http_requests_total{code="404",route="/v1/actions/execute/{token}"} 1`,
		`harness_trusted_tokens_total{event="minted"} 1`,
		`harness_trusted_tokens_total{event="redeemed"} 1`,
		`harness_trusted_tokens_total{event="refused"} 1`,
		`harness_action_duration_seconds_count{action="workspace_apply_patch",status="ok"} 1`,
		`harness_action_duration_seconds_count{action="echo",status="ok"} 1`,
		`harness_action_duration_seconds_count{action="unregistered",status="blocked"} 1`,
	} {
		require.Contains(t, m, want)
	}
	require.NotContains(t, m, tok[:12], "no token in label values")
	require.NotContains(t, m, "made_up_", "no unbounded action names in label values")
}

// TestLogsAndAuditNeverHoldTokensOrKeys runs the whole flow and greps the
// access log and the audit log for every token and bearer key.
func TestLogsAndAuditNeverHoldTokensOrKeys(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	var tokens []string
	for i := 0; i < 3; i++ {
		tok := f.preview(t, keyAlice, patchAction(fmt.Sprintf("l%d.txt", i), "x\n"))
		tokens = append(tokens, tok)
		call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
		call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyCarol, nil)
	}
	call(t, "POST", f.URL+"/v1/actions/preview", "wrong-secret-key", patchAction("f.txt", "x"))
	logs := f.Logs.String()
	require.Contains(t, logs, `"route":"/v1/actions/execute/{token}"`, "access log written")
	require.Contains(t, logs, `"principal":"alice"`)
	audit, err := os.ReadFile(f.AuditPath)
	require.NoError(t, err)
	require.Contains(t, string(audit), "workspace_apply_patch")
	for _, secret := range append(tokens, keyAlice, keyCarol, "wrong-secret-key", tokens[0][4:20]) {
		require.NotContains(t, logs, secret)
		require.NotContains(t, string(audit), secret)
	}
}

// TestOpenAPIDescribesTheServedRoutes checks the document against the
// routes actually served, both ways.
func TestOpenAPIDescribesTheServedRoutes(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	resp, err := http.Get(f.URL + "/openapi.json")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
	require.True(t, strings.HasPrefix(doc.OpenAPI, "3.1"), doc.OpenAPI)
	var documented []string
	for p, ops := range doc.Paths {
		for m, op := range ops {
			documented = append(documented, strings.ToUpper(m)+" "+p)
			var o struct {
				Responses map[string]json.RawMessage `json:"responses"`
			}
			require.NoError(t, json.Unmarshal(op, &o))
			require.Contains(t, o.Responses, "200", "%s %s", m, p)
		}
	}
	var served []string
	for _, r := range f.Server.Routes() {
		served = append(served, r.Method+" "+r.Pattern)
	}
	sort.Strings(documented)
	sort.Strings(served)
	require.Equal(t, served, documented)

	// Every documented error status of the trusted routes is one the
	// status mappers can produce.
	codes := regexp.MustCompile(`"(\d{3})":`).FindAllStringSubmatch(string(OpenAPI()), -1)
	for _, c := range codes {
		require.Contains(t, []string{"200", "400", "401", "403", "404", "409", "413", "429", "500", "503", "504"}, c[1])
	}
}

func TestTooManyInFlightIs429AndRecovers(t *testing.T) {
	block := make(chan struct{})
	f := newFixture(t, fixtureOpts{maxInFlight: 1, block: block})
	first := make(chan int, 1)
	go func() {
		st, _ := call(t, "POST", f.URL+"/v1/actions", keyBob, map[string]any{"name": "block", "input": map[string]any{}})
		first <- st
	}()
	<-f.Entered // the blocking action holds the only slot
	require.Eventually(t, func() bool {
		st, body := call(t, "POST", f.URL+"/v1/actions", keyBob, map[string]any{"name": "echo", "input": map[string]any{"text": "x"}})
		return st == 429 && errCode(body) == "rate_limited"
	}, 5*time.Second, 10*time.Millisecond)
	st, _ := call(t, "GET", f.URL+"/healthz", "", nil)
	require.Equal(t, 200, st, "probes are not limited")
	close(block)
	require.Equal(t, 200, <-first)
	st, o := call(t, "POST", f.URL+"/v1/actions", keyBob, map[string]any{"name": "echo", "input": map[string]any{"text": "x"}})
	require.Equal(t, 200, st, "%v", o)
}

func TestExecuteRunsToTheEndWhenTheCallerIsGone(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	p, err := f.Service.Preview(t.Context(), Principal{Name: "alice"}, action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": "g.txt", "content": "ran\n"}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	obs, err := f.Service.Execute(ctx, Principal{Name: "alice"}, p.Token)
	require.NoError(t, err)
	require.Equal(t, action.StatusOK, obs.Status, "%+v", obs)
	require.Equal(t, "ran\n", f.read(t, "g.txt"))
}

func TestPreviewExecuteEveryPatchShape(t *testing.T) {
	cases := []struct {
		name  string
		input map[string]any
		want  map[string]string
	}{
		{"rename", map[string]any{"patch": "*** Begin Patch\n*** Update File: f.txt\n*** Move to: g.txt\n@@\n one\n-two\n+2\n*** End Patch\n"},
			map[string]string{"f.txt": "<absent>", "g.txt": "one\n2\n"}},
		{"multi-file", map[string]any{"patch": "*** Begin Patch\n*** Update File: f.txt\n@@\n one\n-two\n+2\n*** Add File: h.txt\n+new\n*** End Patch\n"},
			map[string]string{"f.txt": "one\n2\n", "h.txt": "new\n"}},
		{"delete", map[string]any{"patch": "diff --git a/f.txt b/f.txt\ndeleted file mode 100644\n--- a/f.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n"},
			map[string]string{"f.txt": "<absent>"}},
		{"unified diff with a path", map[string]any{"path": "f.txt", "patch": "--- a/f.txt\n+++ b/f.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"},
			map[string]string{"f.txt": "one\n2\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{})
			tok := f.preview(t, keyAlice, map[string]any{"name": "workspace_apply_patch", "input": c.input})
			require.Equal(t, "one\ntwo\n", f.read(t, "f.txt"), "preview writes nothing")
			st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+tok, keyAlice, nil)
			require.Equal(t, 200, st, "%v", o)
			require.Equal(t, "ok", o["status"], "%v", o)
			for name, content := range c.want {
				require.Equal(t, content, f.read(t, name), name)
			}
		})
	}
}

// auditLines decodes the events of a JSONL audit log.
func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Event map[string]any `json:"event"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec))
		out = append(out, rec.Event)
	}
	return out
}

func TestTokenRecordsInTheAudit(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ok := f.preview(t, keyAlice, patchAction("f.txt", "audited\n"))
	st, o := call(t, "POST", f.URL+"/v1/actions/execute/"+ok, keyAlice, nil)
	require.Equal(t, 200, st)
	stale := f.preview(t, keyAlice, patchAction("f.txt", "stale\n"))
	f.write(t, "f.txt", "moved on\n")
	st, _ = call(t, "POST", f.URL+"/v1/actions/execute/"+stale, keyAlice, nil)
	require.Equal(t, 409, st)

	var tokens []map[string]any
	runIDs := map[string]bool{}
	for _, ev := range auditLines(t, f.AuditPath) {
		if ev["kind"] == "trusted_token" {
			tokens = append(tokens, ev)
		}
		if p, _ := ev["payload"].(map[string]any); p != nil {
			if id, _ := p["action_id"].(string); id != "" {
				runIDs[id] = true
			}
		}
	}
	ref := func(tok string) string { return TokenID(tok)[:16] }
	var got []string
	for _, ev := range tokens {
		got = append(got, fmt.Sprintf("%s %s %s %s", ev["event"], ev["token_ref"], ev["principal"], ev["action_id"]))
		require.Equal(t, "workspace_apply_patch", ev["action"])
		require.Len(t, ev["action_hash"], 64)
	}
	require.Equal(t, []string{
		"minted " + ref(ok) + " alice tok-" + ref(ok),
		"minted " + ref(stale) + " alice tok-" + ref(stale), "stale " + ref(stale) + " alice tok-" + ref(stale),
	}, got)
	require.Equal(t, "tok-"+ref(ok), o["action_id"], "the run is named after its token")
	require.True(t, runIDs["tok-"+ref(ok)], "the run's events carry that action_id")
	require.Contains(t, tokens[2]["reason"], "f.txt")
}

// failingAppender is an audit log that cannot write.
type failingAppender struct{}

func (failingAppender) Append(context.Context, any, bool) (audit.Record, error) {
	return audit.Record{}, errors.New("disk full")
}

func TestPreviewMintsNothingWhenTheAuditCannotRecord(t *testing.T) {
	f := newFixture(t, fixtureOpts{audit: failingAppender{}})
	st, body := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, patchAction("f.txt", "x\n"))
	require.Equal(t, 500, st, "%v", body)
	require.Equal(t, "internal", errCode(body))
	require.Equal(t, 0, f.Service.Store().(*MemoryStore).Len(), "no token stored")
}

// A principal at its token cap gets 429 with Retry-After, and nothing is
// stored.
func TestPreviewOverTheTokenCapIs429WithRetryAfter(t *testing.T) {
	store := NewMemoryStore(0)
	store.SetLimits(TokenLimits{MaxTokens: 2})
	f := newFixture(t, fixtureOpts{store: store})
	for i := range 2 {
		s, m := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, patchAction("f.txt", fmt.Sprintf("v%d\n", i)))
		require.Equal(t, 200, s, "%v", m)
	}
	body := `{"name":"workspace_apply_patch","input":{"path":"f.txt","content":"v3\n"}}`
	req, err := http.NewRequest("POST", f.URL+"/v1/actions/preview", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+keyAlice)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 429, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))
}

// A refused preview is audited like the same action refused anywhere else:
// a pre_action with the decision (phase preview) and a post_action, under
// the action_id the error names.
func TestRefusedPreviewIsAudited(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	cases := []struct {
		name string
		body any
		code string
	}{
		{"refused by the workspace's path rules", patchAction("../x", "y"), "path_outside_root"},
		{"refused by the guard", map[string]any{"name": "no_such_action", "input": map[string]any{}}, "unknown_action"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, m := call(t, "POST", f.URL+"/v1/actions/preview", keyAlice, c.body)
			require.NotEqual(t, 200, s)
			e := m["error"].(map[string]any)
			require.Equal(t, c.code, e["code"])
			id, _ := e["action_id"].(string)
			require.NotEmpty(t, id)
			log, err := os.ReadFile(f.AuditPath)
			require.NoError(t, err)
			var kinds []string
			for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
				if strings.Contains(line, `"action_id":"`+id+`"`) {
					var rec map[string]any
					require.NoError(t, json.Unmarshal([]byte(line), &rec))
					ev := rec["event"].(map[string]any)
					kinds = append(kinds, ev["event_type"].(string)+"@"+fmt.Sprint(ev["payload"].(map[string]any)["phase"]))
				}
			}
			require.Equal(t, []string{"pre_action@preview", "post_action@preview"}, kinds)
		})
	}
}
