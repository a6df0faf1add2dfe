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
	commands["schema"] = command{summary: "list the action schema registry, show one action's schema, or export the actions as a model API's tool definitions", run: schemaCmd}
}

func schemaCmd(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("schema", "harness schema list [--json] | show ACTION | export --format mcp|openai|anthropic [--config F]", s.err)
	configPath := fs.String("config", "", "configuration file (YAML)")
	asJSON := fs.Bool("json", false, "list as JSON")
	format := fs.String("format", "", "export: the tool definition format (mcp, openai or anthropic)")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	want := map[string]int{"list": 1, "show": 2, "export": 1}
	if err != nil || len(pos) == 0 || want[pos[0]] != len(pos) {
		fs.Usage()
		return exitUsage
	}
	var tf schema.Format
	if pos[0] == "export" {
		if tf, err = schema.ParseFormat(*format); err != nil {
			fmt.Fprintf(s.err, "harness schema export: --format: %v\n", err)
			return exitUsage
		}
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
	if pos[0] == "export" {
		tools, err := reg.Export(tf, schema.ExportOptions{Omit: notOffered(cfg)})
		if err != nil {
			fmt.Fprintf(s.err, "harness schema export: %v\n", err)
			return exitActionError
		}
		b, _ := json.MarshalIndent(tools, "", "  ")
		fmt.Fprintf(s.out, "%s\n", b)
		return exitOK
	}
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

// notOffered are the actions a model is not given as tools: the disabled
// ones, and mcp_call when no MCP server is configured (it could only be
// refused).
func notOffered(cfg *config.Config) []string {
	out := append([]string(nil), cfg.Harness.DisabledActions...)
	if len(cfg.Harness.MCP.Servers) == 0 {
		out = append(out, "mcp_call")
	}
	return out
}
