package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
)

func init() {
	commands["config"] = command{summary: "check the configuration: which file, every problem, the effective settings (config check)", run: configCmd}
}

const configUsageLine = "harness config check [--config F] [--root DIR]"

// configCmd is `harness config check`: it finds the configuration as every
// other command does, and either prints to stdout which file it read and
// the effective settings as YAML (secrets as ***), exit 0, or lists every
// problem on stderr, exit 2.
func configCmd(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("config", configUsageLine, s.err)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(s.err, `
Finds the configuration as every command does: --config F, else
$HARNESS_CONFIG, else .harness/config.yaml under the workspace root (--root,
else the current directory), else ~/.config/harness/config.yaml, else the
embedded defaults. Prints which one it read and the effective settings
(defaults filled in, environment overrides applied, secrets shown as ***),
which are themselves a valid configuration. A bad configuration exits 2 with
every problem, each with its line. Examples of every key: examples/harness.yaml.
`)
	}
	configPath := fs.String("config", "", "configuration file (YAML)")
	root := fs.String("root", "", "workspace root (overrides harness.workspace.root)")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) != 1 || pos[0] != "check" {
		if err == nil && len(pos) > 0 && pos[0] != "check" {
			fmt.Fprintf(s.err, "harness config: unknown sub-command %q\n\n", pos[0])
		}
		fs.Usage()
		return exitUsage
	}
	cfg, err := loadConfig(*configPath, *root)
	if err != nil {
		fmt.Fprintf(s.err, "harness config check: %v\n", err)
		return exitUsage
	}
	shown := cfg.Redacted()
	if err := startChecks(cfg, shown); err != nil {
		fmt.Fprintf(s.err, "harness config check: %s: %v\n", cfg.Source, err)
		return exitUsage
	}
	out, err := shown.YAML()
	if err != nil {
		fmt.Fprintf(s.err, "harness config check: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(s.out, "# configuration: %s\n# valid; the effective settings follow (secrets shown as %s)\n", cfg.Source, config.Hidden)
	s.out.Write(out)
	return exitOK
}

// startChecks are the checks of the configuration that the pipeline makes
// at start beyond the file's own (Harness's files outside the workspace
// root); shown gets the paths they resolved.
func startChecks(cfg, shown *config.Config) error {
	h := cfg.Harness
	if err := audit.CheckOutside(h.Workspace.Root, h.Audit.Path); err != nil {
		return fmt.Errorf("harness.audit.path: %w", err)
	}
	kp, err := pipeline.KeyPath(cfg)
	if err != nil {
		return err
	}
	if err := audit.CheckOutside(h.Workspace.Root, kp); err != nil {
		return fmt.Errorf("harness.sanitize.key-path: %w", err)
	}
	shown.Harness.Sanitize.KeyPath = kp
	if shown.Harness.Audit.Instance == "" {
		shown.Harness.Audit.Instance = audit.DefaultInstance()
	}
	return nil
}
