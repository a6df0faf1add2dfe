package ahp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testHandler allows every command but those holding "rm -rf" (blocked),
// fails for the tool "explode", exits the process for the command "die"
// (when it runs as a stdio helper), echoes the command in the decision's
// metadata, answers queries and idle, and records notifications.
type testHandler struct {
	mu       sync.Mutex
	notified []WireEvent
	helper   bool
}

func (h *testHandler) HandleEvent(_ context.Context, ev *WireEvent) (Decision, error) {
	pa, err := ReadPreAction(ev.Payload)
	if err != nil {
		return Decision{}, err
	}
	cmd := pa.Command()
	switch {
	case pa.Tool == "explode":
		return Decision{}, errors.New("policy engine unavailable")
	case cmd == "die" && h.helper:
		os.Exit(3)
	case strings.Contains(cmd, "rm -rf"):
		return Decision{Kind: Block, Reason: "dangerous command: " + cmd}, nil
	}
	return Decision{Kind: Allow, Metadata: map[string]any{"command": cmd}}, nil
}

func (h *testHandler) HandleNotification(_ context.Context, ev *WireEvent) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notified = append(h.notified, *ev)
	return nil
}

func (h *testHandler) HandleQuery(_ context.Context, q *QueryRequest) (*QueryResponse, error) {
	return &QueryResponse{Answer: json.RawMessage(`"no"`), Reason: "query " + q.QueryType, Alternatives: []string{"ask"}}, nil
}

func (h *testHandler) HandleSpecialized(_ context.Context, ev *WireEvent, payload any) (SpecializedDecision, error) {
	if p, ok := payload.(*RateLimitPayload); ok {
		return &RateLimitDecision{Kind: "retry", RetryAfterMS: p.RetryAfterMS * 2}, nil
	}
	return &IdleDecision{Kind: "defer", Reason: "busy"}, nil
}

func (h *testHandler) seen() []WireEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]WireEvent(nil), h.notified...)
}

