package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/workspace"
)

// env is everything a command that runs actions needs, built from one
// configuration.
type env struct {
	Cfg       *policy.Config
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

// loadConfig reads --config (or defaults) and applies --root.
func loadConfig(path, root string) (*policy.Config, error) {
	cfg, err := policy.LoadFile(path)
	if err != nil {
		return nil, err
	}
	if root != "" {
		cfg.Harness.Workspace.Root = root
	}
	return cfg, nil
}

// keyPath is where the per-installation HMAC key lives: the configured
// path, else $XDG_CONFIG_HOME/harness/hmac.key (~/.config/harness/hmac.key).
func keyPath(cfg *policy.Config) (string, error) {
	if p := cfg.Harness.Sanitize.KeyPath; p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("harness.sanitize.key-path is not set and there is no user config directory: %w", err)
	}
	return filepath.Join(dir, "harness", "hmac.key"), nil
}

// setup builds the sanitizer, the audit log, the Harness with its
// workspace, and the MCP client runtime, from a resolved configuration.
func setup(ctx context.Context, cfg *policy.Config, s stdio) (*env, error) {
	logger := slog.New(slog.NewTextHandler(s.err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e := &env{Cfg: cfg, Log: logger}
	kp, err := keyPath(cfg)
	if err != nil {
		return nil, err
	}
	key, err := sanitize.LoadOrCreateKey(kp)
	if err != nil {
		return nil, fmt.Errorf("sanitizer key: %w", err)
	}
	e.Sanitizer, err = sanitize.New(sanitize.Options{Key: key, MaxString: cfg.Harness.Sanitize.MaxString})
	if err != nil {
		return nil, err
	}
	instance := cfg.Harness.Audit.Instance
	if instance == "" {
		instance = audit.DefaultInstance()
	}
	e.Audit, err = audit.Open(ctx, cfg.Harness.Audit.Path, instance)
	if err != nil {
		return nil, fmt.Errorf("harness.audit.path: %w", err)
	}
	e.closers = append(e.closers, e.Audit.Close)
	e.H, e.WS, err = runtime.Build(cfg, runtime.BuildOptions{
		Sanitizer: e.Sanitizer, Recorder: runtime.AuditRecorder(e.Audit), Logger: logger, HelperPath: sandboxHelper(),
	})
	if err != nil {
		e.Close()
		return nil, err
	}
	e.closers = append(e.closers, e.WS.Close)
	if err := mountMCP(ctx, e); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
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

// mountMCP connects the configured MCP servers; it is replaced by the MCP
// package's wiring when servers are configured.
var mountMCP = func(ctx context.Context, e *env) error { return nil }
