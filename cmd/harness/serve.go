package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/console"
	"github.com/harness-runtime/harness/internal/tune"
	"github.com/harness-runtime/harness/trusted"
)

func init() {
	commands["serve"] = command{summary: "serve the HTTP API (preview/execute of trusted actions, untrusted execute, schemas)", run: serveCmd}
}

// shutdownGrace is how long a SIGTERM waits for in-flight requests
// (actions included) before the listener's connections are cut.
const shutdownGrace = 60 * time.Second

func serveCmd(ctx context.Context, args []string, s stdio) int {
	tune.GC()
	tune.Procs()
	fs := newFlags("serve", "harness serve [--config F] [--addr HOST:PORT] [--root DIR] [--store memory|redis://…] [--demo]", s.err)
	configPath := fs.String("config", "", "configuration file (YAML)")
	addr := fs.String("addr", "", "listen address (overrides harness.http.addr; default "+config.DefaultAddr+")")
	root := fs.String("root", "", "workspace root (overrides harness.workspace.root)")
	store := fs.String("store", "", "token store: memory or redis://host:port/db (overrides harness.trusted.store)")
	maxBody := fs.Int64("max-body-bytes", 0, "request body cap in bytes (overrides harness.http.max-body-bytes)")
	maxInFlight := fs.Int("max-in-flight", 0, "answer 429 beyond this many action requests in flight (0: no bound)")
	demo := fs.Bool("demo", false, "demo mode: a demo workspace and audit log in a temporary directory (unless --root is given), and a random API key printed once to stderr with a curl example")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(s.err, "harness serve: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return exitUsage
	}
	cfg, err := loadConfig(*configPath, *root)
	if err != nil {
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitUsage
	}
	if *addr != "" {
		cfg.Harness.HTTP.Addr = *addr
	}
	if *store != "" {
		cfg.Harness.Trusted.Store = *store
	}
	if *maxBody > 0 {
		cfg.Harness.HTTP.MaxBodyBytes = *maxBody
	}
	var demoKey string
	if *demo {
		if demoKey, err = demoSetup(cfg, *root); err != nil {
			fmt.Fprintf(s.err, "harness serve: demo: %v\n", err)
			return exitUsage
		}
	}
	if err := cfg.Validate(*configPath); err != nil {
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitUsage
	}

	e, err := setup(ctx, cfg, s, setupOptions{trusted: true})
	if err != nil {
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitUsage
	}
	defer e.Close()
	access := newLogger(s.err, slog.LevelInfo)
	keys, err := trusted.NewKeys(cfg.Harness.Auth.Keys)
	if err != nil {
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitUsage
	}
	srv, err := trusted.NewServer(trusted.ServerOptions{
		Service: e.P.Trusted, Keys: keys, MaxBodyBytes: cfg.Harness.HTTP.MaxBodyBytes,
		Metrics: e.P.Metrics, Logger: access, MaxInFlight: *maxInFlight,
		Ready: []trusted.ReadyCheck{
			{Name: "audit", Check: auditReady(e.Audit, cfg.Harness.Audit.Path)},
			{Name: "approvals_store", Check: e.P.Approvals.Ping},
		},
		Sessions: e.P.Governor,
		Events:   trusted.EventSource{Replay: replayer(e.Audit), Hub: e.P.Hub},
	})
	if err != nil {
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitUsage
	}

	// The approval console at /console/ (a browser signs in with an
	// agent:approve key); everything else is the API.
	con, err := console.New(console.Options{Approvals: e.P.Trusted, Replay: replayer(e.Audit), Keys: keys, Logger: access})
	if err != nil {
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitUsage
	}
	// Not a ServeMux: the API answers unclean paths itself (a mux would
	// redirect them).
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/console/") {
			con.ServeHTTP(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	})

	ln, err := net.Listen("tcp", cfg.Harness.HTTP.Addr)
	if err != nil {
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitUsage
	}
	hs := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Bodies are capped in size and, here, in time; answers are not
		// (a trusted command may run for its whole timeout).
		ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute,
		// In-flight actions keep running when the signal context is
		// cancelled: Shutdown waits for them.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
		ErrorLog:    slog.NewLogLogger(access.Handler(), slog.LevelWarn),
	}
	if e.P.Hub != nil {
		hs.RegisterOnShutdown(e.P.Hub.Close) // live streams end with the server
	}
	go expireApprovals(ctx, e.P.Trusted, access)
	base := "http://" + ln.Addr().String()
	fmt.Fprintf(s.err, "harness serve: listening on %s (workspace %s, store %s, audit %s, %d key(s))\n",
		base, e.WS.Root(), storeName(cfg.Harness.Trusted.Store), auditName(cfg.Harness.Audit.Path), len(cfg.Harness.Auth.Keys))
	if len(cfg.Harness.Auth.Keys) == 0 {
		fmt.Fprintln(s.err, "harness serve: no API keys are configured (harness.auth.keys): every /v1 route answers 401")
	}
	if demoKey != "" {
		printDemo(s, base, demoKey)
	}

	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		fmt.Fprintf(s.err, "harness serve: %v\n", err)
		return exitActionError
	case <-ctx.Done():
	}
	fmt.Fprintln(s.err, "harness serve: shutting down; finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		fmt.Fprintf(s.err, "harness serve: shutdown: %v\n", err)
		return exitActionError
	}
	fmt.Fprintln(s.err, "harness serve: stopped")
	return exitOK
}