// TestMain lets the test binary act as a stdio harness: with
// AHP_TEST_HELPER=serve it serves testHandler on stdin and stdout, with
// AHP_TEST_HELPER=bench the trivial allowAll.
func TestMain(m *testing.M) {
	if mode := os.Getenv("AHP_TEST_HELPER"); mode == "serve" || mode == "bench" {
		var h Handler = &testHandler{helper: true}
		if mode == "bench" {
			h = allowAll
		}
		srv := NewServer(h, ServerOptions{})
		if err := srv.ServeStream(context.Background(), os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperCommand(t testing.TB) ClientOptions {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return ClientOptions{Transport: TransportStdio, Command: []string{exe},
		Env: append(os.Environ(), "AHP_TEST_HELPER=serve"), Stderr: os.Stderr}
}

// shortSocket returns a socket path short enough for sun_path.
func shortSocket(t testing.TB) string {
	dir, err := os.MkdirTemp("", "ahp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "h.sock")
}

// serveAll starts srv on every transport and returns the client options
// reaching each.
func serveAll(t testing.TB, srv *Server, key string) map[string]ClientOptions {
	sock := shortSocket(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	mux := http.NewServeMux()
	mux.Handle("POST /ahp", srv.HTTPHandler())
	mux.Handle("/ws", srv.WebSocketHandler())
	hs := httptest.NewServer(mux)
	t.Cleanup(func() { hs.Close(); cancel(); <-done })
	return map[string]ClientOptions{
		"stdio": helperCommand(t),
		"unix":  {Transport: TransportUnix, Socket: sock},
		"http":  {Transport: TransportHTTP, URL: hs.URL + "/ahp", APIKey: key},
		"ws":    {Transport: TransportWebSocket, URL: "ws" + strings.TrimPrefix(hs.URL, "http") + "/ws", BearerToken: key},
	}
}

func preAction(t testing.TB, tool, command string) WireEvent {
	p, err := NewPreAction(tool, map[string]any{"command": command}, map[string]any{"action_id": "act-1"})
	if err != nil {
		t.Fatal(err)
	}
	return WireEvent{EventType: PreAction, Payload: p}
}

// TestClientServerAllTransports runs our client against our server over
// stdio (a spawned process), a Unix socket, HTTP (API key) and WebSocket
// (bearer token): handshake, blocking events, many concurrent requests
// multiplexed on one connection, notifications, batches, queries,
// specialized events and a handler error.
func TestClientServerAllTransports(t *testing.T) {
	h := &testHandler{}
	srv := NewServer(h, ServerOptions{Authenticate: StaticKeys("k-1")})
	for name, opts := range serveAll(t, srv, "k-1") {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			opts.SessionID = "s-" + name
			c, err := Dial(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			hs, err := c.Handshake(ctx)
			if err != nil || hs.ProtocolVersion != Version || hs.HarnessInfo.Name != "harness" ||
				hs.Config == nil || *hs.Config.MaxDepth != DefaultMaxDepth {
				t.Fatalf("handshake %+v, %v", hs, err)
			}

			d, err := c.Send(ctx, preAction(t, "bash", "rm -rf /"))
			if err != nil || d.Kind != Block || d.Reason != "dangerous command: rm -rf /" {
				t.Fatalf("rm -rf: %+v, %v", d, err)
			}

			var wg sync.WaitGroup
			errs := make(chan error, 64)
			for i := range 64 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cmd := fmt.Sprintf("echo %d", i)
					d, err := c.Send(ctx, preAction(t, "bash", cmd))
					if err != nil {
						errs <- err
					} else if d.Kind != Allow || d.Metadata["command"] != cmd {
						errs <- fmt.Errorf("%s answered %+v", cmd, d)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}

			if err := c.Notify(ctx, WireEvent{EventType: PostAction, Payload: json.RawMessage(`{"status":"ok"}`)}); err != nil {
				t.Fatal(err)
			}
			ds, err := c.Batch(ctx, []WireEvent{preAction(t, "bash", "ls"), {EventType: SessionEnd}, preAction(t, "bash", "rm -rf x")})
			if err != nil || len(ds) != 3 || ds[0].Kind != Allow || ds[1].Kind != Allow || ds[2].Kind != Block {
				t.Fatalf("batch %+v, %v", ds, err)
			}
			q, err := c.Query(ctx, "permission", map[string]string{"question": "delete?"})
			if err != nil || string(q.Answer) != `"no"` || q.Reason != "query permission" {
				t.Fatalf("query %+v, %v", q, err)
			}
			sd, err := c.SendSpecialized(ctx, WireEvent{EventType: RateLimit,
				Payload: json.RawMessage(`{"session_id":"s","limit_type":{"custom":"gpu"},"retry_after_ms":50,"current_usage":"x"}`)})
			if rd, ok := sd.(*RateLimitDecision); err != nil || !ok || rd.Kind != "retry" || rd.RetryAfterMS != 100 {
				t.Fatalf("rate_limit %+v, %v", sd, err)
			}
			_, err = c.Send(ctx, preAction(t, "explode", ""))
			var re *RPCError
			if !errors.As(err, &re) || re.Code != CodeInternalError || !strings.Contains(re.Message, "policy engine unavailable") {
				t.Fatalf("handler error: %v", err)
			}
			if _, err := c.Send(ctx, WireEvent{EventType: PostAction}); err == nil {
				t.Fatal("Send accepted a notification type")
			}
			if name == "stdio" {
				return // the helper's notifications are in its own process
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				var post, end int
				for _, ev := range h.seen() {
					if ev.SessionID == opts.SessionID && ev.EventType == PostAction {
						post++
					}
					if ev.SessionID == opts.SessionID && ev.EventType == SessionEnd {
						end++
					}
				}
				if post == 1 && end == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("notifications seen: %d post_action, %d session_end", post, end)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// TestClientAuthRefused: HTTP and WebSocket harnesses refuse a wrong key,
// and the client reports the harness unavailable.
func TestClientAuthRefused(t *testing.T) {
	srv := NewServer(&testHandler{}, ServerOptions{Authenticate: StaticKeys("right")})
	all := serveAll(t, srv, "wrong")
	for _, name := range []string{"http", "ws"} {
		_, err := Dial(context.Background(), all[name])
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: dial with a wrong key: %v", name, err)
		}
	}
}

// scriptedPeer is a harness written for the test: it answers each request
// line on a Unix socket with what answer returns (nil: no answer).
func scriptedPeer(t testing.TB, answer func(req map[string]any) []byte) string {
	sock := shortSocket(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				sc := bufio.NewScanner(nc)
				for sc.Scan() {
					var req map[string]any
					if json.Unmarshal(sc.Bytes(), &req) != nil {
						continue
					}
					if a := answer(req); a != nil {
						nc.Write(append(a, '\n'))
					}
				}
			}()
		}
	}()
	return sock
}

func idJSON(req map[string]any) string {
	b, _ := json.Marshal(req["id"])
	return string(b)
}

const goodHandshake = `"result":{"protocol_version":"2.4","harness_info":{"name":"peer","version":"1","capabilities":[]}}`

// TestClientRefusesLegacyV1Peer: a harness speaking the legacy v1 dialect
// ("harness/event", {"action": "continue"|"block"}) is refused: its
// handshake answer is malformed, and a v1 decision to a v2 handshake that
// passed is not a decision.
func TestClientRefusesLegacyV1Peer(t *testing.T) {
	v1 := func(req map[string]any) []byte {
		params, _ := req["params"].(map[string]any)
		payload, _ := params["payload"].(map[string]any)
		args, _ := payload["arguments"].(map[string]any)
		if cmd, _ := args["command"].(string); strings.Contains(cmd, "rm -rf") {
			return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,"result":{"action":"block","reason":"v1 says no"}}`)
		}
		return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,"result":{"action":"continue"}}`)
	}
	_, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: scriptedPeer(t, v1)})
	if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "protocol_version") {
		t.Fatalf("v1 handshake: %v", err)
	}

	// A v1 harness behind a v2 handshake still answers events in v1.
	mixed := func(req map[string]any) []byte {
		if req["method"] == MethodHandshake {
			return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,` + goodHandshake + `}`)
		}
		return v1(req)
	}
	c, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: scriptedPeer(t, mixed)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, cmd := range []string{"ls", "rm -rf /"} {
		d, err := c.Send(context.Background(), preAction(t, "bash", cmd))
		if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "missing field `decision`") {
			t.Fatalf("%s: v1 decision taken: %+v, %v", cmd, d, err)
		}
	}

	// A harness of another major version.
	old := func(req map[string]any) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,"result":{"protocol_version":"1.0","harness_info":{"name":"old","version":"1","capabilities":[]}}}`)
	}
	if _, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: scriptedPeer(t, old)}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("v1.0 harness: %v", err)
	}
	refusing := func(req map[string]any) []byte {
		return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,"error":{"code":-32000,"message":"Unsupported protocol version: 2.4"}}`)
	}
	if _, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: scriptedPeer(t, refusing)}); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("harness refusing our version: %v", err)
	}
}

// TestClientValidatesAnswers: every malformed answer to a pre_action is an
// error, never a decision.
func TestClientValidatesAnswers(t *testing.T) {
	cases := []struct {
		name, answer string // answer: %s is the request's id
		want         error
		wantText     string
	}{
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":%s,"result":{"decision":"allow"}}`, ErrProtocol, "jsonrpc"},
		{"no jsonrpc", `{"id":%s,"result":{"decision":"allow"}}`, ErrProtocol, "jsonrpc"},
		{"missing result", `{"jsonrpc":"2.0","id":%s}`, ErrProtocol, "no result"},
		{"null result", `{"jsonrpc":"2.0","id":%s,"result":null}`, ErrProtocol, "no result"},
		{"result and error", `{"jsonrpc":"2.0","id":%s,"result":{"decision":"allow"},"error":{"code":1,"message":"x"}}`, ErrProtocol, "both"},
		{"malformed error", `{"jsonrpc":"2.0","id":%s,"error":{"message":"x"}}`, ErrProtocol, "malformed error"},
		{"unknown decision", `{"jsonrpc":"2.0","id":%s,"result":{"decision":"maybe"}}`, ErrProtocol, "unknown decision"},
		{"block without reason", `{"jsonrpc":"2.0","id":%s,"result":{"decision":"block"}}`, ErrProtocol, "reason"},
		{"result not an object", `{"jsonrpc":"2.0","id":%s,"result":"allow"}`, ErrProtocol, "malformed result"},
		{"numeric id", `{"jsonrpc":"2.0","id":1,"result":{"decision":"allow"}}`, ErrProtocol, "not one of ours"},
		{"other id", `{"jsonrpc":"2.0","id":"zzz","result":{"decision":"allow"}}`, ErrProtocol, "never sent"},
		{"null id error", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`, ErrProtocol, "not one of ours"},
		{"not json", `{"jsonrpc":`, ErrProtocol, "not JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sock := scriptedPeer(t, func(req map[string]any) []byte {
				if req["method"] == MethodHandshake {
					return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,` + goodHandshake + `}`)
				}
				return []byte(strings.ReplaceAll(tc.answer, "%s", idJSON(req)))
			})
			c, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: sock, Timeout: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			d, err := c.Send(context.Background(), preAction(t, "bash", "ls"))
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.wantText) {
				t.Fatalf("answer %s: got %+v, %v; want %v (%q)", tc.answer, d, err, tc.want, tc.wantText)
			}
		})
	}
	t.Run("error object", func(t *testing.T) {
		sock := scriptedPeer(t, func(req map[string]any) []byte {
			if req["method"] == MethodHandshake {
				return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,` + goodHandshake + `}`)
			}
			return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,"error":{"code":-32602,"message":"Invalid event: depth","data":{"max":1}}}`)
		})
		c, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: sock})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, err = c.Send(context.Background(), preAction(t, "bash", "ls"))
		var re *RPCError
		if !errors.As(err, &re) || re.Code != CodeInvalidParams || string(re.Data) != `{"max":1}` {
			t.Fatalf("got %v", err)
		}
	})
}

