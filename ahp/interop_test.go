package ahp

// Interoperability with AHP peers we did not write: the example harnesses
// of the protocol's reference repository (AI45Lab/AgentHarnessProtocol,
// examples/*.py). Their code is neither committed nor vendored here: the
// live test runs them from a checkout named by HARNESS_AHP_REFERENCE (the
// repository's root), with Debian's /usr/bin/python3 (Flask and
// websockets for the HTTP and WebSocket examples: `make tools`). With
// -update it records every exchange into testdata/interop, and
// TestRecordedInterop replays those recordings on every run, so the
// client's reading of the peers' real answers stays pinned without Python.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// interopStep is one call of the scenario every peer goes through.
type interopStep struct {
	name string
	run  func(ctx context.Context, c *Client) string // the outcome, as text
}

func outcome(v any, err error) string {
	if err != nil {
		var re *RPCError
		switch {
		case errors.As(err, &re):
			return fmt.Sprintf("error rpc %d", re.Code)
		case errors.Is(err, ErrIncompatible):
			return "error incompatible"
		case errors.Is(err, ErrProtocol):
			return "error protocol"
		case errors.Is(err, ErrTimeout):
			return "error timeout"
		case errors.Is(err, ErrUnavailable):
			return "error unavailable"
		}
		return "error " + err.Error()
	}
	b, _ := json.Marshal(v)
	return "ok " + string(b)
}

func interopPreAction(cmd string, depth uint32) WireEvent {
	p, _ := NewPreAction("bash", map[string]string{"command": cmd}, nil)
	return WireEvent{EventType: PreAction, Depth: depth, Payload: p, Timestamp: "2026-11-23T00:00:00Z"}
}

var interopScenario = []interopStep{
	{"ls -la at depth 0", func(ctx context.Context, c *Client) string {
		return outcome(c.Send(ctx, interopPreAction("ls -la", 0)))
	}},
	{"rm -rf / at depth 0", func(ctx context.Context, c *Client) string {
		return outcome(c.Send(ctx, interopPreAction("rm -rf /", 0)))
	}},
	{"dd if= at depth 1", func(ctx context.Context, c *Client) string {
		return outcome(c.Send(ctx, interopPreAction("dd if=/dev/zero of=/dev/sda", 1)))
	}},
	{"curl at depth 2", func(ctx context.Context, c *Client) string {
		return outcome(c.Send(ctx, interopPreAction("curl http://example.com", 2)))
	}},
	{"ls at depth 3", func(ctx context.Context, c *Client) string {
		return outcome(c.Send(ctx, interopPreAction("ls", 3)))
	}},
	{"post_action notification", func(ctx context.Context, c *Client) string {
		return outcome(nil, c.Notify(ctx, WireEvent{EventType: PostAction, Timestamp: "2026-11-23T00:00:01Z", Payload: json.RawMessage(`{"status":"ok"}`)}))
	}},
	{"batch", func(ctx context.Context, c *Client) string {
		return outcome(c.Batch(ctx, []WireEvent{interopPreAction("ls", 0), {EventType: PostAction, Timestamp: "2026-11-23T00:00:02Z"},
			interopPreAction("rm -rf /", 1)}))
	}},
	{"query", func(ctx context.Context, c *Client) string {
		return outcome(c.Query(ctx, "permission", map[string]string{"question": "May I delete the build directory?"}))
	}},
}

// runScenario handshakes and, if that passed, runs every step; it
// returns the outcomes in order.
func runScenario(t *testing.T, opts ClientOptions) []string {
	ctx := context.Background()
	opts.SessionID, opts.AgentID = "interop-session", "interop-agent"
	opts.Timeout = 10 * time.Second
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs, err := c.Handshake(ctx)
	out := []string{"handshake: " + outcome(hs, err)}
	if err != nil {
		return out
	}
	for _, s := range interopScenario {
		out = append(out, s.name+": "+s.run(ctx, c))
	}
	return out
}

// recording collects the messages a client sent and received.
type recording struct {
	mu    sync.Mutex
	lines []string
}

func (r *recording) trace(out bool, msg []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if out {
		r.lines = append(r.lines, "> "+string(msg))
	} else {
		r.lines = append(r.lines, "< "+strings.TrimSpace(string(msg)))
	}
}

