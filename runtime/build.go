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

// Previewer is implemented by runtimes that can say what an action would
// do without doing it: the diff of a patch and the hashes of the files it
// touches, the argv and limits of a command. The trusted preview flow uses
// it; runtimes without it are previewed by their sanitized input.
type Previewer interface {
	Preview(ctx context.Context, a action.Action) (map[string]any, error)
}

// Preview runs the guard as if the action were trusted (the caller vouches
// for having the agent:trusted permission) and, when it allows, asks the
// action's runtime for a preview. Nothing is dispatched and no event is
// emitted. A refusal comes back as the decision; a preview failure as an
// error carrying its code.
func (h *Harness) Preview(ctx context.Context, a action.Action) (policy.Decision, *schema.ActionSchema, map[string]any, error) {
	a.Trusted = true
	d, sc := h.Decide(ctx, a)
	if !d.Allowed() {
		return d, sc, nil, nil
	}
	m, ok := h.runtimes[sc.Runtime]
	if !ok {
		return d, sc, nil, action.Errorf(action.CodeInternal, "no runtime %q is mounted for %s", sc.Runtime, a.Name)
	}
	p, ok := m.rt.(Previewer)
	if !ok {
		return d, sc, map[string]any{"input": h.sanitizer.Value(a.Input, sc.Sensitive)}, nil
	}
	preview, err := p.Preview(ctx, a)
	return d, sc, preview, err
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
		Recorder: opts.Recorder, Logger: opts.Logger, Approvals: opts.Approvals,
	})
	if err != nil {
		return nil, nil, err
	}
	ws, err := workspace.New(cfg.Harness.Workspace.Root, WorkspaceOptions(cfg, opts.HelperPath))
	if err != nil {
		return nil, nil, fmt.Errorf("harness.workspace.root: %w", err)
	}
	h.Mount(schema.RuntimeWorkspace, action.SourceWorkspace, ws)
	return h, ws, nil
}

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
		HelperPath:            helperPath,
	}
}
