// Package pipeline is the one assembly of Harness: from a resolved
// configuration it builds the sanitizer, the audit log, the schema
// registry, the MCP client runtime, the guard (with every step the
// configuration asks for, in one list), the dispatcher with its workspace,
// the approvals store and, for the entry points that mint tokens, the
// trusted service. Every entry point (`harness run`, `patch`, `serve`,
// `mcp`, harness-load, examples/react) and every library user builds
// through Open and ends with one Close, so the same action gets the same
// decision, code and audit records whichever way it came in.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp/supervisor"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/mcp"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
	"github.com/harness-runtime/harness/schema"
	"github.com/harness-runtime/harness/trusted"
	"github.com/harness-runtime/harness/workspace"
)

// Options are what Open needs beyond the configuration. The zero value
// builds everything from the configuration alone.
type Options struct {
	// Logger receives operational logs; nil discards them (a library
	// never writes to stderr on its own).
	Logger *slog.Logger
	// HelperPath is the sandbox helper program (see workspace.Options).
	HelperPath string
	// Registry, when set, is used instead of a fresh schema.Catalog();
	// register a program's own actions on it before Open or on
	// Pipeline.Harness after.
	Registry *schema.Registry
	// Audit, when set, is the audit log instead of the one of
	// harness.audit.path; the caller closes it.
	Audit audit.Log
	// NoAudit records nothing at all. It exists to measure what the audit
	// log costs; a deployment never wants it.
	NoAudit bool
	// Key, when set, is the installation's HMAC key instead of the one at
	// harness.sanitize.key-path.
	Key []byte
	// Trusted builds the trusted service (token store of
	// harness.trusted.store, preview -> execute). The CLI's run and patch
	// do not need it.
	Trusted bool
	// MCPInBackground connects the configured MCP servers in the
	// background (the MCP bridge serves at once); OnMCPTools is called
	// each time a server's tools have been registered.
	MCPInBackground bool
	OnMCPTools      func(names []string)
	// Steps are guard steps the program adds to those of the
	// configuration.
	Steps policy.Steps
}

// Pipeline is everything one configuration builds.
type Pipeline struct {
	Config    *config.Config
	Harness   *runtime.Harness
	Workspace *workspace.Workspace
	Sanitizer *sanitize.Sanitizer
	// Audit is the audit log (nil only when the caller's Options.Audit
	// was nil and none is configured, which Open refuses).
	Audit audit.Log
	// MCP is the MCP client runtime, nil when no server is configured.
	MCP *mcp.Client
	// Approvals holds what waits for a person (harness.approvals, in the
	// store of harness.trusted.store: memory or Redis).
	Approvals trusted.ApprovalStore
	// Trusted is the preview -> token -> execute service (Options.Trusted).
	Trusted *trusted.Service
	// Metrics are the trusted service's metrics (Options.Trusted).
	Metrics *trusted.Metrics
	// Governor keeps the sessions' budgets (harness.governance).
	Governor *policy.Governor
	// Supervisor is the external AHP harness the guard consults
	// (harness.ahp.supervisor), nil when none is configured.
	Supervisor *supervisor.Supervisor
	// Hub is where the audit log Open opened publishes what it appends
	// (the live event stream); nil when the caller gave its own log.
	Hub *audit.Hub

	log     *slog.Logger
	closers []func() error
}

