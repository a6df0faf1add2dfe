package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/workspace"
)

// env is everything a command that runs actions needs, built from one
// configuration.
type env struct {
	Cfg       *config.Config
	P         *pipeline.Pipeline
	H         *runtime.Harness
	WS        *workspace.Workspace
	Audit     audit.Log
	Sanitizer *sanitize.Sanitizer
	Log       *slog.Logger
	closers   []func() error
}

// Close releases what setup opened, last opened first.
func (e *env) Close() error {
	var errs []error
	for i := len(e.closers) - 1; i >= 0; i-- {
		errs = append(errs, e.closers[i]())
	}
	return errors.Join(errs...)
}

// loadConfig finds the configuration as SPEC 3 orders it (--config,
// $HARNESS_CONFIG, .harness/config.yaml under the root, the user's config
// directory, the embedded defaults; config.Load), and applies --root.
// cfg.Source says which file was read.
func loadConfig(path, root string) (*config.Config, error) {
	cfg, err := config.Load(path, root)
	if err != nil {
		return nil, err
	}
	if root != "" {
		cfg.Harness.Workspace.Root = root
	}
	return cfg, nil
}

// setupOptions are what a command asks of the pipeline beyond the
// configuration.
type setupOptions struct {
	trusted bool // the token service (serve, mcp)
	bridge  bool // MCP servers connect in the background (harness mcp)
}

// setup builds the whole pipeline of a resolved configuration (package
// pipeline, the one assembly every entry point uses).
func setup(ctx context.Context, cfg *config.Config, s stdio, so ...setupOptions) (*env, error) {
	logger := newLogger(s.err, slog.LevelWarn)
	var o setupOptions
	if len(so) > 0 {
		o = so[0]
	}
	p, err := pipeline.Open(ctx, cfg, pipeline.Options{
		Logger: logger, HelperPath: sandboxHelper(), Trusted: o.trusted,
		MCPInBackground: o.bridge, OnMCPTools: func([]string) { syncBridge(logger) },
	})
	if err != nil {
		return nil, err
	}
	return &env{Cfg: cfg, P: p, H: p.Harness, WS: p.Workspace, Audit: p.Audit, Sanitizer: p.Sanitizer, Log: logger,
		closers: []func() error{p.Close}}, nil
}

// sandboxHelper returns the program the workspace re-runs to confine a
// command: harness-sandbox beside this executable when it is there (it
// starts several times faster, having none of the service's packages to
// initialise), else this executable's own hidden sub-command.
func sandboxHelper() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	if resolved, err := filepath.EvalSymlinks(self); err == nil {
		self = resolved
	}
	small := filepath.Join(filepath.Dir(self), "harness-sandbox")
	if fi, err := os.Stat(small); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
		return small
	}
	return self
}
