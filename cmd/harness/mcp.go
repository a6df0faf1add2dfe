package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/internal/tune"
	"github.com/harness-runtime/harness/mcp/bridge"
	"github.com/harness-runtime/harness/trusted"
)

func init() {
	commands["mcp"] = command{summary: "serve every registered action as an MCP tool (stdio, or streamable HTTP with --http)", run: mcpCmd}
}

var (
	// served is the running MCP bridge, for syncBridge.
	served atomic.Pointer[bridge.Server]
)

// syncBridge serves the actions registered since the bridge started.
func syncBridge(log *slog.Logger) {
	if srv := served.Load(); srv != nil {
		if err := srv.Sync(); err != nil {
			log.Warn("harness mcp: cannot serve new tools", "err", err)
		}
	}
}

func mcpCmd(ctx context.Context, args []string, s stdio) int {
	tune.GC()
	fs := newFlags("mcp", "harness mcp [--config F] [--root DIR] [--http HOST:PORT]", s.err)
	config := fs.String("config", "", "configuration file (YAML)")
	root := fs.String("root", "", "workspace root (overrides harness.workspace.root)")
	addr := fs.String("http", "", "serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) != 0 {
		if err == nil {
			fmt.Fprintf(s.err, "harness mcp: unexpected argument %q\n", pos[0])
		}
		fs.Usage()
		return exitUsage
	}
	cfg, err := loadConfig(*config, *root)
	if err != nil {
		fmt.Fprintf(s.err, "harness mcp: %v\n", err)
		return exitUsage
	}
	e, err := setup(ctx, cfg, s, setupOptions{trusted: true, bridge: true})
	if err != nil {
		fmt.Fprintf(s.err, "harness mcp: %v\n", err)
		return exitUsage
	}
	defer e.Close()
	// Actions the person confirms run through the same preview -> token ->
	// execute flow as `harness serve`, with the same token records in the
	// same audit log: exactly what was previewed, on the files as they were
	// previewed.
	srv, err := bridge.NewServer(e.H, cfg, bridge.WithLogger(e.Log), bridge.WithTrustFlow(trustFlow{e.P.Trusted}),
		bridge.WithApprovals(trustFlow{e.P.Trusted}, cfg.Harness.MCP.Bridge.ApprovalWait(), cfg.Harness.Approvals.ConsoleURL))
	if err != nil {
		fmt.Fprintf(s.err, "harness mcp: %v\n", err)
		return exitUsage
	}
	served.Store(srv)
	defer served.Store(nil)
	syncBridge(e.Log) // what registered between NewServer and Store
	if *addr == "" {
		if err := srv.ServeStdio(ctx, s.in, s.out); err != nil {
			fmt.Fprintf(s.err, "harness mcp: %v\n", err)
			return exitActionError
		}
		return exitOK
	}
	if err := loopbackOnly(*addr); err != nil {
		fmt.Fprintf(s.err, "harness mcp: --http: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(s.err, "harness mcp: --http: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(s.err, "harness mcp: serving MCP (streamable HTTP) at http://%s/mcp\n", ln.Addr())
	if err := srv.ServeHTTP(ctx, ln); err != nil {
		fmt.Fprintf(s.err, "harness mcp: %v\n", err)
		return exitActionError
	}
	return exitOK
}

// trustFlow runs the bridge's confirmed actions through the trusted
// service, as principal "mcp" (its tokens live in this process only).
type trustFlow struct{ svc *trusted.Service }

func (f trustFlow) Preview(ctx context.Context, a action.Action) (map[string]any, string, error) {
	r, err := f.svc.Preview(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, a)
	return r.Preview, r.Token, err
}

func (f trustFlow) Execute(ctx context.Context, token string) (action.Observation, error) {
	return f.svc.Execute(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, token)
}

// RecordConfirmation records the person's confirmation through the MCP
// client as an approval (method mcp).
func (f trustFlow) RecordConfirmation(ctx context.Context, a action.Action, token, client string) (string, error) {
	return f.svc.RecordConfirmation(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, a, token, client)
}

// Await waits for the approval id the bridge's principal requested and
// runs the approved plan.
func (f trustFlow) Await(ctx context.Context, id string) (action.Observation, error) {
	return f.svc.AwaitApproval(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, id)
}

// loopbackOnly refuses a listen address that is not on loopback: the
// bridge has no authentication of its own, so it is reachable only from
// this machine (put an authenticating proxy in front for anything else).
func loopbackOnly(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address; the MCP bridge has no authentication, so it listens only on 127.0.0.1, ::1 or localhost", addr)
}
