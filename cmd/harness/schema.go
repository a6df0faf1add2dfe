package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"

	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/schema"
)

func init() {
	commands["schema"] = command{summary: "list the action schema registry, or show one action's schema", run: schemaCmd}
}

func schemaCmd(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("schema", "harness schema list [--json] | harness schema show ACTION [--config F]", s.err)
	configPath := fs.String("config", "", "configuration file (YAML)")
	asJSON := fs.Bool("json", false, "list as JSON")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) == 0 || (pos[0] == "list" && len(pos) != 1) || (pos[0] == "show" && len(pos) != 2) ||
		(pos[0] != "list" && pos[0] != "show") {
		fs.Usage()
		return exitUsage
	}
	cfg, err := loadConfig(*configPath, "")
	if err != nil {
		fmt.Fprintf(s.err, "harness schema: %v\n", err)
		return exitUsage
	}
	reg, done, err := registryFor(ctx, cfg, s)
	if err != nil {
		fmt.Fprintf(s.err, "harness schema: %v\n", err)
		return exitUsage
	}
	defer done()
	if pos[0] == "show" {
		sc, ok := reg.Lookup(pos[1])
		if !ok {
			fmt.Fprintf(s.err, "harness schema: no action named %q (harness schema list shows them)\n", pos[1])
			return exitActionError
		}
		b, _ := json.MarshalIndent(sc, "", "  ")
		fmt.Fprintf(s.out, "%s\n", b)
		return exitOK
	}
	list := reg.List()
	if *asJSON {
		b, _ := json.MarshalIndent(list, "", "  ")
		fmt.Fprintf(s.out, "%s\n", b)
		return exitOK
	}
	tw := tabwriter.NewWriter(s.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACTION\tRUNTIME\tTRUST\tRISK\tDESCRIPTION")
	for _, sc := range list {
		trust := "untrusted"
		if sc.Trusted {
			trust = "trusted"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sc.Name, sc.Runtime, trust, sc.Risk, sc.Description)
	}
	tw.Flush()
	return exitOK
}

// registryFor returns the registry a configuration yields: the catalog,
// plus the tools that configured MCP servers add (which needs them
// started). Without MCP servers nothing is opened or started.
func registryFor(ctx context.Context, cfg *config.Config, s stdio) (*schema.Registry, func(), error) {
	if len(cfg.Harness.MCP.Servers) == 0 {
		return schema.Catalog(), func() {}, nil
	}
	e, err := setup(ctx, cfg, s)
	if err != nil {
		return nil, nil, err
	}
	return e.H.Registry(), func() { e.Close() }, nil
}
