package ahp_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/harness-runtime/harness/ahp"
)

// A harness that blocks recursive deletes, served on a Unix socket, and
// an agent asking it before running two commands.
func Example() {
	guard := ahp.HandlerFunc(func(_ context.Context, ev *ahp.WireEvent) (ahp.Decision, error) {
		call, err := ahp.ReadPreAction(ev.Payload)
		if err != nil {
			return ahp.Decision{}, err
		}
		if strings.Contains(call.Command(), "rm -rf") {
			return ahp.Decision{Kind: ahp.Block, Reason: "recursive delete"}, nil
		}
		return ahp.Decision{Kind: ahp.Allow}, nil
	})
	dir, _ := os.MkdirTemp("", "ahp")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "harness.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := ahp.NewServer(guard, ahp.ServerOptions{})
	go srv.Serve(context.Background(), ln)
	defer srv.Shutdown(context.Background())

	ctx := context.Background()
	c, err := ahp.Dial(ctx, ahp.ClientOptions{Transport: ahp.TransportUnix, Socket: sock})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	for _, cmd := range []string{"ls -la", "rm -rf /"} {
		payload, _ := ahp.NewPreAction("bash", map[string]string{"command": cmd}, nil)
		d, err := c.Send(ctx, ahp.WireEvent{EventType: ahp.PreAction, Payload: payload})
		if err != nil {
			fmt.Println("refused:", err) // no decision: fail closed
			continue
		}
		fmt.Printf("%s -> %s %q\n", cmd, d.Kind, d.Reason)
	}
	// Output:
	// ls -la -> allow ""
	// rm -rf / -> block "recursive delete"
}

// A harness on stdio answers one message per line: a handshake, a
// blocking event, and nothing for a notification. With MaxConcurrent 1
// it answers in order; by default requests are decided concurrently and
// answered as they are decided (the ids tell the answers apart).
func ExampleServer_ServeStream() {
	srv := ahp.NewServer(ahp.HandlerFunc(func(context.Context, *ahp.WireEvent) (ahp.Decision, error) {
		return ahp.Decision{Kind: ahp.Escalate, Reason: "ask a person"}, nil
	}), ahp.ServerOptions{
		Info:          ahp.HarnessInfo{Name: "demo", Version: "1", Capabilities: []string{"pre_action"}},
		MaxConcurrent: 1, // answers in the order of the requests
	})
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ahp/handshake","params":{"protocol_version":"2.0","agent_info":{"framework":"demo","version":"1","capabilities":[]},"session_id":"s","agent_id":"a"}}
{"jsonrpc":"2.0","id":"e1","method":"ahp/event","params":{"event_type":"pre_action","session_id":"s","agent_id":"a","timestamp":"2026-01-01T00:00:00Z","depth":0,"payload":{"tool":"bash","arguments":{"command":"make deploy"}}}}
{"jsonrpc":"2.0","method":"ahp/event","params":{"event_type":"post_action","session_id":"s","agent_id":"a","timestamp":"2026-01-01T00:00:01Z","depth":0,"payload":{}}}
`)
	srv.ServeStream(context.Background(), in, os.Stdout)
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{"protocol_version":"2.4","harness_info":{"name":"demo","version":"1","capabilities":["pre_action"]},"config":{"timeout_ms":10000,"batch_size":100,"max_depth":10}}}
	// {"jsonrpc":"2.0","id":"e1","result":{"decision":"escalate","reason":"ask a person"}}
}
