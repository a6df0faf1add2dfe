package trusted

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/workspace"
)

// BuildOptions are what Build needs beyond the configuration.
type BuildOptions struct {
	// Harness and Workspace are the dispatcher and the workspace built from
	// the same configuration (runtime.Build). Both are required.
	Harness   *runtime.Harness
	Workspace *workspace.Workspace
	// Logger receives the access log; nil means slog.Default().
	Logger *slog.Logger
	// Ready lists /readyz checks beyond the token store (the audit log).
	Ready []ReadyCheck
	// Audit receives the token records (see Options.Audit); nil records
	// none.
	Audit audit.Appender
	// MaxInFlight bounds the action requests served at once (429 beyond);
	// zero means no bound.
	MaxInFlight int
}

// Build wires the HTTP service of `harness serve` from a resolved
// configuration: the token store of harness.trusted.store, the TTL of
// harness.trusted.token-ttl-seconds, the workspace planners and file
// checker, the keys of harness.auth.keys, harness.http.max-body-bytes and
// fresh metrics. The returned function closes what Build opened (the store
// and the file checker); the Harness and Workspace stay the caller's.
func Build(ctx context.Context, cfg *policy.Config, opts BuildOptions) (*Server, func() error, error) {
	if opts.Harness == nil || opts.Workspace == nil {
		return nil, nil, errors.New("trusted.Build: Harness and Workspace are required")
	}
	keys, err := NewKeys(cfg.Harness.Auth.Keys)
	if err != nil {
		return nil, nil, err
	}
	store, err := OpenStore(ctx, cfg.Harness.Trusted.Store)
	if err != nil {
		return nil, nil, fmt.Errorf("harness.trusted.store: %w", err)
	}
	files, err := OpenRootFiles(opts.Workspace.Root())
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	closeAll := func() error { return errors.Join(files.Close(), store.Close()) }
	metrics := NewMetrics()
	if ms, ok := store.(*MemoryStore); ok {
		ms.OnExpire(metrics.Expired)
	}
	svc, err := NewService(Options{
		Harness: opts.Harness, Store: store,
		TTL:      time.Duration(cfg.Harness.Trusted.TokenTTLSeconds) * time.Second,
		Planners: WorkspacePlanners(opts.Workspace), Files: files,
		Events: metrics.Token, Audit: opts.Audit, Logger: opts.Logger,
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	srv, err := NewServer(ServerOptions{
		Service: svc, Keys: keys, MaxBodyBytes: cfg.Harness.HTTP.MaxBodyBytes,
		Metrics: metrics, Ready: opts.Ready, Logger: opts.Logger, MaxInFlight: opts.MaxInFlight,
	})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return srv, closeAll, nil
}
