package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
)

// Version is what Harness tells MCP peers its version is.
const Version = "0.1.0"

// Client is the MCP client runtime: it runs mcp_call and the
// mcp.<server>.<tool> actions on the servers of harness.mcp.servers.
//
// It is safe for concurrent use. Calls to one server share one connection
// (one process for stdio), started at NewClient and restarted by the next
// call after it dies. Each call is bounded by the server's timeout-ms.
type Client struct {
	al    *allowlist
	conns map[string]*conn
	log   *slog.Logger

	life   context.Context
	cancel context.CancelFunc
	once   sync.Once
}

var _ runtime.Runtime = (*Client)(nil)

// NewClient connects to every enabled server of cfg at once (in parallel,
// each bounded by its timeout-ms and by ctx), reads each one's tools/list
// and imports the input schema of each allowed tool, against which
// arguments are then validated before any call. For a server with
// register-tools set, each allowed tool whose schema imported is also
// registered in reg as a trusted action named mcp.<server>.<tool> whose
// input is the tool's arguments (risk read for a readOnlyHint tool,
// network for one that says destructiveHint: false, write otherwise, as
// the MCP specification's defaults make an unannotated tool destructive).
//
// A server that cannot be reached at start is not an error: it is logged,
// and the first call to it tries again (its tools are then not registered
// as actions). A stdio server runs in its own process group with only
// PATH, HOME, USER, LOGNAME, LANG, LC_ALL, LC_CTYPE, TZ and TMPDIR of
// Harness's environment; its stderr is kept (the last 4 KiB) for error
// messages. log may be nil. Close the client to stop its servers.
func NewClient(ctx context.Context, cfg config.MCPConfig, reg *schema.Registry, log *slog.Logger) (*Client, error) {
	c, errs := StartClient(ctx, cfg, reg, log, nil)
	if err := <-errs; err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// StartClient is NewClient without the wait: it returns at once and
// connects in the background, so that a program (the MCP bridge) can serve
// before slow servers are up. A call to a server still starting waits for
// it. Each time a server's tools have been registered as actions,
// registered is called with their names (it may be nil). The channel
// receives the registration errors (nil for none) once every server has
// been tried, and is then closed.
func StartClient(ctx context.Context, cfg config.MCPConfig, reg *schema.Registry, log *slog.Logger, registered func(names []string)) (*Client, <-chan error) {
	if log == nil {
		log = slog.Default()
	}
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Client{al: newAllowlist(cfg), conns: map[string]*conn{}, log: log, life: life, cancel: cancel}
	names := make([]string, 0, len(cfg.Servers))
	for name, s := range cfg.Servers {
		if s.Enabled != nil && !*s.Enabled {
			continue
		}
		if len(s.Tools) == 0 {
			log.Warn("mcp: server lists no tools, so none of its tools can be called", "mcp_server", name)
		}
		c.conns[name] = newConn(life, name, s, log)
		names = append(names, name)
	}
	sort.Strings(names)

	// Each server's first start holds its lock, so a call to it waits for
	// the start instead of starting a second process.
	var started sync.WaitGroup
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, name := range names {
		cn := c.conns[name]
		started.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := cn.readyNotify(ctx, started.Done); err != nil {
				log.Warn("mcp: server not available at start; the next call retries", "mcp_server", cn.name, "err", err)
				return
			}
			if reg == nil || !cfg.Servers[cn.name].RegisterTools {
				return
			}
			added, rerrs := c.registerTools(reg, cn)
			mu.Lock()
			errs = append(errs, rerrs...)
			mu.Unlock()
			if len(added) > 0 && registered != nil {
				registered(added)
			}
		}()
	}
	started.Wait()
	done := make(chan error, 1)
	go func() {
		wg.Wait()
		done <- errors.Join(errs...)
		close(done)
	}()
	return c, done
}

