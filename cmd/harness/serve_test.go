package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/trusted"
)

const serveKey = "serve-test-key-5d1e"

// harnessBinary builds ./cmd/harness into the test's temporary directory
// (the build cache makes every build after the first a link).
func harnessBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "harness")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("go build ./cmd/harness: %v\n%s", err, out)
		}
		t.Skipf("go build ./cmd/harness failed (another package may be mid-edit): %v\n%s", err, out)
	}
	return bin
}

// needServePostgres returns a DSN naming a fresh audit table, dropped at
// the end of the test.
func needServePostgres(t *testing.T) (dsn string, table string) {
	t.Helper()
	base := testkit.Postgres(t)
	var b [5]byte
	rand.Read(b[:])
	table = "harness_audit_serve_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			c.Exec(ctx, "DROP TABLE IF EXISTS "+table)
			c.Close(ctx)
		}
	})
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + audit.TableParam + "=" + table, table
}

// replica is one `harness serve` process.
type replica struct {
	URL string
	cmd *exec.Cmd
	log *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type serveConfig struct {
	root, store, auditPath, instance string
	ttl                              int
	extra                            string
	// keyPath is the installation key; replicas of one deployment share
	// it. Empty: a key of this config's own.
	keyPath string
	// noRepeatLimits turns governance's repeat halts off, for tests that
	// repeat one action on purpose.
	noRepeatLimits bool
}

func writeServeConfig(t *testing.T, c serveConfig) string {
	t.Helper()
	sum := sha256.Sum256([]byte(serveKey))
	if c.ttl == 0 {
		c.ttl = 60
	}
	if c.keyPath == "" {
		c.keyPath = filepath.Join(t.TempDir(), "hmac.key")
	}
	y := fmt.Sprintf(`harness:
  profile: dev
  workspace:
    root: %s
%s  trusted:
    token-ttl-seconds: %d
    store: %s
  audit:
    path: %q
    instance: %q
  sanitize:
    key-path: %s
  auth:
    keys:
      - {principal: alice, sha256: "%s", permissions: [agent:execute, agent:trusted]}
`, c.root, c.extra, c.ttl, c.store, c.auditPath, c.instance, c.keyPath, hex.EncodeToString(sum[:]))
	if c.noRepeatLimits {
		y += "  governance: {repeat-failing: 0, repeat-identical: 0}\n"
	}
	p := filepath.Join(t.TempDir(), "harness.yaml")
	require.NoError(t, os.WriteFile(p, []byte(y), 0o600))
	return p
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// startServe starts `harness serve` on a free port and waits for /healthz.
func startServe(t *testing.T, bin, config string) *replica {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--config", config, "--addr", "127.0.0.1:0")
	out := &lockedBuffer{}
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = out
	require.NoError(t, cmd.Start())
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			out.Write([]byte(line + "\n"))
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
	}()
	r := &replica{cmd: cmd, log: out}
	t.Cleanup(func() {
		stopProcess(cmd)
		pw.Close()
	})
	select {
	case r.URL = <-urlc:
	case <-time.After(20 * time.Second):
		t.Fatalf("harness serve did not start:\n%s", out.String())
	}
	for i := 0; i < 100; i++ {
		if resp, err := testHTTP.Get(r.URL + "/healthz"); err == nil {
			resp.Body.Close()
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("harness serve at %s does not answer /healthz:\n%s", r.URL, out.String())
	return nil
}

var serveClient = &http.Client{Transport: &http.Transport{MaxConnsPerHost: 64, MaxIdleConnsPerHost: 64}, Timeout: 60 * time.Second}

func post(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest("POST", url, rd)
	req.Header.Set("Authorization", "Bearer "+serveKey)
	resp, err := serveClient.Do(req)
	if err != nil {
		t.Errorf("POST: %v", err)
		return 0, nil
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func patchOf(path, content string) map[string]any {
	return map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": path, "content": content}}
}

func previewOn(t *testing.T, r *replica, a any) string {
	t.Helper()
	st, p := post(t, r.URL+"/v1/actions/preview", a)
	require.Equal(t, 200, st, "preview: %v", p)
	return p["token"].(string)
}

func readFile(t *testing.T, root, name string) string {
	b, err := os.ReadFile(filepath.Join(root, name))
	if os.IsNotExist(err) {
		return "<absent>"
	}
	require.NoError(t, err)
	return string(b)
}

// TestServeReplicasShareRedis runs two `harness serve` processes on one
// workspace, one Redis token store and one PostgreSQL audit table.
func TestServeReplicasShareRedis(t *testing.T) {
	bin := harnessBinary(t)
	rc := testkit.Redis(t)
	dsn, table := needServePostgres(t)
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("one\ntwo\n"), 0o644))
	keyPath := filepath.Join(t.TempDir(), "hmac.key") // one installation, two replicas
	a := startServe(t, bin, writeServeConfig(t, serveConfig{root: root, store: testkit.RedisURL(), auditPath: dsn, instance: "replica-a", ttl: 2, keyPath: keyPath, noRepeatLimits: true}))
	b := startServe(t, bin, writeServeConfig(t, serveConfig{root: root, store: testkit.RedisURL(), auditPath: dsn, instance: "replica-b", ttl: 2, keyPath: keyPath, noRepeatLimits: true}))
	var tokens []string

	t.Run("ready: Redis and the Postgres audit answer", func(t *testing.T) {
		for _, r := range []*replica{a, b} {
			resp, err := testHTTP.Get(r.URL + "/readyz")
			require.NoError(t, err)
			var body struct {
				Status string            `json:"status"`
				Checks map[string]string `json:"checks"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			resp.Body.Close()
			require.Equal(t, 200, resp.StatusCode, "%+v", body)
			require.Equal(t, map[string]string{"token_store": "ok", "approvals_store": "ok", "audit": "ok"}, body.Checks)
		}
	})

	t.Run("previewed on one, redeemed on the other", func(t *testing.T) {
		tok := previewOn(t, a, patchOf("x.txt", "from a, run on b\n"))
		tokens = append(tokens, tok)
		st, o := post(t, b.URL+"/v1/actions/execute/"+tok, nil)
		require.Equal(t, 200, st, "%v", o)
		require.Equal(t, "ok", o["status"])
		require.Equal(t, "from a, run on b\n", readFile(t, root, "x.txt"))
		st, _ = post(t, a.URL+"/v1/actions/execute/"+tok, nil)
		require.Equal(t, 404, st, "used on b, so gone on a")
	})

	t.Run("1000 concurrent redeems over both replicas: exactly one wins", func(t *testing.T) {
		tok := previewOn(t, b, patchOf("race.txt", "once\n"))
		tokens = append(tokens, tok)
		var mu sync.Mutex
		codes := map[int]int{}
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := 0; i < 1000; i++ {
			r := a
			if i%2 == 1 {
				r = b
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				st, _ := post(t, r.URL+"/v1/actions/execute/"+tok, nil)
				mu.Lock()
				codes[st]++
				mu.Unlock()
			}()
		}
		close(start)
		wg.Wait()
		require.Equal(t, map[int]int{200: 1, 404: 999}, codes)
		require.Equal(t, "once\n", readFile(t, root, "race.txt"))
	})

	t.Run("expired tokens never run", func(t *testing.T) {
		tok := previewOn(t, a, patchOf("late.txt", "too late\n"))
		tokens = append(tokens, tok)
		time.Sleep(2200 * time.Millisecond)
		n, err := rc.Exists(context.Background(), trusted.DefaultRedisPrefix+trusted.TokenID(tok)).Result()
		require.NoError(t, err)
		require.Zero(t, n, "Redis dropped the expired token")
		for _, r := range []*replica{a, b} {
			st, o := post(t, r.URL+"/v1/actions/execute/"+tok, nil)
			require.Equal(t, 404, st, "%v", o)
		}
		require.Equal(t, "<absent>", readFile(t, root, "late.txt"))
	})

	t.Run("a token minted for action A never runs action B", func(t *testing.T) {
		tok := previewOn(t, a, patchOf("a.txt", "A\n"))
		tokens = append(tokens, tok)
		st, o := post(t, b.URL+"/v1/actions/execute/"+tok, patchOf("b.txt", "B\n"))
		require.Equal(t, 200, st, "%v", o)
		require.Equal(t, "A\n", readFile(t, root, "a.txt"))
		require.Equal(t, "<absent>", readFile(t, root, "b.txt"))
	})

	t.Run("a file changed between preview and execute gives 409 and is untouched", func(t *testing.T) {
		tok := previewOn(t, a, patchOf("f.txt", "previewed\n"))
		tokens = append(tokens, tok)
		require.NoError(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("changed meanwhile\n"), 0o644))
		st, o := post(t, b.URL+"/v1/actions/execute/"+tok, nil)
		require.Equal(t, 409, st, "%v", o)
		require.Equal(t, "stale_preview", o["error"].(map[string]any)["code"])
		require.Equal(t, "changed meanwhile\n", readFile(t, root, "f.txt"))
	})

	t.Run("audit chains verify and hold no token or key", func(t *testing.T) {
		ctx := context.Background()
		key, err := sanitize.LoadKey(keyPath)
		require.NoError(t, err, "the replicas' installation key")
		for _, inst := range []string{"replica-a", "replica-b"} {
			rep, err := audit.VerifyPostgres(ctx, dsn, inst, audit.WithKey(key))
			require.NoError(t, err)
			require.True(t, rep.OK(), "%s: %s", inst, rep.String())
		}
		base := strings.Split(dsn, "?")[0] + "?sslmode=disable"
		conn, err := pgx.Connect(ctx, base)
		require.NoError(t, err)
		defer conn.Close(ctx)
		var all string
		require.NoError(t, conn.QueryRow(ctx, "SELECT coalesce(string_agg(record::text, E'\\n'), '') FROM "+table).Scan(&all))
		require.Contains(t, all, "workspace_apply_patch")
		for _, s := range append(tokens, serveKey) {
			require.NotContains(t, all, s)
		}
	})
	for _, r := range []*replica{a, b} {
		logs := r.log.String()
		require.Contains(t, logs, `"route":"/v1/actions/execute/{token}"`)
		for _, s := range append(tokens, serveKey) {
			require.NotContains(t, logs, s, "access log leaks a secret")
		}
	}
}

// TestServeGracefulShutdownFinishesInFlight sends SIGTERM while a trusted
// command is running and checks that it completes and is answered.
func TestServeGracefulShutdownFinishesInFlight(t *testing.T) {
	bin := harnessBinary(t)
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep program")
	}
	root := t.TempDir()
	r := startServe(t, bin, writeServeConfig(t, serveConfig{
		root: root, store: "memory", auditPath: filepath.Join(t.TempDir(), "audit.jsonl"),
		extra: "    allowed-commands: [sleep]\n",
	}))
	tok := previewOn(t, r, map[string]any{"name": "workspace_run_shell", "input": map[string]any{"command": "sleep 1"}})
	type answer struct {
		st int
		o  map[string]any
	}
	done := make(chan answer, 1)
	go func() {
		st, o := post(t, r.URL+"/v1/actions/execute/"+tok, nil)
		done <- answer{st, o}
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, r.cmd.Process.Signal(syscall.SIGTERM))
	var got answer
	select {
	case got = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("no answer to the in-flight execute after SIGTERM\n%s", r.log.String())
	}
	require.Equal(t, 200, got.st, "%v\n%s", got.o, r.log.String())
	require.Equal(t, "ok", got.o["status"], "%v", got.o)
	require.EqualValues(t, 0, got.o["payload"].(map[string]any)["exit_code"])
	werr := make(chan error, 1)
	go func() { werr <- r.cmd.Wait() }()
	select {
	case err := <-werr:
		require.NoError(t, err, "exit status after a clean shutdown\n%s", r.log.String())
	case <-time.After(10 * time.Second):
		t.Fatal("harness serve did not stop after SIGTERM")
	}
	require.Contains(t, r.log.String(), "shutting down")
	_, err := testHTTP.Get(r.URL + "/healthz")
	require.Error(t, err, "no longer serving")
}

func TestServeUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"--help"}, exitOK},
		{"unknown flag", []string{"--nope"}, exitUsage},
		{"positional argument", []string{"extra"}, exitUsage},
		{"missing config", []string{"--config", "/nonexistent/harness.yaml"}, exitUsage},
		{"bad store", []string{"--store", "etcd://x", "--root", os.TempDir()}, exitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := serveCmd(context.Background(), c.args, stdio{in: strings.NewReader(""), out: &out, err: &errb})
			require.Equal(t, c.want, code, errb.String())
		})
	}
}

func TestAuditReadiness(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	l, err := audit.OpenJSONL(filepath.Join(dir, "a.jsonl"))
	require.NoError(t, err)
	check := auditReady(l, filepath.Join(dir, "a.jsonl"))
	require.NoError(t, check(ctx))
	require.NoError(t, l.Close())
	require.Error(t, check(ctx), "a closed log is not ready")

	var nothing struct{ audit.Log }
	down := auditReady(nothing, "postgres://nobody:secret@127.0.0.1:1/none?sslmode=disable&harness_audit_table=x")
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err = down(cctx)
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
}

// TestServeDemoPrintsAWorkingCurlExample starts `harness serve --demo` and
// follows its printed instructions: the key works for preview -> execute.
func TestServeDemoPrintsAWorkingCurlExample(t *testing.T) {
	bin := harnessBinary(t)
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello\n"), 0o644))
	cmd := exec.Command(bin, "serve", "--demo", "--root", root, "--addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "HARNESS_AUDIT_PATH="+filepath.Join(t.TempDir(), "audit.jsonl"))
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopProcess(cmd) })
	keyRe := regexp.MustCompile(`export HARNESS_KEY=(demo_[A-Za-z0-9_-]+)`)
	var url, key string
	require.Eventually(t, func() bool {
		out := stderr.String()
		m1, m2 := listening.FindStringSubmatch(out), keyRe.FindStringSubmatch(out)
		if m1 == nil || m2 == nil || !strings.Contains(out, "/v1/actions/execute/") {
			return false
		}
		url, key = m1[1], m2[1]
		return true
	}, 20*time.Second, 50*time.Millisecond, "no demo banner: %s", stderr.String())
	require.Contains(t, stderr.String(), "curl -s -H \"Authorization: Bearer $HARNESS_KEY\" "+url+"/v1/actions/preview")

	do := func(path string, body string) (int, map[string]any) {
		req, _ := http.NewRequest("POST", url+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := testHTTP.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	st, p := do("/v1/actions/preview", `{"name":"workspace_apply_patch","input":{"path":"hello.txt","content":"hello, harness\n"}}`)
	require.Equal(t, 200, st, "%v", p)
	st, o := do("/v1/actions/execute/"+p["token"].(string), "")
	require.Equal(t, 200, st, "%v", o)
	require.Equal(t, "hello, harness\n", readFile(t, root, "hello.txt"))
	require.Equal(t, 1, strings.Count(stderr.String(), key), "the key is shown once and never logged")
}

// testHTTP bounds every request a test makes, so that a server that stops
// answering fails the test instead of hanging it.
var testHTTP = &http.Client{Timeout: 20 * time.Second}

// stopProcess sends SIGTERM and waits at most 10 s before killing.
func stopProcess(cmd *exec.Cmd) {
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-done
	}
}