// TestClientBatchCountMismatch: a batch answered with fewer decisions than
// events is refused.
func TestClientBatchCountMismatch(t *testing.T) {
	sock := scriptedPeer(t, func(req map[string]any) []byte {
		if req["method"] == MethodHandshake {
			return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,` + goodHandshake + `}`)
		}
		return []byte(`{"jsonrpc":"2.0","id":` + idJSON(req) + `,"result":{"decisions":[{"decision":"allow"}]}}`)
	})
	c, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ds, err := c.Batch(context.Background(), []WireEvent{preAction(t, "bash", "ls"), preAction(t, "bash", "rm -rf /")})
	if !errors.Is(err, ErrProtocol) || ds != nil {
		t.Fatalf("got %+v, %v", ds, err)
	}
	if _, err := c.Batch(context.Background(), []WireEvent{{EventType: Idle}}); err == nil {
		t.Fatal("a specialized event was batched")
	}
}

// TestClientTimeout: a harness that does not answer in time is an error
// (ErrTimeout, context.DeadlineExceeded); its late answer is dropped
// without ending the connection.
func TestClientTimeout(t *testing.T) {
	var mu sync.Mutex
	slow := map[string]bool{}
	sock := scriptedPeer(t, func(req map[string]any) []byte {
		id := idJSON(req)
		if req["method"] == MethodHandshake {
			return []byte(`{"jsonrpc":"2.0","id":` + id + `,` + goodHandshake + `}`)
		}
		mu.Lock()
		first := len(slow) == 0
		slow[id] = true
		mu.Unlock()
		if first {
			time.Sleep(300 * time.Millisecond)
		}
		return []byte(`{"jsonrpc":"2.0","id":` + id + `,"result":{"decision":"allow"}}`)
	})
	c, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: sock, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Send(context.Background(), preAction(t, "bash", "ls"))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow harness: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the late answer arrives
	if d, err := c.Send(context.Background(), preAction(t, "bash", "ls")); err != nil || d.Kind != Allow {
		t.Fatalf("after a late answer: %+v, %v", d, err)
	}
}

// TestClientHarnessDiesMidSession: a stdio harness that exits while
// deciding fails that request (ErrUnavailable, never a decision); the
// next request starts it again.
func TestClientHarnessDiesMidSession(t *testing.T) {
	opts := helperCommand(t)
	opts.Stderr = nil
	c, err := Dial(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d, err := c.Send(context.Background(), preAction(t, "bash", "die"))
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("harness died: %+v, %v", d, err)
	}
	if d, err := c.Send(context.Background(), preAction(t, "bash", "rm -rf /")); err != nil || d.Kind != Block {
		t.Fatalf("restarted harness: %+v, %v", d, err)
	}
}

// TestClientReconnectsWithBackoff: when the Unix-socket harness goes away
// requests fail (at once while the backoff lasts), and once it is back
// the client connects again and handshakes.
func TestClientReconnectsWithBackoff(t *testing.T) {
	sock := shortSocket(t)
	start := func() (*Server, chan struct{}) {
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := NewServer(&testHandler{}, ServerOptions{})
		done := make(chan struct{})
		go func() { srv.Serve(context.Background(), ln); close(done) }()
		return srv, done
	}
	srv, done := start()
	c, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: sock,
		MinBackoff: 200 * time.Millisecond, MaxBackoff: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Shutdown(context.Background())
	<-done
	os.Remove(sock)
	// The first requests find the connection lost, or fail to connect;
	// then, while the backoff lasts, requests fail at once.
	inBackoff := false
	for range 3 {
		begin := time.Now()
		_, err := c.Send(context.Background(), preAction(t, "bash", "ls"))
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("harness gone: %v", err)
		}
		if strings.Contains(err.Error(), "next attempt") {
			if time.Since(begin) > 50*time.Millisecond {
				t.Fatalf("a request during backoff waited %s", time.Since(begin))
			}
			inBackoff = true
			break
		}
	}
	if !inBackoff {
		t.Fatal("no backoff after a failed connection")
	}
	start()
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := c.Send(context.Background(), preAction(t, "bash", "rm -rf /"))
		if err == nil {
			if d.Kind != Block {
				t.Fatalf("after reconnect: %+v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never reconnected: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// slowHandler allows after a delay, counting the events it started.
type slowHandler struct {
	delay   time.Duration
	started chan struct{}
}

func (h *slowHandler) HandleEvent(ctx context.Context, _ *WireEvent) (Decision, error) {
	h.started <- struct{}{}
	time.Sleep(h.delay)
	return Decision{Kind: Allow}, nil
}

// TestServerGracefulShutdown: a request being decided when Shutdown is
// called is still answered; afterwards the harness takes no connection.
func TestServerGracefulShutdown(t *testing.T) {
	h := &slowHandler{delay: 200 * time.Millisecond, started: make(chan struct{}, 1)}
	srv := NewServer(h, ServerOptions{})
	sock := shortSocket(t)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { srv.Serve(context.Background(), ln); close(served) }()
	c, err := Dial(context.Background(), ClientOptions{Transport: TransportUnix, Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	answered := make(chan error, 1)
	go func() {
		d, err := c.Send(context.Background(), preAction(t, "bash", "ls"))
		if err == nil && d.Kind != Allow {
			err = fmt.Errorf("decision %+v", d)
		}
		answered <- err
	}()
	<-h.started
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-answered; err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	<-served
	if _, err := net.Dial("unix", sock); err == nil {
		t.Fatal("connection accepted after shutdown")
	}
}

// TestServerMessageSize: a line over MaxMessageBytes is refused with
// -32600 and the connection goes on; HTTP answers 413.
func TestServerMessageSize(t *testing.T) {
	srv := NewServer(&testHandler{}, ServerOptions{MaxMessageBytes: 512, MaxConcurrent: 1})
	big := `{"jsonrpc":"2.0","id":"big","method":"ahp/event","params":{"x":"` + strings.Repeat("a", 600) + `"}}`
	small := `{"jsonrpc":"2.0","id":"q","method":"ahp/query","params":{"session_id":"s","agent_id":"a","query_type":"t","payload":null}}`
	var out strings.Builder
	if err := srv.ServeStream(context.Background(), strings.NewReader(big+"\n"+small+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid Request: message too large"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"q","result":{"answer":"no","reason":"query t","alternatives":["ask"]}}` + "\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/ahp", strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	srv.HTTPHandler().ServeHTTP(rec, req)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("HTTP: %d", rec.Code)
	}
}

// TestHTTPStatuses pins the HTTP transport's statuses: 204 for an
// accepted notification, 200 with an error for a refused one, 401
// without credentials, 405 for GET, 415 for another content type, 400 for
// a body that is not JSON-RPC.
func TestHTTPStatuses(t *testing.T) {
	srv := NewServer(&testHandler{}, ServerOptions{Authenticate: StaticKeys("k")})
	post := `{"jsonrpc":"2.0","method":"ahp/event","params":{"event_type":"post_action","session_id":"s","agent_id":"a","timestamp":"t","depth":0,"payload":{}}}`
	pre := `{"jsonrpc":"2.0","method":"ahp/event","params":{"event_type":"pre_action","session_id":"s","agent_id":"a","timestamp":"t","depth":0,"payload":{}}}`
	cases := []struct {
		name, method, ctype, auth, body string
		status                          int
		bodyHas                         string
	}{
		{"notification", "POST", "application/json", "X-API-Key: k", post, 204, ""},
		{"bearer", "POST", "application/json; charset=utf-8", "Authorization: Bearer k", post, 204, ""},
		{"blocking as notification", "POST", "application/json", "X-API-Key: k", pre, 200, "must be sent as a request"},
		{"no credentials", "POST", "application/json", "", post, 401, ""},
		{"wrong key", "POST", "application/json", "X-API-Key: nope", post, 401, ""},
		{"GET", "GET", "", "X-API-Key: k", "", 405, ""},
		{"text/plain", "POST", "text/plain", "X-API-Key: k", post, 415, ""},
		{"not JSON", "POST", "application/json", "X-API-Key: k", "{", 400, "-32700"},
		{"no method", "POST", "application/json", "X-API-Key: k", `{"jsonrpc":"2.0","id":"1"}`, 400, "-32600"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, "/ahp", strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if k, v, ok := strings.Cut(tc.auth, ": "); ok {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			srv.HTTPHandler().ServeHTTP(rec, req)
			if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.bodyHas) {
				t.Fatalf("got %d %s, want %d with %q", rec.Code, rec.Body.String(), tc.status, tc.bodyHas)
			}
		})
	}
}

