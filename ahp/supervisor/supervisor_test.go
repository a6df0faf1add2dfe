package supervisor_test

import (
	"bufio"
	"context"
	"encoding/json"

	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/pipeline"
)

// peer is an AHP harness on a Unix socket, answering pre_action with
// decide and recording what it saw.
type peer struct {
	sock   string
	srv    *ahp.Server
	cancel context.CancelFunc
	done   chan struct{}

	decide func(n int, tool string, args map[string]any) ahp.Decision
	calls  atomic.Int32

	mu    sync.Mutex
	seen  []string // event types, in order
	notes []*ahp.WireEvent
}

func (p *peer) HandleEvent(_ context.Context, ev *ahp.WireEvent) (ahp.Decision, error) {
	p.mu.Lock()
	p.seen = append(p.seen, string(ev.EventType))
	p.mu.Unlock()
	call, err := ahp.ReadPreAction(ev.Payload)
	if err != nil {
		return ahp.Decision{}, err
	}
	var args map[string]any
	_ = json.Unmarshal(call.Arguments, &args)
	n := int(p.calls.Add(1))
	return p.decide(n, call.Tool, args), nil
}

func (p *peer) HandleNotification(_ context.Context, ev *ahp.WireEvent) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, string(ev.EventType))
	p.notes = append(p.notes, ev)
	return nil
}

func (p *peer) saw() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func startPeer(t *testing.T, decide func(n int, tool string, args map[string]any) ahp.Decision) *peer {
	t.Helper()
	p := &peer{sock: filepath.Join(shortDir(t), "h.sock"), decide: decide, done: make(chan struct{})}
	p.srv = ahp.NewServer(p, ahp.ServerOptions{})
	ln, err := net.Listen("unix", p.sock)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() { defer close(p.done); _ = p.srv.Serve(ctx, ln) }()
	t.Cleanup(p.kill)
	return p
}

// kill stops the harness: the socket goes away with it.
func (p *peer) kill() {
	p.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
	<-p.done
}

// shortDir is a temporary directory with a path short enough for a Unix
// socket's name.
func shortDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "sup")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// open builds a pipeline over a fresh root holding victim/, whose
// supervisor is given in YAML, with rm allowed (the sandbox confines it).
func open(t *testing.T, supervisorYAML string) (*pipeline.Pipeline, string) {
	t.Helper()
	dir := testkit.Home(t)
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "victim"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "victim", "f"), []byte("x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644))
	yaml := "harness:\n  profile: dev\n  workspace: {root: " + root + ", allowed-commands: [ls, rm], sandbox: best-effort}\n" +
		"  audit: {path: " + filepath.Join(dir, "audit.jsonl") + "}\n  ahp:\n    supervisor:\n" + supervisorYAML
	cfg, err := config.Parse("t.yaml", []byte(yaml))
	require.NoError(t, err)
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p, root
}

func unixYAML(sock string) string {
	return "      transport: unix\n      socket: " + sock + "\n      timeout-ms: 2000\n"
}

func shell(p *pipeline.Pipeline, cmd string) action.Observation {
	return p.Execute(context.Background(), action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": cmd},
		SessionID: "sess-1", Trusted: true})
}

func blocksRmRf(_ int, _ string, args map[string]any) ahp.Decision {
	if c, _ := args["command"].(string); strings.Contains(c, "rm -rf") {
		return ahp.Decision{Kind: ahp.Block, Reason: "Dangerous command detected"}
	}
	return ahp.Decision{Kind: ahp.Allow}
}

// TestSupervisorBlocksRmRf: the external harness blocks rm -rf through
// pre_action; the command never runs; an allowed one does, and its
// post_action reaches the harness as a notification.
func TestSupervisorBlocksRmRf(t *testing.T) {
	peer := startPeer(t, blocksRmRf)
	p, root := open(t, unixYAML(peer.sock))

	obs := shell(p, "rm -rf victim")
	assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
	assert.Contains(t, obs.Message, "Dangerous command detected")
	require.NotNil(t, obs.Decision)
	assert.Equal(t, "ahp_supervisor", obs.Decision.Step)
	_, err := os.Stat(filepath.Join(root, "victim", "f"))
	assert.NoError(t, err, "the blocked command ran")

	obs = shell(p, "ls")
	assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
	// The telemetry is asynchronous: wait for it.
	require.Eventually(t, func() bool {
		s := strings.Join(peer.saw(), ",")
		return strings.Count(s, "post_action") >= 2
	}, 5*time.Second, 10*time.Millisecond, "post_action notifications: %v", peer.saw())
	seen := peer.saw()
	assert.Equal(t, "session_start", seen[0], "session_start comes before the session's first pre_action: %v", seen)
	peer.mu.Lock()
	var pa map[string]any
	require.NoError(t, json.Unmarshal(peer.notes[len(peer.notes)-1].Payload, &pa))
	peer.mu.Unlock()
	assert.Equal(t, "workspace_run_shell", pa["tool_name"])
	assert.Equal(t, "workspace_run_shell", pa["tool"])

	// Without the supervisor, the same command runs (the control).
	p2, root2 := open(t, "      transport: \"\"\n")
	obs = shell(p2, "rm -rf victim")
	assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
	_, err = os.Stat(filepath.Join(root2, "victim"))
	assert.True(t, os.IsNotExist(err), "control: rm -rf ran without a supervisor: %v", obs)
}

