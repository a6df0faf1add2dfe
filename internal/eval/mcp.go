package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-runtime/harness/action"
)

// bridgeConfirmed are the actions the configuration's bridge confirms
// through elicitation (harness.mcp.bridge.trusted-actions in configYAML).
var bridgeConfirmed = []string{"workspace_apply_patch", "workspace_run_shell", "mcp_call"}

// mcpDriver is the MCP bridge binary: `harness mcp --config F` over stdio,
// driven by mcp-go's client, which declares elicitation and accepts every
// confirmation (changing the file first in a stale scenario).
type mcpDriver struct {
	opts    Options
	bridges map[Variant]*bridge
}

type bridge struct {
	cli    *mcpclient.Client
	stderr *tailBuffer

	mu      sync.Mutex
	elicits int
	before  func() error // run when the person is asked, before answering
}

func (b *bridge) Elicit(_ context.Context, _ mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	b.mu.Lock()
	b.elicits++
	hook := b.before
	b.mu.Unlock()
	if hook != nil {
		if err := hook(); err != nil {
			return nil, err
		}
	}
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}, nil
}

func (d *mcpDriver) bridge(ctx context.Context, v Variant, s site) (*bridge, error) {
	if b := d.bridges[v]; b != nil {
		return b, nil
	}
	b := &bridge{stderr: &tailBuffer{max: 4096}}
	env := d.opts.Env
	t := transport.NewStdioWithOptions(d.opts.Harness, nil, []string{"mcp", "--config", s.config},
		transport.WithCommandFunc(func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Env, cmd.Dir, cmd.Stderr = env, s.dir, b.stderr
			return cmd, nil
		}))
	// The bridge lives as long as the driver, not as one call's context.
	life := context.WithoutCancel(ctx)
	b.cli = mcpclient.NewClient(t, mcpclient.WithElicitationHandler(b))
	if err := b.cli.Start(life); err != nil {
		return nil, fmt.Errorf("start harness mcp: %w", err)
	}
	if d.bridges == nil {
		d.bridges = map[Variant]*bridge{}
	}
	d.bridges[v] = b
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := b.cli.Initialize(ictx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "harness-eval", Version: "1"},
	}})
	if err != nil {
		return nil, fmt.Errorf("initialize harness mcp: %w (stderr: %s)", err, oneLine(b.stderr.String()))
	}
	if v == Main {
		// The bridge registers an MCP server's tools once it has
		// connected, in the background.
		if err := waitForTool(ictx, b.cli, "mcp.evalsrv.echo"); err != nil {
			return nil, fmt.Errorf("harness mcp: %w (stderr: %s)", err, oneLine(b.stderr.String()))
		}
	}
	return b, nil
}

func waitForTool(ctx context.Context, cli *mcpclient.Client, name string) error {
	for {
		list, err := cli.ListTools(ctx, mcpgo.ListToolsRequest{})
		if err != nil {
			return err
		}
		for _, t := range list.Tools {
			if t.Name == name {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tool %s never served: %w", name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (d *mcpDriver) run(ctx context.Context, sc Scenario, s site) (answer, error) {
	b, err := d.bridge(ctx, sc.Variant, s)
	if err != nil {
		return answer{}, err
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(sc.Input), &args); err != nil {
		return answer{}, err
	}
	b.mu.Lock()
	b.elicits, b.before = 0, nil
	if sc.Stale {
		b.before = s.makeStale
	}
	b.mu.Unlock()
	res, err := b.cli.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: sc.Action, Arguments: args}})
	if err != nil {
		return answer{}, fmt.Errorf("tools/call: %w", err)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return answer{}, err
	}
	o, err := decode(raw)
	if err != nil {
		return answer{}, fmt.Errorf("structured content is not an observation: %w", err)
	}
	b.mu.Lock()
	asked := b.elicits > 0
	b.mu.Unlock()
	f := direct
	switch {
	case !slices.Contains(bridgeConfirmed, sc.Action):
	case asked:
		f = confirmedFlow
	default:
		f = previewRefused
	}
	a := observed(o, f)
	if res.IsError != (o.Status != action.StatusOK) {
		a.Problems = append(a.Problems, fmt.Sprintf("isError %v for status %s", res.IsError, o.Status))
	}
	return a, nil
}

func (d *mcpDriver) close() error {
	for _, b := range d.bridges {
		b.cli.Close()
	}
	return nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = t.b[len(t.b)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