// TestPreActionPayload: both tool names are written; either is read; two
// different names are refused.
func TestPreActionPayload(t *testing.T) {
	p, err := NewPreAction("bash", map[string]string{"command": "ls"}, map[string]any{"action_id": "a-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(t, p, []byte(`{"tool_name":"bash","tool":"bash","arguments":{"command":"ls"},"action_id":"a-1"}`)) {
		t.Fatalf("payload %s", p)
	}
	for _, in := range []string{`{"tool_name":"bash","arguments":{"command":"ls"}}`, `{"tool":"bash","arguments":{"command":"ls"}}`,
		`{"tool_name":"bash","tool":"bash","arguments":{"command":"ls"}}`, `{"tool_name":null,"tool":"bash","arguments":{"command":"ls"}}`} {
		pa, err := ReadPreAction(json.RawMessage(in))
		if err != nil || pa.Tool != "bash" || pa.Command() != "ls" {
			t.Errorf("%s: %+v, %v", in, pa, err)
		}
	}
	for _, in := range []string{`{"tool_name":"bash","tool":"python"}`, `{"arguments":{}}`, `[]`, `null`, `{"tool":7}`} {
		if pa, err := ReadPreAction(json.RawMessage(in)); err == nil {
			t.Errorf("%s read as %+v", in, pa)
		}
	}
	if _, err := NewPreAction("bash", nil, map[string]any{"tool": "other"}); err == nil {
		t.Error("extra key replaced the tool")
	}
}

// TestClientReconnectsWebSocket: when the WebSocket harness drops the
// connection, the request in flight fails and the next one connects
// again (with a new handshake) to the harness now answering there.
func TestClientReconnectsWebSocket(t *testing.T) {
	var mu sync.Mutex
	h1 := &slowHandler{delay: 100 * time.Millisecond, started: make(chan struct{}, 1)}
	current := NewServer(h1, ServerOptions{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		srv := current
		mu.Unlock()
		srv.WebSocketHandler().ServeHTTP(w, r)
	}))
	defer hs.Close()
	c, err := Dial(context.Background(), ClientOptions{Transport: TransportWebSocket, URL: "ws" + strings.TrimPrefix(hs.URL, "http"),
		MinBackoff: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	failed := make(chan error, 1)
	go func() {
		_, err := c.Send(context.Background(), preAction(t, "bash", "ls"))
		failed <- err
	}()
	<-h1.started
	old := current
	mu.Lock()
	current = NewServer(&testHandler{}, ServerOptions{})
	mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	old.Shutdown(ctx) // does not wait for the slow decision: the connection is closed under it
	cancel()
	if err := <-failed; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("request on the dropped connection: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		d, err := c.Send(context.Background(), preAction(t, "bash", "rm -rf /"))
		if err == nil {
			if d.Kind != Block {
				t.Fatalf("after reconnect: %+v", d)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("never reconnected: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
