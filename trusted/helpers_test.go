package trusted

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
)

// Bearer keys of the test server. Their SHA-256 is what the config holds.
const (
	keyAlice = "test-key-alice-0001" // agent:execute, agent:trusted
	keyBob   = "test-key-bob-0002"   // agent:execute only
	keyCarol = "test-key-carol-0003" // agent:execute, agent:trusted
	keyErin1 = "test-key-erin-t1"    // principal erin, tenant t1
	keyErin2 = "test-key-erin-t2"    // principal erin, tenant t2
	keyAdmin = "test-key-admin-0004" // admin
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// fakeClock is a settable time source.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	URL       string
	Root      string
	AuditPath string
	Logs      *testkit.SyncBuffer
	Service   *Service
	Server    *Server
	Harness   *runtime.Harness
	Clock     *fakeClock
	// Entered receives one value each time the "block" builtin starts.
	Entered chan struct{}
}

type fixtureOpts struct {
	store   TokenStore
	cfg     func(*config.Config)
	maxBody int64
	ready   []ReadyCheck
	// maxInFlight bounds action requests; the builtin "block" waits on
	// block until it is closed.
	maxInFlight int
	block       chan struct{}
	// audit replaces the JSONL log as the token records' appender.
	audit audit.Appender
}

// newFixture starts an HTTP server over a real Harness, a real workspace
// in a temporary root (holding f.txt = "one\ntwo\n"), a JSONL audit log
// and the given store.
func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\ntwo\n"), 0o644))

	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	cfg.Harness.Workspace.Sandbox = "off"
	cfg.Harness.Auth.Keys = []config.AuthKey{
		{Principal: "alice", SHA256: sha(keyAlice), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "bob", SHA256: sha(keyBob), Permissions: []string{"agent:execute"}},
		{Principal: "carol", SHA256: sha(keyCarol), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "erin", Tenant: "t1", SHA256: sha(keyErin1), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "erin", Tenant: "t2", SHA256: sha(keyErin2), Permissions: []string{"agent:execute", "agent:trusted"}},
		{Principal: "root", SHA256: sha(keyAdmin), Permissions: []string{"admin"}},
	}
	if o.cfg != nil {
		o.cfg(cfg)
	}

	san, err := sanitize.New(sanitize.Options{Key: bytes.Repeat([]byte{7}, 32)})
	require.NoError(t, err)
	auditPath := filepath.Join(dir, "audit.jsonl")
	alog, err := audit.OpenJSONL(auditPath)
	require.NoError(t, err)
	t.Cleanup(func() { alog.Close() })
	logs := &testkit.SyncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	h, ws, err := runtime.Build(cfg, runtime.BuildOptions{Sanitizer: san, Recorder: runtime.AuditRecorder(alog), Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { ws.Close() })
	require.NoError(t, h.Register(runtime.Spec{
		Name: "echo", Description: "echo the text", Risk: "read",
		Input: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}, func(_ context.Context, in map[string]any) (map[string]any, error) {
		return map[string]any{"text": in["text"]}, nil
	}))

	entered := make(chan struct{}, 16)
	if o.block != nil {
		require.NoError(t, h.Register(runtime.Spec{
			Name: "block", Description: "wait until the test lets go", Risk: "read",
			Input: json.RawMessage(`{"type":"object"}`),
		}, func(ctx context.Context, _ map[string]any) (map[string]any, error) {
			entered <- struct{}{}
			select {
			case <-o.block:
			case <-ctx.Done():
			}
			return map[string]any{}, nil
		}))
	}

	clock := &fakeClock{t: time.Now()}
	var tokenAudit audit.Appender = alog
	if o.audit != nil {
		tokenAudit = o.audit
	}
	metrics := NewMetrics()
	svc, err := NewService(Options{
		Harness: h, Store: o.store, TTL: time.Duration(cfg.Harness.Trusted.TokenTTLSeconds) * time.Second,
		Events: metrics.Token, Audit: tokenAudit, Now: clock.Now, Logger: logger,
	})
	require.NoError(t, err)
	t.Cleanup(func() { svc.Close() })
	keys, err := NewKeys(cfg.Harness.Auth.Keys)
	require.NoError(t, err)
	srv, err := NewServer(ServerOptions{Service: svc, Keys: keys, MaxBodyBytes: o.maxBody, MaxInFlight: o.maxInFlight, Metrics: metrics, Logger: logger, Ready: o.ready})
	require.NoError(t, err)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &fixture{URL: ts.URL, Root: root, AuditPath: auditPath, Logs: logs, Service: svc, Server: srv, Harness: h, Clock: clock, Entered: entered}
}

// call sends one request and decodes the JSON answer into a map.
func call(t testing.TB, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		require.NoError(t, err)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	if len(data) > 0 && strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(data, &m), "body: %s", data)
	}
	return resp.StatusCode, m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func patchAction(path, content string) map[string]any {
	return map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": path, "content": content}, "session_id": "test"}
}

func (f *fixture) read(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Root, name))
	if os.IsNotExist(err) {
		return "<absent>"
	}
	require.NoError(t, err)
	return string(b)
}

func (f *fixture) write(t testing.TB, name, content string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(f.Root, name), []byte(content), 0o644))
}

// preview previews a as alice and returns the token.
func (f *fixture) preview(t testing.TB, key string, a any) string {
	t.Helper()
	st, body := call(t, "POST", f.URL+"/v1/actions/preview", key, a)
	require.Equal(t, 200, st, "preview: %v", body)
	tok, _ := body["token"].(string)
	require.NotEmpty(t, tok)
	return tok
}
