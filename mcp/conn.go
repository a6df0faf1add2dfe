package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/schema"
)

// restartBackoff is how long a server that failed to start is left alone
// before the next call tries again, so that a server crashing at start is
// not restarted in a hot loop.
const restartBackoff = 500 * time.Millisecond

// passEnv lists the environment variables a stdio server inherits. The rest
// of Harness's environment (cloud keys, tokens) stays out of it.
var passEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT"}

// conn is one configured server: its client, its process for stdio, and the
// allowed tools it published. A dead stdio process is restarted on the next
// call.
type conn struct {
	name    string
	cfg     config.MCPServerConfig
	timeout time.Duration
	log     *slog.Logger
	life    context.Context // cancelled by Client.Close

	mu        sync.Mutex // serialises (re)starts
	cli       *mcpclient.Client
	proc      *process
	started   bool
	lastErr   error
	lastStart time.Time
	protocol  string

	// tools is the snapshot of allowed tools from the last tools/list; the
	// guard reads it without taking mu.
	tools atomic.Pointer[map[string]*remoteTool]
}

// remoteTool is an allowed tool as its server published it.
type remoteTool struct {
	def    mcpgo.Tool
	schema *schema.ActionSchema // nil when the input schema did not compile
	err    error                // why schema is nil
	risk   schema.Risk
}

func newConn(life context.Context, name string, cfg config.MCPServerConfig, log *slog.Logger) *conn {
	ms := cfg.TimeoutMS
	if ms <= 0 {
		ms = config.DefaultMCPTimeoutMS
	}
	return &conn{name: name, cfg: cfg, timeout: time.Duration(ms) * time.Millisecond, log: log.With("mcp_server", name), life: life}
}

// toolSnapshot returns the allowed tools of the last successful tools/list
// (nil before the first).
func (c *conn) toolSnapshot() map[string]*remoteTool {
	if p := c.tools.Load(); p != nil {
		return *p
	}
	return nil
}

// ready returns a live client, starting the server or restarting a dead one.
func (c *conn) ready(ctx context.Context) (*mcpclient.Client, map[string]*remoteTool, error) {
	return c.readyNotify(ctx, nil)
}

// readyNotify is ready that calls locked, when not nil, once it holds the
// connection's lock.
func (c *conn) readyNotify(ctx context.Context, locked func()) (*mcpclient.Client, map[string]*remoteTool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if locked != nil {
		locked()
	}
	if c.life.Err() != nil {
		return nil, nil, errors.New("the MCP client is closed")
	}
	if c.cli != nil && !c.dead() {
		return c.cli, c.toolSnapshot(), nil
	}
	if c.cli != nil {
		c.log.Warn("mcp: server is gone; restarting it", "stderr", c.proc.tail())
		c.closeLocked()
	} else if c.lastErr != nil && time.Since(c.lastStart) < restartBackoff {
		return nil, nil, c.lastErr
	}
	c.lastStart = time.Now()
	err := c.startLocked(ctx)
	c.lastErr = err
	if err != nil {
		c.closeLocked()
		return nil, nil, err
	}
	return c.cli, c.toolSnapshot(), nil
}

// dead reports whether the stdio process has exited (always false for the
// HTTP transports, whose failures are per request).
func (c *conn) dead() bool {
	if c.proc == nil {
		return false
	}
	select {
	case <-c.proc.exited:
		return true
	default:
		return false
	}
}

// startLocked connects, negotiates the protocol and reads tools/list.
func (c *conn) startLocked(ctx context.Context) error {
	tr, proc, err := c.transport()
	if err != nil {
		return err
	}
	cli := mcpclient.NewClient(tr, mcpclient.WithDiscoverTimeout(c.timeout))
	if err := cli.Start(c.life); err != nil {
		_ = cli.Close()
		return fmt.Errorf("start MCP server %s: %w", c.name, err)
	}
	c.cli, c.proc, c.started = cli, proc, true
	cli.OnNotification(func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationToolsListChanged) {
			go c.refreshTools(cli)
		}
	})
	if proc != nil {
		proc.watch()
	}
	ictx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	stop := context.AfterFunc(c.life, cancel) // Close does not wait for a slow start
	defer stop()
	init, err := cli.Initialize(ictx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "harness", Version: Version},
	}})
	if err != nil {
		return fmt.Errorf("initialize MCP server %s: %w%s", c.name, err, c.proc.tailSuffix())
	}
	c.protocol = init.ProtocolVersion
	list, err := cli.ListTools(ictx, mcpgo.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("tools/list of MCP server %s: %w", c.name, err)
	}
	tools := c.importTools(list.Tools)
	c.tools.Store(&tools)
	c.log.Debug("mcp: server ready", "protocol", c.protocol, "tools", len(list.Tools), "allowed", len(tools))
	return nil
}