// Open builds the pipeline of cfg, which must be resolved (config.Load and
// config.LoadFile resolve it). On error nothing stays open.
func Open(ctx context.Context, cfg *config.Config, opts Options) (p *Pipeline, err error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	built := &Pipeline{Config: cfg, log: log}
	p = built
	defer func() {
		if err != nil {
			built.Close() // p is nil by now: every error returns nil
			p = nil
		}
	}()

	// Harness's own files stay out of the workspace's reach: an agent
	// that could read the key could confirm guesses of redacted values,
	// and one that could write the log could rewrite it.
	root := cfg.Harness.Workspace.Root
	key := opts.Key
	if key == nil {
		kp, err := KeyPath(cfg)
		if err != nil {
			return nil, err
		}
		if err := audit.CheckOutside(root, kp); err != nil {
			return nil, fmt.Errorf("harness.sanitize.key-path: %w", err)
		}
		if key, err = sanitize.LoadOrCreateKey(kp); err != nil {
			return nil, fmt.Errorf("sanitizer key: %w", err)
		}
	}
	p.Sanitizer, err = sanitize.New(sanitize.Options{Key: key, MaxString: cfg.Harness.Sanitize.MaxString})
	if err != nil {
		return nil, err
	}
	p.Audit = opts.Audit
	if p.Audit == nil && !opts.NoAudit {
		instance := cfg.Harness.Audit.Instance
		if instance == "" {
			instance = audit.DefaultInstance()
		}
		if err := audit.CheckOutside(root, cfg.Harness.Audit.Path); err != nil {
			return nil, fmt.Errorf("harness.audit.path: %w", err)
		}
		if path := cfg.Harness.Audit.Path; !audit.IsPostgres(path) {
			// The default lives in the user's state directory, which may
			// not exist yet.
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				return nil, fmt.Errorf("harness.audit.path: %w", err)
			}
		}
		// The chain is keyed with the installation's key, so that a process
		// that can write the log but not read the key cannot rewrite it.
		p.Hub = audit.NewHub(audit.HubOptions{})
		if p.Audit, err = audit.Open(ctx, cfg.Harness.Audit.Path, instance, audit.WithKey(key), audit.WithLogger(log), audit.WithHub(p.Hub)); err != nil {
			return nil, fmt.Errorf("harness.audit.path: %w", err)
		}
		p.closers = append(p.closers, p.Audit.Close)
	}

	reg := opts.Registry
	if reg == nil {
		reg = schema.Catalog()
	}
	steps := opts.Steps
	// The rules (harness.rules) come after the MCP allowlist, which the MCP
	// block below puts first (no person is asked about a call that would
	// be refused anyway), and before the program's own steps.
	rules, err := cfg.RuleSet(reg)
	if err != nil {
		return nil, fmt.Errorf("harness.rules: %w", err)
	}
	if rules.Len() > 0 {
		steps.Validating = append([]policy.Step{rules.Step()}, steps.Validating...)
	}
	if len(cfg.Harness.MCP.Servers) > 0 {
		if opts.MCPInBackground {
			c, errs := mcp.StartClient(ctx, cfg.Harness.MCP, reg, log, opts.OnMCPTools)
			p.MCP = c
			go func() {
				if err := <-errs; err != nil {
					log.Warn("harness.mcp: some tools were not registered", "err", err)
				}
			}()
		} else if p.MCP, err = mcp.NewClient(ctx, cfg.Harness.MCP, reg, log); err != nil {
			return nil, fmt.Errorf("harness.mcp: %w", err)
		}
		p.closers = append(p.closers, p.MCP.Close)
		steps.Validating = append([]policy.Step{p.MCP.Check()}, steps.Validating...)
	}

	gov, observer, err := p.openGovernance(ctx, key)
	if err != nil {
		return nil, err
	}
	p.Governor = gov
	// The external harness after Harness's own judgements (it is not asked
	// about what they refuse), before the budgets.
	steps.Validating = steps.Validating[:len(steps.Validating):len(steps.Validating)] // a fresh slice: the caller's Steps stay as they were
	if err := p.openSupervisor(); err != nil {
		return nil, err
	}
	if p.Supervisor != nil {
		steps.Validating = append(steps.Validating, p.Supervisor.Step())
	}
	// Last, so that what a rule refuses or asks about is not reserved first.
	steps.Validating = append(steps.Validating, gov.Step())
	ac := cfg.Harness.Approvals
	store, err := trusted.OpenApprovalStore(ctx, cfg.Harness.Trusted.Store, trusted.ApprovalStoreOptions{
		TTL: ac.TTL(), GrantTTL: ac.SessionScope(), Max: ac.MaxApprovals,
	})
	if err != nil {
		return nil, fmt.Errorf("harness.trusted.store: %w", err)
	}
	p.closers = append(p.closers, store.Close)
	// Every request is an audit record before anyone is told to wait, and
	// then, with harness.approvals.notify-url, a notice to a person.
	p.Approvals = trusted.AuditedApprovals(store, p.tokenAudit())
	if ac.NotifyURL != "" {
		n, err := trusted.NewNotifier(ac.NotifyURL, ac.ConsoleURL, log)
		if err != nil {
			return nil, fmt.Errorf("harness.approvals.notify-url: %w", err)
		}
		p.closers = append(p.closers, n.Close)
		p.Approvals = trusted.NotifyingApprovals(p.Approvals, n)
	}
	var recorder runtime.Recorder
	if p.Audit != nil {
		recorder = runtime.AuditRecorder(p.Audit)
	}
	p.Harness, p.Workspace, err = runtime.Build(cfg, runtime.BuildOptions{
		Sanitizer: p.Sanitizer, Recorder: recorder, Logger: log,
		Registry: reg, HelperPath: opts.HelperPath, Steps: steps, Approvals: p.Approvals, Observer: observer,
	})
	if err != nil {
		return nil, err
	}
	p.closers = append(p.closers, p.Workspace.Close)
	if p.Supervisor != nil {
		p.Harness.Subscribe(p.Supervisor) // post_action and error, as notifications
	}
	if p.MCP != nil {
		p.MCP.Mount(p.Harness)
	}

	if opts.Trusted {
		if err := p.openTrusted(ctx); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// openTrusted builds the trusted service: the token store, the metrics,
// the audit of token records.
func (p *Pipeline) openTrusted(ctx context.Context) error {
	cfg := p.Config
	store, err := trusted.OpenStoreLimits(ctx, cfg.Harness.Trusted.Store, trusted.TokenLimits{
		MaxTokens: cfg.Harness.Trusted.MaxTokensPerPrincipal, MaxBytes: cfg.Harness.Trusted.MaxTokenBytesPerPrincipal,
	})
	if err != nil {
		return fmt.Errorf("harness.trusted.store: %w", err)
	}
	p.closers = append(p.closers, store.Close)
	p.Metrics = trusted.NewMetrics()
	if ms, ok := store.(*trusted.MemoryStore); ok {
		ms.OnExpire(p.Metrics.Expired)
	}
	p.Trusted, err = trusted.NewService(trusted.Options{
		Harness: p.Harness, Store: store,
		TTL:    time.Duration(cfg.Harness.Trusted.TokenTTLSeconds) * time.Second,
		Events: p.Metrics.Token, Audit: p.tokenAudit(), Logger: p.log,
		Approvals: p.Approvals, AllowSelfApproval: cfg.Harness.Approvals.AllowSelfApproval,
	})
	if err != nil {
		return err
	}
	p.closers = append(p.closers, p.Trusted.Close)
	return nil
}

// tokenAudit is where the trusted service records its tokens: the audit
// log, or nothing without one.
func (p *Pipeline) tokenAudit() audit.Appender {
	if p.Audit == nil {
		return nil
	}
	return p.Audit
}

// Execute runs one action through the pipeline (Harness.Execute).
func (p *Pipeline) Execute(ctx context.Context, a action.Action) action.Observation {
	return p.Harness.Execute(ctx, a)
}

// Close releases everything Open opened, last opened first. It is safe to
// call more than once.
func (p *Pipeline) Close() error {
	var errs []error
	for i := len(p.closers) - 1; i >= 0; i-- {
		errs = append(errs, p.closers[i]())
	}
	p.closers = nil
	return errors.Join(errs...)
}

// KeyPath is where the per-installation HMAC key lives: the configured
// harness.sanitize.key-path, else $XDG_CONFIG_HOME/harness/hmac.key
// (~/.config/harness/hmac.key).
func KeyPath(cfg *config.Config) (string, error) {
	if p := cfg.Harness.Sanitize.KeyPath; p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("harness.sanitize.key-path is not set and there is no user config directory: %w", err)
	}
	return filepath.Join(dir, "harness", "hmac.key"), nil
}