// TestSupervisorKilledMidSessionRefusesEverything: once the harness is
// gone, every action is refused, reads included, and says why.
func TestSupervisorKilledMidSessionRefusesEverything(t *testing.T) {
	peer := startPeer(t, blocksRmRf)
	p, _ := open(t, unixYAML(peer.sock))
	read := action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}, SessionID: "sess-1"}
	require.Equal(t, action.StatusOK, p.Execute(context.Background(), read).Status)
	peer.kill()
	for i := 0; i < 3; i++ {
		obs := p.Execute(context.Background(), read)
		assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
		assert.Contains(t, obs.Message, "could not be consulted")
		obs = shell(p, "ls")
		assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
	}
}

// TestSupervisorUnreachableAtStartRefuses: Harness starts; its actions
// are refused until the harness answers.
func TestSupervisorUnreachableAtStartRefuses(t *testing.T) {
	p, _ := open(t, unixYAML(filepath.Join(shortDir(t), "nobody.sock")))
	obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}})
	assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
}

// TestSupervisorModify: the harness's modified arguments are validated
// again and run; the audit log shows both.
func TestSupervisorModify(t *testing.T) {
	peer := startPeer(t, func(_ int, tool string, args map[string]any) ahp.Decision {
		if tool == "workspace_read_file" && args["path"] == "secret.txt" {
			mp, _ := ahp.NewPreAction(tool, map[string]any{"path": "a.txt"}, nil)
			return ahp.Decision{Kind: ahp.Modify, ModifiedPayload: mp}
		}
		if tool == "workspace_read_file" && args["path"] == "bad.txt" {
			mp, _ := ahp.NewPreAction(tool, map[string]any{"path": 42}, nil)
			return ahp.Decision{Kind: ahp.Modify, ModifiedPayload: mp}
		}
		if tool == "workspace_read_file" && args["path"] == "other-tool.txt" {
			mp, _ := ahp.NewPreAction("workspace_run_shell", map[string]any{"command": "rm -rf victim"}, nil)
			return ahp.Decision{Kind: ahp.Modify, ModifiedPayload: mp}
		}
		return ahp.Decision{Kind: ahp.Allow}
	})
	p, _ := open(t, unixYAML(peer.sock))
	obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "secret.txt"}})
	require.Equal(t, action.StatusOK, obs.Status, obs.Message)
	assert.Equal(t, "one\n", obs.Payload["content"])

	obs = p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "bad.txt"}})
	assert.Equal(t, action.CodeInvalidInput, obs.Code, "modified input is validated again: %s", obs.Message)

	obs = p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "other-tool.txt"}})
	assert.Equal(t, action.CodeHarnessBlocked, obs.Code, "a modify may not change the action: %s", obs.Message)

	log, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(p.Config.Harness.Workspace.Root)), filepath.Base(filepath.Dir(p.Config.Harness.Workspace.Root)), "audit.jsonl"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "secret.txt", "the audit log shows the original input")
	assert.Contains(t, string(log), "ahp_supervisor", "and which step modified it")
}

// TestSupervisorDeferThenAllow: a defer is retried after its delay; a
// harness that keeps deferring refuses the action after max-defers.
func TestSupervisorDeferThenAllow(t *testing.T) {
	peer := startPeer(t, func(n int, tool string, args map[string]any) ahp.Decision {
		if args["path"] == "a.txt" && n == 1 {
			return ahp.Decision{Kind: ahp.Defer, RetryAfterMS: 50, Reason: "busy"}
		}
		if args["path"] == "forever.txt" {
			return ahp.Decision{Kind: ahp.Defer, RetryAfterMS: 10, Reason: "still busy"}
		}
		return ahp.Decision{Kind: ahp.Allow}
	})
	p, _ := open(t, unixYAML(peer.sock)+"      max-defers: 2\n")
	start := time.Now()
	obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}})
	assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond, "the retry waited retry_after_ms")
	assert.Equal(t, int32(2), peer.calls.Load(), "asked twice")

	obs = p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "forever.txt"}})
	assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
	assert.Contains(t, obs.Message, "deferred")
	assert.Equal(t, int32(2+3), peer.calls.Load(), "the first ask and max-defers retries")
}

