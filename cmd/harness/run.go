package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
)

func init() {
	commands["run"] = command{summary: "run one action and print its observation as JSON", run: runCmd}
}

func runCmd(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("run", "harness run ACTION [--input JSON | --input-file F] [--config F] [--root DIR] [--trusted]", s.err)
	input := fs.String("input", "", "the action's input, a JSON object")
	inputFile := fs.String("input-file", "", "read the input from file F (- for stdin)")
	config := fs.String("config", "", "configuration file (YAML)")
	root := fs.String("root", "", "workspace root (overrides harness.workspace.root)")
	trusted := fs.Bool("trusted", false, "run with trust: you, the operator, vouch for this action")
	tenant := fs.String("tenant", "", "tenant of the action")
	session := fs.String("session", "", "session id carried by the action's events")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) != 1 {
		if err == nil {
			fmt.Fprintln(s.err, "harness run: want exactly one ACTION")
		}
		fs.Usage()
		return exitUsage
	}
	in, err := readInput(*input, *inputFile, s.in)
	if err != nil {
		fmt.Fprintf(s.err, "harness run: %v\n", err)
		return exitUsage
	}
	cfg, err := loadConfig(*config, *root)
	if err != nil {
		fmt.Fprintf(s.err, "harness run: %v\n", err)
		return exitUsage
	}
	e, err := setup(ctx, cfg, s)
	if err != nil {
		fmt.Fprintf(s.err, "harness run: %v\n", err)
		return exitUsage
	}
	defer e.Close()

	a := action.Action{Name: pos[0], Input: in, Tenant: *tenant, SessionID: *session, Trusted: *trusted}
	obs := e.H.Execute(runtime.WithPrincipal(ctx, "cli"), a)
	s.out.Write(obs.JSON())
	fmt.Fprintln(s.out)
	if obs.Message != "" && obs.Status != action.StatusOK {
		fmt.Fprintf(s.err, "harness run: %s: %s\n", obs.Code, sanitize.Inert(obs.Message))
	}
	if obs.Approval != nil {
		// Someone approves it with the id (GET /v1/approvals, the console);
		// an approval kept in memory lives only as long as this process.
		where := "harness.trusted.store " + storeName(cfg.Harness.Trusted.Store)
		fmt.Fprintf(s.err, "harness run: approval %s waits for a person until %s (%s)\n", obs.Approval.ID, obs.Approval.ExpiresAt, where)
	}
	return exitFor(obs.Status)
}

// exitFor maps an observation's status to SPEC section 4's exit codes.
func exitFor(st action.Status) int { return action.ExitFor(st) }

// readInput decodes the action input from --input or --input-file. No
// input means an empty object.
func readInput(inline, file string, stdin io.Reader) (map[string]any, error) {
	if inline != "" && file != "" {
		return nil, errors.New("give --input or --input-file, not both")
	}
	data := []byte(inline)
	if file != "" {
		var err error
		if file == "-" {
			data, err = io.ReadAll(io.LimitReader(stdin, 64<<20))
		} else {
			data, err = os.ReadFile(file)
		}
		if err != nil {
			return nil, fmt.Errorf("--input-file: %w", err)
		}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil {
		return nil, fmt.Errorf("input is not a JSON object: %w", err)
	}
	if dec.More() {
		return nil, errors.New("input has data after the JSON object")
	}
	if in == nil {
		return nil, errors.New("input is not a JSON object: null")
	}
	return in, nil
}
