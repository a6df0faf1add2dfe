package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/ahp/guardharness"
	"github.com/harness-runtime/harness/trusted"
)

func init() {
	commands["ahp"] = command{summary: "ahp serve: Harness's guard as an AHP v2.4 harness for other agents", run: ahpCmd}
}

const ahpUsage = "harness ahp serve [--stdio | --http HOST:PORT | --ws HOST:PORT | --unix PATH] [--config F] [--root DIR]"

func ahpCmd(ctx context.Context, args []string, s stdio) int {
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(s.err, "usage: "+ahpUsage)
			return exitOK
		}
		fmt.Fprintln(s.err, "usage: "+ahpUsage)
		return exitUsage
	}
	fs := newFlags("ahp serve", ahpUsage, s.err)
	configFile := fs.String("config", "", "configuration file (YAML)")
	root := fs.String("root", "", "workspace root (overrides harness.workspace.root)")
	useStdio := fs.Bool("stdio", false, "one JSON-RPC message per line on stdin/stdout (the default)")
	httpAddr := fs.String("http", "", "serve HTTP: POST http://HOST:PORT/ahp")
	wsAddr := fs.String("ws", "", "serve WebSocket: ws://HOST:PORT/ahp")
	unixPath := fs.String("unix", "", "serve a Unix socket at PATH (one message per line)")
	pos, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) != 0 {
		if err == nil {
			fmt.Fprintf(s.err, "harness ahp serve: unexpected argument %q\n", pos[0])
		}
		fs.Usage()
		return exitUsage
	}
	chosen := 0
	for _, on := range []bool{*useStdio, *httpAddr != "", *wsAddr != "", *unixPath != ""} {
		if on {
			chosen++
		}
	}
	if chosen > 1 {
		fmt.Fprintln(s.err, "harness ahp serve: choose one of --stdio, --http, --ws and --unix")
		return exitUsage
	}
	cfg, err := loadConfig(*configFile, *root)
	if err != nil {
		fmt.Fprintf(s.err, "harness ahp serve: %v\n", err)
		return exitUsage
	}
	var keys *trusted.Keys
	if *httpAddr != "" || *wsAddr != "" {
		addr := *httpAddr + *wsAddr
		if keys, err = trusted.NewKeys(cfg.Harness.Auth.Keys); err != nil {
			fmt.Fprintf(s.err, "harness ahp serve: %v\n", err)
			return exitUsage
		}
		if keys.Len() == 0 {
			if err := loopbackOnly(addr); err != nil {
				fmt.Fprintf(s.err, "harness ahp serve: with no harness.auth.keys, HTTP and WebSocket listen on loopback only: %v\n", err)
				return exitUsage
			}
		}
	}
	e, err := setup(ctx, cfg, s)
	if err != nil {
		fmt.Fprintf(s.err, "harness ahp serve: %v\n", err)
		return exitUsage
	}
	defer e.Close()
	h, err := guardharness.New(guardharness.Options{
		Harness: e.H, Root: cfg.Harness.Workspace.Root, AllowUnknownTools: cfg.Harness.AHP.Serve.UnknownTools == "allow",
		Audit: e.Audit, Sanitizer: e.Sanitizer,
	})
	if err != nil {
		fmt.Fprintf(s.err, "harness ahp serve: %v\n", err)
		return exitUsage
	}
	depth, batch := uint32(cfg.Harness.AHP.Serve.MaxDepth), uint64(cfg.Harness.AHP.Serve.BatchSize)
	limits := ahp.DefaultHarnessConfig()
	limits.MaxDepth, limits.BatchSize = &depth, &batch
	opts := ahp.ServerOptions{
		Info:   ahp.HarnessInfo{Name: "harness", Version: buildVersion(), Capabilities: ahp.DefaultCapabilities},
		Config: &limits, Logger: e.Log,
	}
	if keys != nil && keys.Len() > 0 {
		opts.Authenticate = func(credential string) bool {
			k := keys.Authenticate(credential)
			return k != nil && k.Allows(trusted.PermExecute)
		}
	}
	srv := ahp.NewServer(h, opts)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	switch {
	case *unixPath != "":
		_ = os.Remove(*unixPath) // a socket left by an earlier run
		ln, err := net.Listen("unix", *unixPath)
		if err != nil {
			fmt.Fprintf(s.err, "harness ahp serve: --unix: %v\n", err)
			return exitUsage
		}
		defer os.Remove(*unixPath)
		if err := os.Chmod(*unixPath, 0o600); err != nil {
			fmt.Fprintf(s.err, "harness ahp serve: --unix: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(s.err, "harness ahp serve: serving AHP on unix:%s\n", *unixPath)
		return serveResult(s, srv.Serve(ctx, ln))
	case *httpAddr != "" || *wsAddr != "":
		addr, handler, scheme := *httpAddr, srv.HTTPHandler(), "http"
		if *wsAddr != "" {
			addr, handler, scheme = *wsAddr, srv.WebSocketHandler(), "ws"
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintf(s.err, "harness ahp serve: %v\n", err)
			return exitUsage
		}
		mux := http.NewServeMux()
		mux.Handle("/ahp", handler)
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = hs.Shutdown(sctx)
		}()
		fmt.Fprintf(s.err, "harness ahp serve: serving AHP at %s://%s/ahp\n", scheme, ln.Addr())
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return serveResult(s, err)
		}
		return exitOK
	default:
		return serveResult(s, srv.ServeStream(ctx, s.in, s.out))
	}
}

func serveResult(s stdio, err error) int {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, net.ErrClosed) {
		fmt.Fprintf(s.err, "harness ahp serve: %v\n", err)
		return exitActionError
	}
	return exitOK
}
