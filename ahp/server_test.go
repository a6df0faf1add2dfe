package ahp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the answers recorded in testdata/server")

// ruleHandler is the Handler the recorded exchanges run against: it
// blocks commands holding "rm -rf", fails for the tool "explode", allows
// the rest, answers queries "yes", and records the notifications it sees.
type ruleHandler struct {
	mu       sync.Mutex
	notified []string
}

func (h *ruleHandler) HandleEvent(_ context.Context, ev *WireEvent) (Decision, error) {
	pa, err := ReadPreAction(ev.Payload)
	if err == nil && pa.Tool == "explode" {
		return Decision{}, errors.New("policy engine unavailable")
	}
	if err == nil && strings.Contains(pa.Command(), "rm -rf") {
		return Decision{Kind: Block, Reason: "dangerous command"}, nil
	}
	return Decision{Kind: Allow}, nil
}

func (h *ruleHandler) HandleNotification(_ context.Context, ev *WireEvent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notified = append(h.notified, string(ev.EventType))
	return nil
}

func (h *ruleHandler) HandleQuery(_ context.Context, q *QueryRequest) (*QueryResponse, error) {
	return &QueryResponse{Answer: json.RawMessage(`"yes"`), Reason: "asked " + q.QueryType}, nil
}

// exchange is a recorded file of testdata/server: directives ("! key n"),
// requests ("> msg") each followed by its answer ("< msg", or "< -" for
// none), and the notifications the handler saw ("notified: a,b").
type exchange struct {
	comments   []string
	directives []string
	config     HarnessConfig
	requests   []string
	answers    []string
	notified   string
}

func readExchange(t *testing.T, path string) *exchange {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x := &exchange{config: DefaultHarnessConfig()}
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
			x.comments = append(x.comments, line)
		case strings.HasPrefix(line, "! "):
			x.directives = append(x.directives, line)
			f := strings.Fields(line)
			n, _ := strconv.ParseUint(f[2], 10, 32)
			switch f[1] {
			case "max_depth":
				d := uint32(n)
				x.config.MaxDepth = &d
			case "batch_size":
				x.config.BatchSize = &n
			default:
				t.Fatalf("%s: unknown directive %s", path, line)
			}
		case strings.HasPrefix(line, "> "):
			x.requests = append(x.requests, line[2:])
		case strings.HasPrefix(line, "< "):
			x.answers = append(x.answers, line[2:])
		case strings.HasPrefix(line, "notified:"):
			x.notified = strings.TrimSpace(strings.TrimPrefix(line, "notified:"))
		case strings.TrimSpace(line) == "":
		default:
			t.Fatalf("%s: bad line %q", path, line)
		}
	}
	return x
}

func (x *exchange) write(path string, answers []string, notified string) error {
	var b strings.Builder
	for _, l := range x.comments {
		b.WriteString(l + "\n")
	}
	for _, l := range x.directives {
		b.WriteString(l + "\n")
	}
	for i, r := range x.requests {
		fmt.Fprintf(&b, "> %s\n< %s\n", r, answers[i])
	}
	fmt.Fprintf(&b, "notified: %s\n", notified)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// TestServerRules replays every recorded exchange of testdata/server
// through Server.HandleMessage: each rule of the protocol (handshake and
// versions, depth, request/notification mismatch, batches, error codes,
// ids, contract payloads, specialized events, queries) answers exactly
// the recorded response, or nothing where "< -" says so, and the handler
// sees exactly the recorded notifications.
func TestServerRules(t *testing.T) {
	files, _ := filepath.Glob("testdata/server/*.txt")
	if len(files) == 0 {
		t.Fatal("no recorded exchanges")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			x := readExchange(t, f)
			h := &ruleHandler{}
			srv := NewServer(h, ServerOptions{Config: &x.config})
			got := make([]string, len(x.requests))
			for i, r := range x.requests {
				got[i] = "-"
				if resp := srv.HandleMessage(context.Background(), []byte(r)); resp != nil {
					got[i] = string(resp)
				}
			}
			notified := strings.Join(h.notified, ",")
			if *update {
				if err := x.write(f, got, notified); err != nil {
					t.Fatal(err)
				}
				return
			}
			if len(x.answers) != len(x.requests) {
				t.Fatalf("%d requests, %d answers recorded", len(x.requests), len(x.answers))
			}
			for i := range got {
				if got[i] != x.answers[i] {
					t.Errorf("request %s\n got %s\nwant %s", x.requests[i], got[i], x.answers[i])
				}
			}
			if notified != x.notified {
				t.Errorf("notified %q, want %q", notified, x.notified)
			}
		})
	}
}

// TestServeStreamOrdered runs every recorded exchange through ServeStream
// with one message at a time: the stdio transport writes exactly the
// recorded answers, in order, one per line, and nothing for the rest.
func TestServeStreamOrdered(t *testing.T) {
	files, _ := filepath.Glob("testdata/server/*.txt")
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			x := readExchange(t, f)
			srv := NewServer(&ruleHandler{}, ServerOptions{Config: &x.config, MaxConcurrent: 1})
			in := strings.Join(x.requests, "\n") + "\n"
			var out bytes.Buffer
			if err := srv.ServeStream(context.Background(), strings.NewReader(in), &out); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, a := range x.answers {
				if a != "-" {
					want = append(want, a)
				}
			}
			got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
			if out.Len() == 0 {
				got = nil
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("stream answers:\n%s\nwant:\n%s", out.String(), strings.Join(want, "\n"))
			}
		})
	}
}