// TestSupervisorEscalate: escalate becomes the guard's ask: the caller
// gets needs_confirmation with an approval, and nothing runs.
func TestSupervisorEscalate(t *testing.T) {
	peer := startPeer(t, func(_ int, tool string, _ map[string]any) ahp.Decision {
		if tool == "workspace_run_shell" {
			return ahp.Decision{Kind: ahp.Escalate, Reason: "a person decides deletions", EscalationTarget: "security"}
		}
		return ahp.Decision{Kind: ahp.Allow}
	})
	p, root := open(t, unixYAML(peer.sock))
	obs := shell(p, "rm -r victim")
	assert.Equal(t, action.StatusNeedsConfirmation, obs.Status, obs.Message)
	assert.Equal(t, action.CodeApprovalRequired, obs.Code)
	assert.Contains(t, obs.Message, "a person decides deletions")
	require.NotNil(t, obs.Approval)
	assert.NotEmpty(t, obs.Approval.ID)
	_, err := os.Stat(filepath.Join(root, "victim"))
	assert.NoError(t, err, "nothing ran")
}

// TestSupervisorSlowOrNonsenseRefuses: a harness that answers late, or
// answers what is not a decision, refuses the action.
func TestSupervisorSlowOrNonsenseRefuses(t *testing.T) {
	t.Run("slow", func(t *testing.T) {
		peer := startPeer(t, func(int, string, map[string]any) ahp.Decision {
			time.Sleep(400 * time.Millisecond)
			return ahp.Decision{Kind: ahp.Allow}
		})
		p, _ := open(t, "      transport: unix\n      socket: "+peer.sock+"\n      timeout-ms: 100\n")
		obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}})
		assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
		assert.Contains(t, obs.Message, "no answer within")
	})
	for name, answer := range map[string]string{
		"legacy v1 dialect":    `{"jsonrpc":"2.0","id":ID,"result":{"action":"allow","allowed":true}}`,
		"unknown decision":     `{"jsonrpc":"2.0","id":ID,"result":{"decision":"maybe"}}`,
		"block without reason": `{"jsonrpc":"2.0","id":ID,"result":{"decision":"block"}}`,
		"no result":            `{"jsonrpc":"2.0","id":ID}`,
		"not JSON-RPC 2.0":     `{"jsonrpc":"1.0","id":ID,"result":{"decision":"allow"}}`,
		"an error object":      `{"jsonrpc":"2.0","id":ID,"error":{"code":-32603,"message":"Handler error: boom"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			sock := rawPeer(t, goodHandshake, answer)
			p, _ := open(t, unixYAML(sock))
			obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}})
			assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
			assert.Contains(t, obs.Message, "could not be consulted")
		})
	}
}

// goodHandshake answers a handshake as a v2.4 harness does.
const goodHandshake = `{"jsonrpc":"2.0","id":ID,"result":{"protocol_version":"2.4","harness_info":{"name":"raw","version":"1","capabilities":[]}}}`

// rawPeer is a harness on a Unix socket that answers a handshake with
// hello and every other request with answer (ID replaced by the request's
// id).
func rawPeer(t *testing.T, hello, answer string) string {
	t.Helper()
	sock := filepath.Join(shortDir(t), "raw.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					var m struct {
						ID     json.RawMessage `json:"id"`
						Method string          `json:"method"`
					}
					if json.Unmarshal(sc.Bytes(), &m) != nil || m.ID == nil {
						continue
					}
					out := answer
					if m.Method == "ahp/handshake" {
						out = hello
					}
					if _, err := c.Write([]byte(strings.ReplaceAll(out, "ID", string(m.ID)) + "\n")); err != nil {
						return
					}
				}
			}(c)
		}
	}()
	return sock
}

// TestSupervisorRefusesAnotherMajorVersion: a harness that answers the
// handshake with protocol 1.0 is refused.
func TestSupervisorRefusesAnotherMajorVersion(t *testing.T) {
	sock := rawPeer(t, `{"jsonrpc":"2.0","id":ID,"result":{"protocol_version":"1.0","harness_info":{"name":"old","version":"1","capabilities":[]}}}`,
		`{"jsonrpc":"2.0","id":ID,"result":{"decision":"allow"}}`)
	p, _ := open(t, unixYAML(sock))
	obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}})
	assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
}

// TestSupervisorWithTheReferenceStdioHarness runs the reference
// repository's Python stdio example harness (which blocks "rm -rf" and
// "dd if=") as the supervisor, when HARNESS_AHP_REFERENCE names a
// checkout of AI45Lab/AgentHarnessProtocol. Its code is not part of this
// repository.
func TestSupervisorWithTheReferenceStdioHarness(t *testing.T) {
	ref := os.Getenv("HARNESS_AHP_REFERENCE")
	if ref == "" {
		t.Skip("HARNESS_AHP_REFERENCE is not set (a checkout of AI45Lab/AgentHarnessProtocol)")
	}
	script := filepath.Join(ref, "examples", "simple_server.py")
	if _, err := os.Stat(script); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	py, err := exec.LookPath("python3")
	require.NoError(t, err)
	p, root := open(t, "      transport: stdio\n      command: ["+py+", "+script+"]\n      timeout-ms: 5000\n")
	obs := shell(p, "rm -rf victim")
	assert.Equal(t, action.CodeHarnessBlocked, obs.Code, obs.Message)
	assert.Contains(t, obs.Message, "Dangerous command detected")
	_, err = os.Stat(filepath.Join(root, "victim"))
	assert.NoError(t, err)
	obs = shell(p, "ls")
	assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
}