// refreshTools re-reads tools/list after the server said it changed, so
// that an allowed tool it adds becomes callable and a changed input schema
// is the one arguments are checked against. Actions registered at start
// (register-tools) are not added or removed.
func (c *conn) refreshTools(cli *mcpclient.Client) {
	ctx, cancel := context.WithTimeout(c.life, c.timeout)
	defer cancel()
	list, err := cli.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		c.log.Warn("mcp: tools/list after list_changed failed", "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cli != cli { // restarted meanwhile: the new start read its own list
		return
	}
	tools := c.importTools(list.Tools)
	c.tools.Store(&tools)
}

// importTools keeps the allowed tools and compiles their input schemas.
func (c *conn) importTools(list []mcpgo.Tool) map[string]*remoteTool {
	allowed := make(map[string]bool, len(c.cfg.Tools))
	for _, t := range c.cfg.Tools {
		allowed[t] = true
	}
	reg := schema.NewRegistry()
	out := make(map[string]*remoteTool, len(allowed))
	for i, def := range list {
		if !allowed[def.Name] {
			continue
		}
		rt := &remoteTool{def: def, risk: riskOf(def.Annotations)}
		raw, err := inputSchemaOf(def)
		if err == nil {
			err = reg.Register(schema.ActionSchema{
				Name: fmt.Sprintf("tool%d", i), Runtime: schema.RuntimeMCP, Trusted: true, Risk: rt.risk, Input: raw,
			})
		}
		if err != nil {
			rt.err = err
			c.log.Warn("mcp: tool's input schema cannot be imported; calls to it are refused", "tool", def.Name, "err", err)
		} else {
			rt.schema, _ = reg.Lookup(fmt.Sprintf("tool%d", i))
		}
		out[def.Name] = rt
	}
	for name := range allowed {
		if _, ok := out[name]; !ok {
			c.log.Warn("mcp: an allowed tool is not offered by the server", "tool", name)
		}
	}
	return out
}

// inputSchemaOf returns the tool's input schema as JSON.
func inputSchemaOf(t mcpgo.Tool) (json.RawMessage, error) {
	if len(t.RawInputSchema) > 0 {
		return t.RawInputSchema, nil
	}
	if t.InputSchema.Type == "" && t.InputSchema.Properties == nil {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return raw, nil
}

// riskOf reads a tool's annotations as the MCP specification defines
// their defaults: a tool is read risk only when it says readOnlyHint; a
// tool that is not read-only is destructive unless it says
// destructiveHint: false, so write risk; a non-destructive tool that still
// changes something is network risk (it reaches another program).
func riskOf(a mcpgo.ToolAnnotation) schema.Risk {
	switch {
	case a.ReadOnlyHint != nil && *a.ReadOnlyHint:
		return schema.RiskRead
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		return schema.RiskNetwork
	}
	return schema.RiskWrite
}

func (c *conn) transport() (transport.Interface, *process, error) {
	switch c.cfg.Transport {
	case "", "stdio":
		if len(c.cfg.Command) == 0 {
			return nil, nil, fmt.Errorf("MCP server %s: no command", c.name)
		}
		p := &process{stderr: &tailBuffer{max: 4096}}
		cmdFunc := func(_ context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.Command(command, args...)
			cmd.Env = childEnv(c.cfg.Env)
			cmd.Stderr = p.stderr
			setProcessGroup(cmd)
			p.cmd = cmd
			return cmd, nil
		}
		tr := transport.NewStdioWithOptions(c.cfg.Command[0], nil, c.cfg.Command[1:],
			transport.WithCommandFunc(cmdFunc), transport.WithCommandLogger(c.log))
		return tr, p, nil
	case "http":
		tr, err := transport.NewStreamableHTTP(c.cfg.URL, transport.WithHTTPTimeout(c.timeout), transport.WithLogger(c.log))
		if err != nil {
			return nil, nil, fmt.Errorf("MCP server %s: %w", c.name, err)
		}
		return tr, nil, nil
	case "sse":
		tr, err := transport.NewSSE(c.cfg.URL, transport.WithSSELogger(c.log))
		if err != nil {
			return nil, nil, fmt.Errorf("MCP server %s: %w", c.name, err)
		}
		return tr, nil, nil
	}
	return nil, nil, fmt.Errorf("MCP server %s: unknown transport %q", c.name, c.cfg.Transport)
}

// childEnv is a stdio server's environment: the passEnv variables of
// Harness's own, then the server's configured env (which wins), with
// ${NAME} in its values expanded from Harness's environment.
func childEnv(extra map[string]string) []string {
	env := make([]string, 0, len(passEnv)+len(extra))
	for _, k := range passEnv {
		if _, set := extra[k]; set {
			continue
		}
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+os.Expand(extra[k], os.Getenv))
	}
	return env
}

