package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/schema"
	"github.com/harness-runtime/harness/workspace"
)

// Planner is implemented by runtimes that can say what an action would do
// without doing it, and what it depends on: the diff of a patch and the
// hashes of the files it touches, the argv and limits of a command and the
// tree it reads. The trusted preview flow and approvals store the plan's
// preconditions and hand them back (action.WithPreconditions) when the
// action runs; such a runtime must then run it only while they hold.
// Runtimes without a Planner are planned as their sanitized input, with no
// precondition.
type Planner interface {
	Plan(ctx context.Context, a action.Action) (action.Plan, error)
}

// Plan asks a's runtime for its plan, without deciding, dispatching or
// emitting anything: the caller has run the guard.
func (h *Harness) Plan(ctx context.Context, a action.Action) (action.Plan, error) {
	sc, ok := h.registry.Lookup(a.Name)
	if !ok {
		return action.Plan{}, action.Errorf(action.CodeUnknownAction, "no action named %q is registered", a.Name)
	}
	m, ok := h.runtimes[sc.Runtime]
	if !ok {
		return action.Plan{}, action.Errorf(action.CodeInternal, "no runtime %q is mounted for %s", sc.Runtime, a.Name)
	}
	if p, ok := m.rt.(Planner); ok {
		return p.Plan(ctx, a)
	}
	return action.Plan{Preview: map[string]any{"input": h.sanitizer.Value(a.Input, sc.Sensitive)}}, nil
}

// BuildOptions are what Build needs beyond the configuration.
type BuildOptions struct {
	Sanitizer Sanitizer // required
	Recorder  Recorder
	Logger    *slog.Logger
	// Registry, when set, is used instead of a fresh schema.Catalog().
	Registry *schema.Registry
	// HelperPath is the harness binary re-run as the sandbox helper.
	HelperPath string
	// Steps are the guard steps the program adds (an MCP allowlist, an
	// external harness, rules, budgets).
	Steps policy.Steps
	// Approvals stores what the guard asks a person about.
	Approvals Approvals
	// Observer is told of every observation (see Options.Observer).
	Observer Observer
}

// Build returns a Harness for a resolved configuration: the catalog
// registry, the guard, the builtin runtime, and the workspace runtime on
// cfg's root. MCP servers are mounted by the caller (package mcp).
// Close the returned workspace when done.
func Build(cfg *config.Config, opts BuildOptions) (*Harness, *workspace.Workspace, error) {
	if opts.Sanitizer == nil {
		return nil, nil, errors.New("runtime.Build: a Sanitizer is required")
	}
	reg := opts.Registry
	if reg == nil {
		reg = schema.Catalog()
	}
	h, err := New(Options{
		Registry: reg, Guard: policy.NewGuard(reg, cfg.GuardOptions(), opts.Steps), Sanitizer: opts.Sanitizer,
		Recorder: opts.Recorder, Logger: opts.Logger, Approvals: opts.Approvals, Observer: opts.Observer,
	})
	if err != nil {
		return nil, nil, err
	}
	wo := WorkspaceOptions(cfg, opts.HelperPath)
	wo.Logger = opts.Logger
	ws, err := workspace.New(cfg.Harness.Workspace.Root, wo)
	if err != nil {
		return nil, nil, fmt.Errorf("harness.workspace.root: %w", err)
	}
	h.Mount(schema.RuntimeWorkspace, action.SourceWorkspace, ws)
	return h, ws, nil
}

// The workspace's reads stop on their own when their context ends: the
// dispatcher runs them on the caller's goroutine.
var _ ContextHonouring = (*workspace.Workspace)(nil)

// WorkspaceOptions translates harness.workspace into workspace.Options.
func WorkspaceOptions(cfg *config.Config, helperPath string) workspace.Options {
	w := cfg.Harness.Workspace
	return workspace.Options{
		WriteEnabled:          config.Bool(w.WriteEnabled),
		ShellEnabled:          config.Bool(w.ShellEnabled),
		CommandTimeout:        time.Duration(w.CommandTimeoutSeconds) * time.Second,
		MaxCommandOutputBytes: w.MaxCommandOutputBytes,
		MaxFileBytes:          w.MaxFileBytes,
		MaxSearchFiles:        w.MaxSearchFiles,
		MaxListEntries:        w.MaxListEntries,
		AllowedCommands:       w.AllowedCommands,
		AllowedGitSubcommands: w.AllowedGitSubcommands,
		Sandbox:               w.Sandbox,
		NetworkCommands:       w.NetworkCommands,
		HelperPath:            helperPath,
	}
}