// replayer is the audit log's replay, when it has one.
func replayer(l audit.Log) audit.Replayer {
	r, _ := l.(audit.Replayer)
	return r
}

// approvalSweep is how often pending approvals past their expiry are
// expired (and recorded) when nobody looks at them.
const approvalSweep = 15 * time.Second

// expireApprovals records expiries until ctx ends.
func expireApprovals(ctx context.Context, svc *trusted.Service, log *slog.Logger) {
	t := time.NewTicker(approvalSweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := svc.ExpireApprovals(ctx); err != nil && ctx.Err() == nil {
				log.Warn("approvals: expiry sweep failed", "err", err)
			}
		}
	}
}

// auditReady checks the audit log for /readyz with the cheapest probe the
// log offers: Ping when it has one; for PostgreSQL, a fresh connection
// and ping to the configured database; else Sync (JSONL: an fsync of the
// open file, which fails once the log is broken).
func auditReady(l audit.Log, target string) func(context.Context) error {
	return func(ctx context.Context) error {
		switch p := any(l).(type) {
		case interface{ Ping(context.Context) error }:
			return p.Ping(ctx)
		case interface{ Sync() error }:
			return p.Sync()
		}
		if audit.IsPostgres(target) {
			return pingPostgres(ctx, target)
		}
		return nil
	}
}

// pingPostgres connects to the audit database and pings it. The error
// never carries the DSN's password (pgx masks it).
func pingPostgres(ctx context.Context, dsn string) error {
	pc, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("audit database: %w", err)
	}
	delete(pc.RuntimeParams, audit.TableParam)
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("audit database unreachable: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("audit database ping: %w", err)
	}
	return nil
}

// storeName names the token store for the start-up line, without the
// password a redis URL may carry.
func storeName(s string) string {
	if s == "memory" || s == "" {
		return "memory"
	}
	u, err := url.Parse(s)
	if err != nil {
		return "redis"
	}
	return u.Redacted()
}

func auditName(p string) string {
	if audit.IsPostgres(p) {
		return "postgres"
	}
	return p
}

// demoSetup points the configuration at a demo workspace and audit log and
// adds one random API key with every permission, which it returns.
func demoSetup(cfg *config.Config, root string) (string, error) {
	if root == "" {
		dir, err := os.MkdirTemp("", "harness-demo-")
		if err != nil {
			return "", err
		}
		ws := filepath.Join(dir, "workspace")
		if err := os.MkdirAll(ws, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello\n"), 0o644); err != nil {
			return "", err
		}
		cfg.Harness.Workspace.Root = ws
		cfg.Harness.Audit.Path = filepath.Join(dir, "audit.jsonl")
		if cfg.Harness.Sanitize.KeyPath == "" {
			cfg.Harness.Sanitize.KeyPath = filepath.Join(dir, "hmac.key")
		}
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	key := "demo_" + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(key))
	cfg.Harness.Auth.Keys = append(cfg.Harness.Auth.Keys, config.AuthKey{
		Principal: "demo", SHA256: hex.EncodeToString(sum[:]),
		Permissions: []string{"agent:execute", "agent:trusted", "admin"},
	})
	return key, nil
}

// printDemo shows the demo key once, on stderr, with the preview ->
// execute flow as curl commands. The key is never written to the access
// log or the audit log.
func printDemo(s stdio, base, key string) {
	fmt.Fprintf(s.err, `
Demo API key (shown once; valid until this process stops):

  export HARNESS_KEY=%s

Preview a change (nothing is written; the answer holds the one-time token and the diff):

  curl -s -H "Authorization: Bearer $HARNESS_KEY" %s/v1/actions/preview \
    -d '{"name":"workspace_apply_patch","input":{"path":"hello.txt","content":"hello, harness\n"}}'

Execute exactly what was previewed (once; a second call answers 404):

  curl -s -X POST -H "Authorization: Bearer $HARNESS_KEY" %s/v1/actions/execute/TOKEN

Or both at once:

  TOKEN=$(curl -s -H "Authorization: Bearer $HARNESS_KEY" %s/v1/actions/preview \
    -d '{"name":"workspace_apply_patch","input":{"path":"hello.txt","content":"hello, harness\n"}}' \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
  curl -s -X POST -H "Authorization: Bearer $HARNESS_KEY" %s/v1/actions/execute/$TOKEN

`, key, base, base, base, base)
}