// registerTools adds mcp.<server>.<tool> actions for a connected server
// and returns the names it added.
func (c *Client) registerTools(reg *schema.Registry, cn *conn) ([]string, []error) {
	tools := cn.toolSnapshot()
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	var errs []error
	var added []string
	for _, n := range names {
		rt := tools[n]
		if rt.schema == nil {
			continue
		}
		desc := rt.def.Description
		if desc == "" {
			desc = rt.def.Title
		}
		name := ToolActionPrefix + cn.name + "." + n
		err := reg.Register(schema.ActionSchema{
			Name:        name,
			Description: fmt.Sprintf("[MCP server %s] %s", cn.name, desc),
			Runtime:     schema.RuntimeMCP, Trusted: true, Risk: rt.risk, Input: rt.schema.Input,
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("register tool %s of MCP server %s: %w", n, cn.name, err))
			continue
		}
		added = append(added, name)
	}
	return added, errs
}

// Run calls the tool that a names: mcp_call's server and tool with its
// arguments, or the tool of an mcp.<server>.<tool> action with its whole
// input. It re-applies the allowlist (the guard has already) and validates
// the arguments. The payload is {"server", "tool", "content": the MCP
// content blocks as JSON, "text": their text joined by newlines,
// "structured_content": the tool's structured result when it gave one}.
// Errors carry code mcp_error (a tool error keeps that payload), timeout,
// invalid_input, action_disabled or command_not_allowed.
func (c *Client) Run(ctx context.Context, a action.Action) (map[string]any, error) {
	t, ok, err := c.al.resolve(a)
	if !ok {
		return nil, action.Errorf(action.CodeUnknownAction, "%s is not an MCP action", a.Name)
	}
	if err != nil {
		return nil, err
	}
	if err := c.al.permit(t); err != nil {
		return nil, err
	}
	cn := c.conns[t.server]
	if cn == nil { // permitted servers are enabled, and every enabled one has a conn
		return nil, action.Errorf(action.CodeInternal, "MCP server %s has no connection", t.server)
	}
	return cn.call(ctx, t.tool, t.args)
}

// Check returns the guard step for MCP actions: AllowlistCheck's rules,
// then the arguments validated against the tool's imported input schema
// when the server has published it (otherwise Run validates them before
// calling). Give it to the guard when the guard is built
// (policy.Steps.Validating); the pipeline assembly does.
func (c *Client) Check() policy.Check {
	return policy.Check{Name: CheckName, Fn: func(_ context.Context, req *policy.Request) policy.Decision {
		t, d := c.al.decide(req)
		if !d.Allowed() || t.server == "" {
			return d
		}
		cn := c.conns[t.server]
		if cn == nil {
			return d
		}
		if rt := cn.toolSnapshot()[t.tool]; rt != nil && rt.schema != nil {
			if err := validateArgs(rt.schema, t.args); err != nil {
				return policy.Decision{Code: err.Code, Message: err.Message}
			}
		}
		return d
	}}
}

// Mount mounts the client on h as runtime "mcp" (observations with source
// mcp). h's guard must have been built with Check among its steps. Call it
// while building h, before the first Execute.
func (c *Client) Mount(h *runtime.Harness) {
	h.Mount(schema.RuntimeMCP, action.SourceMCP, c)
}

// ServerTools returns, per connected server, the names of its allowed tools
// as its last tools/list published them.
func (c *Client) ServerTools() map[string][]string {
	out := map[string][]string{}
	for name, cn := range c.conns {
		var tools []string
		for t := range cn.toolSnapshot() {
			tools = append(tools, t)
		}
		sort.Strings(tools)
		out[name] = tools
	}
	return out
}

// Close stops every server the client started. It is safe to call more
// than once; calls after Close fail with mcp_error.
func (c *Client) Close() error {
	c.once.Do(func() {
		c.cancel()
		var wg sync.WaitGroup
		for _, cn := range c.conns {
			wg.Add(1)
			go func() { defer wg.Done(); cn.close() }()
		}
		wg.Wait()
	})
	return nil
}
