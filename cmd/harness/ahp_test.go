package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harness-runtime/harness/ahp"
)

// ahpServeConfig writes a configuration over a fresh root holding
// README.md, its audit log beside the root; it returns the config's path
// and the audit log's.
func ahpServeConfig(t *testing.T, extra string) (cfg, auditPath string) {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	auditPath = filepath.Join(dir, "audit.jsonl")
	cfg = filepath.Join(dir, "harness.yaml")
	body := "harness:\n  workspace: {root: " + root + "}\n  audit: {path: " + auditPath + "}\n" + extra
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg, auditPath
}

// TestAHPServeStdioAnswersTheRecordedSequence replays
// testdata/ahp/serve.txt through `harness ahp serve --stdio`: every
// request gets exactly the recorded answer (matched by id, compared as
// JSON), and nothing else is answered.
func TestAHPServeStdioAnswersTheRecordedSequence(t *testing.T) {
	data, err := os.ReadFile("testdata/ahp/serve.txt")
	if err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	want := map[string]string{}
	var lastID string
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "> "):
			in.WriteString(line[2:] + "\n")
			lastID = ""
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(line[2:]), &m) == nil && m["id"] != nil {
				lastID = string(m["id"])
			}
		case line == "< -":
			if lastID != "" {
				t.Fatalf("recorded no answer for request %s, which has an id", lastID)
			}
		case strings.HasPrefix(line, "< "):
			want[lastID] = line[2:]
		}
	}
	cfg, auditPath := ahpServeConfig(t, "")
	var out, errb bytes.Buffer
	code := dispatch(context.Background(), []string{"ahp", "serve", "--stdio", "--config", cfg}, stdio{in: &in, out: &out, err: &errb})
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("an answer is not JSON: %q", sc.Text())
		}
		id := string(m["id"])
		if _, dup := got[id]; dup {
			t.Errorf("answered %s twice", id)
		}
		got[id] = sc.Text()
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("no answer to %s", id)
			continue
		}
		var gv, wv any
		_ = json.Unmarshal([]byte(g), &gv)
		_ = json.Unmarshal([]byte(w), &wv)
		if !reflect.DeepEqual(gv, wv) {
			t.Errorf("answer to %s:\n got %s\nwant %s", id, g, w)
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("answered what must not be answered: %s", g)
		}
	}
	// Every event was recorded, the decision beside it.
	log, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), `"kind":"ahp_event"`); n < 10 {
		t.Errorf("%d AHP events in the audit log, want every event handled", n)
	}
}

// TestAHPServeUnixWithOurClient: `harness ahp serve --unix` answers our
// own client, which reads the guard's decisions.
func TestAHPServeUnixWithOurClient(t *testing.T) {
	cfg, _ := ahpServeConfig(t, "")
	sock := filepath.Join(t.TempDir(), "ahp.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var errb bytes.Buffer
	go func() {
		done <- dispatch(ctx, []string{"ahp", "serve", "--unix", sock, "--config", cfg}, stdio{in: strings.NewReader(""), out: &bytes.Buffer{}, err: &errb})
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("exit %d: %s", code, errb.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("harness ahp serve did not stop when its context ended")
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the socket never appeared: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v: want 0600", fi.Mode().Perm(), err)
	}
	cctx, ccancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer ccancel()
	cl, err := ahp.Dial(cctx, ahp.ClientOptions{Transport: ahp.TransportUnix, Socket: sock, SessionID: "s-1", AgentID: "agent-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for cmd, want := range map[string]ahp.DecisionKind{"ls -la": ahp.Allow, "rm -rf /": ahp.Block, "ls | sh": ahp.Block} {
		payload, _ := ahp.NewPreAction("bash", map[string]any{"command": cmd}, nil)
		d, err := cl.Send(cctx, ahp.WireEvent{EventType: ahp.PreAction, SessionID: "s-1", AgentID: "agent-1",
			Timestamp: time.Now().UTC().Format(time.RFC3339), Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		if d.Kind != want {
			t.Errorf("%q: %s (%s), want %s", cmd, d.Kind, d.Reason, want)
		}
	}
}