func python() string {
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

// startPython runs a reference example listening on port and waits until
// the port takes connections.
func startPython(t *testing.T, script, port string) {
	cmd := exec.Command(python(), script, port)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(15 * time.Second)
	for {
		nc, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			nc.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never listened on %s", script, port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReferenceInterop runs the scenario against the reference's example
// harnesses: simple_server.py (stdio: blocks rm -rf and dd if=),
// ahp_server.py (stdio, the legacy v1 dialect: refused), http_server.py
// (Flask, /ahp) and websocket_server.py (depth-aware: defers deep agents).
func TestReferenceInterop(t *testing.T) {
	ref := os.Getenv("HARNESS_AHP_REFERENCE")
	if ref == "" {
		t.Skip("HARNESS_AHP_REFERENCE is not set: no checkout of AI45Lab/AgentHarnessProtocol to run its example harnesses from (TestRecordedInterop replays their recorded answers)")
	}
	ex := filepath.Join(ref, "examples")
	peers := map[string]func(t *testing.T) ClientOptions{
		"simple_server_stdio": func(t *testing.T) ClientOptions {
			return ClientOptions{Transport: TransportStdio, Command: []string{python(), filepath.Join(ex, "simple_server.py")}}
		},
		"ahp_server_v1_stdio": func(t *testing.T) ClientOptions {
			return ClientOptions{Transport: TransportStdio, Command: []string{python(), filepath.Join(ex, "ahp_server.py")}}
		},
		"http_server_flask": func(t *testing.T) ClientOptions {
			if exec.Command(python(), "-c", "import flask").Run() != nil {
				t.Skip("Flask is missing for " + python() + " (make tools)")
			}
			port := freePort(t)
			startPython(t, filepath.Join(ex, "http_server.py"), port)
			return ClientOptions{Transport: TransportHTTP, URL: "http://127.0.0.1:" + port + "/ahp", APIKey: "interop-key"}
		},
		"websocket_server": func(t *testing.T) ClientOptions {
			if exec.Command(python(), "-c", "import websockets").Run() != nil {
				t.Skip("websockets is missing for " + python() + " (make tools)")
			}
			port := freePort(t)
			startPython(t, filepath.Join(ex, "websocket_server.py"), port)
			return ClientOptions{Transport: TransportWebSocket, URL: "ws://127.0.0.1:" + port + "/ahp", APIKey: "interop-key"}
		},
	}
	for name, peer := range peers {
		t.Run(name, func(t *testing.T) {
			opts := peer(t)
			rec := &recording{}
			opts.trace = rec.trace
			got := runScenario(t, opts)
			path := filepath.Join("testdata", "interop", name+".txt")
			if *update {
				var b strings.Builder
				fmt.Fprintf(&b, "# Recorded with the reference repository's examples (%s over %s).\n", name, opts.Transport)
				for _, l := range rec.lines {
					b.WriteString(l + "\n")
				}
				for _, o := range got {
					b.WriteString("= " + o + "\n")
				}
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The WebSocket example stamps its allow decisions with the time.
			want := readInterop(t, path).outcomes
			if stamp.ReplaceAllString(strings.Join(got, "\n"), "") != stamp.ReplaceAllString(strings.Join(want, "\n"), "") {
				t.Fatalf("outcomes:\n%s\nrecorded:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

var stamp = regexp.MustCompile(`"timestamp":"[^"]*"`)

type interopRecord struct {
	requests []map[string]any // requests with an id, in order
	answers  map[string]string
	outcomes []string
}

func readInterop(t *testing.T, path string) *interopRecord {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := &interopRecord{answers: map[string]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "> "):
			var m map[string]any
			if err := json.Unmarshal([]byte(line[2:]), &m); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if _, ok := m["id"]; ok {
				r.requests = append(r.requests, m)
			}
		case strings.HasPrefix(line, "< "):
			var head struct {
				ID any `json:"id"`
			}
			if json.Unmarshal([]byte(line[2:]), &head) == nil {
				if id, ok := head.ID.(string); ok {
					r.answers[id] = line[2:]
				}
			}
		case strings.HasPrefix(line, "= "):
			r.outcomes = append(r.outcomes, line[2:])
		}
	}
	return r
}

// TestRecordedInterop replays the answers the reference's example
// harnesses gave (testdata/interop) to the same scenario: our client must
// reach exactly the recorded outcomes — the Python peers' blocks, allows,
// defers, queries and batches taken, the legacy v1 peer refused, the
// batch simple_server.py does not know refused.
func TestRecordedInterop(t *testing.T) {
	files, _ := filepath.Glob("testdata/interop/*.txt")
	if len(files) == 0 {
		t.Fatal("no recorded interop exchanges")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			rec := readInterop(t, f)
			var mu sync.Mutex
			next := 0
			sock := scriptedPeer(t, func(req map[string]any) []byte {
				mu.Lock()
				defer mu.Unlock()
				if _, ok := req["id"]; !ok {
					return nil
				}
				if next >= len(rec.requests) {
					t.Errorf("request %v beyond the recording", req["method"])
					return nil
				}
				want := rec.requests[next]
				next++
				if want["method"] != req["method"] {
					t.Errorf("request %d: method %v, recorded %v", next, req["method"], want["method"])
				}
				recID, _ := want["id"].(string)
				answer, ok := rec.answers[recID]
				if !ok {
					return nil
				}
				var m map[string]any
				json.Unmarshal([]byte(answer), &m)
				m["id"] = req["id"]
				b, _ := json.Marshal(m)
				return b
			})
			got := runScenario(t, ClientOptions{Transport: TransportUnix, Socket: sock})
			if strings.Join(got, "\n") != strings.Join(rec.outcomes, "\n") {
				t.Fatalf("outcomes:\n%s\nrecorded:\n%s", strings.Join(got, "\n"), strings.Join(rec.outcomes, "\n"))
			}
		})
	}
}