// call runs one tool call with the server's timeout.
func (c *conn) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	cli, tools, err := c.ready(ctx)
	if err != nil {
		return nil, &action.Error{Code: action.CodeMCPError, Message: fmt.Sprintf("MCP server %s is not available: %v", c.name, err), Err: err}
	}
	rt := tools[tool]
	if rt == nil {
		return nil, action.Errorf(action.CodeMCPError, "MCP server %s does not offer tool %q (not in its tools/list)", c.name, tool)
	}
	if rt.schema == nil {
		return nil, action.Errorf(action.CodeMCPError, "the input schema of tool %q of MCP server %s could not be imported, so it is not called: %v", tool, c.name, rt.err)
	}
	if err := validateArgs(rt.schema, args); err != nil {
		return nil, err
	}
	if args == nil {
		args = map[string]any{}
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	res, err := cli.CallTool(cctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, &action.Error{Code: action.CodeTimeout, Message: fmt.Sprintf("tool %s of MCP server %s did not finish: %v", tool, c.name, ctx.Err()), Err: err}
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return nil, &action.Error{Code: action.CodeTimeout, Message: fmt.Sprintf("tool %s of MCP server %s did not answer within %s (harness.mcp.servers.%s.timeout-ms)", tool, c.name, c.timeout, c.name), Err: err}
		}
		msg := fmt.Sprintf("tool %s of MCP server %s failed: %v", tool, c.name, err)
		if c.broken(err) {
			msg = fmt.Sprintf("MCP server %s went away during the call to %s (it is restarted on the next call): %v%s", c.name, tool, err, c.procTail())
		}
		return nil, &action.Error{Code: action.CodeMCPError, Message: msg, Err: err}
	}
	return resultPayload(c.name, tool, res)
}

// broken reports whether err means the connection is gone, and forgets a
// dead HTTP session so that the next call opens a new one.
func (c *conn) broken(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc != nil {
		if !errors.Is(err, transport.ErrTransportClosed) {
			return c.dead()
		}
		// The transport sees the end of the output a moment before the
		// process is reaped.
		select {
		case <-c.proc.exited:
		case <-time.After(200 * time.Millisecond):
		}
		return true
	}
	if errors.Is(err, transport.ErrTransportClosed) || errors.Is(err, transport.ErrSessionTerminated) {
		c.closeLocked()
		return true
	}
	return false
}

func (c *conn) procTail() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.proc.tailSuffix()
}

// validateArgs checks arguments against the tool's imported schema.
func validateArgs(s *schema.ActionSchema, args map[string]any) *action.Error {
	err := s.Validate(args)
	if err == nil {
		return nil
	}
	msg := strings.ReplaceAll(action.MessageOf(err), "input", "arguments")
	return &action.Error{Code: action.CodeInvalidInput, Message: msg, Err: err}
}

func (c *conn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked()
}

func (c *conn) closeLocked() {
	if c.cli != nil {
		_ = c.cli.Close()
	}
	c.proc.kill()
	c.cli, c.proc = nil, nil
}

// pid returns the stdio server's process id, or 0 (for tests).
func (c *conn) pid() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.proc == nil || c.proc.cmd == nil || c.proc.cmd.Process == nil {
		return 0
	}
	return c.proc.cmd.Process.Pid
}

// process is a stdio server's child process.
type process struct {
	cmd    *exec.Cmd
	stderr *tailBuffer
	exited chan struct{}
}

// watch closes exited when the process ends. The transport's own Wait on
// Close then finds it reaped, which it tolerates.
func (p *process) watch() {
	p.exited = make(chan struct{})
	if p.cmd == nil || p.cmd.Process == nil {
		close(p.exited)
		return
	}
	proc := p.cmd.Process
	go func() {
		_, _ = proc.Wait()
		close(p.exited)
	}()
}

func (p *process) kill() {
	if p == nil || p.cmd == nil || p.cmd.Process == nil {
		return
	}
	killProcessGroup(p.cmd.Process.Pid)
}

func (p *process) tail() string {
	if p == nil {
		return ""
	}
	return p.stderr.String()
}

func (p *process) tailSuffix() string {
	if t := strings.TrimSpace(p.tail()); t != "" {
		if i := strings.LastIndexByte(t, '\n'); i >= 0 {
			t = t[i+1:]
		}
		return " (stderr: " + short(t) + ")"
	}
	return ""
}

// tailBuffer keeps the last max bytes written to it: the end of a server's
// stderr, shown when it fails.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

var _ io.Writer = (*tailBuffer)(nil)

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
