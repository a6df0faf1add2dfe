// Package eval is Harness's fixed evaluation: one table of scenarios
// (Scenarios) run through the four entry points — the Go library, the
// HTTP service, the CLI binary and the MCP bridge binary — each on its own
// copy of the same workspace and configuration, asserting that every entry
// point gives each scenario the same status, code and deciding guard step,
// and leaves exactly the audit records its way of running the action
// implies.
//
// It runs as a test (go test ./internal/eval) and as `make eval`
// (cmd/harness-eval), which prints the table. Both build the harness and
// harness-sandbox binaries once and start the evaluation's MCP server
// (ServeMCPIfAsked) from their own executable.
//
// What it does not check: payloads beyond status and code, messages,
// latency, and entry-point features with no counterpart elsewhere (HTTP
// authentication, MCP tool listing); each entry point's own tests do.
package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harness-runtime/harness/action"
)

// Entry is one of the four ways into Harness.
type Entry string

// The entry points, in the table's column order.
const (
	Library Entry = "library"
	HTTP    Entry = "http"
	CLI     Entry = "cli"
	MCP     Entry = "mcp"
)

// Entries lists every entry point in column order.
var Entries = []Entry{Library, HTTP, CLI, MCP}

// Outcome is what the evaluation compares: an observation's status and
// code, and the step of its decision ("" for none).
type Outcome struct {
	Status action.Status
	Code   action.Code
	Step   string
}

func (o Outcome) String() string {
	s := string(o.Status)
	if o.Code != "" {
		s += "/" + string(o.Code)
	}
	if o.Step != "" {
		s += "@" + o.Step
	}
	return s
}

// Options configure Run.
type Options struct {
	// Dir is a scratch directory Run fills (one subdirectory per entry
	// point and configuration); the caller removes it.
	Dir string
	// Harness and SandboxHelper are the built cmd/harness and
	// cmd/harness-sandbox binaries.
	Harness       string
	SandboxHelper string
	// MCPServer is the command line of the evaluation's MCP server: a
	// program that calls ServeMCPIfAsked first thing (the environment
	// variable that makes it serve is added by the configuration).
	MCPServer []string
	// Env is the environment of the harness processes (HOME and the XDG
	// directories pointing into a scratch directory).
	Env []string
	// Entries limits the run to these entry points (default: all).
	Entries []Entry
}

// Cell is one scenario on one entry point.
type Cell struct {
	Entry Entry
	// NA or Pending, when set, says why the scenario did not run here.
	NA, Pending string
	// Got is what the entry point said.
	Got Outcome
	// Message is the observation's (or error answer's) message.
	Message string
	// Records are the kinds of the audit records that name the action.
	Records []string
	// Problems are the differences found; empty when the cell agrees.
	Problems []string
}

// Ran reports whether the scenario ran on this entry point.
func (c Cell) Ran() bool { return c.NA == "" && c.Pending == "" }

// Row is one scenario across the entry points.
type Row struct {
	Scenario Scenario
	Cells    []Cell
}

// Report is the whole evaluation.
type Report struct {
	Entries []Entry
	Rows    []Row
}

// Differences lists every problem as "scenario, entry: problem".
func (r Report) Differences() []string {
	var out []string
	for _, row := range r.Rows {
		for _, c := range row.Cells {
			for _, p := range c.Problems {
				out = append(out, fmt.Sprintf("%s, %s: %s", row.Scenario.Name, c.Entry, p))
			}
		}
	}
	return out
}

// flow says how an entry point ran an action, which fixes the audit
// records it must leave.
type flow int

const (
	// direct: one Execute; pre_action, post_action (and error on status
	// error) under the observation's action_id.
	direct flow = iota
	// tokenFlow: a preview minted a token that an execute redeemed; the
	// token's records (minted, and stale when refused as stale) and the
	// run's events share the action_id tok-<token ref>.
	tokenFlow
	// previewRefused: the preview was refused; nothing was minted or run,
	// and nothing is recorded.
	previewRefused
	// confirmedFlow: a token flow that a person confirmed through the MCP
	// client's form, which is also an approval record (approved) under
	// the run's action_id.
	confirmedFlow
)

// answer is what a driver reports of one scenario.
type answer struct {
	Outcome
	Message  string
	ActionID string
	Flow     flow
	// Problems are the driver's own checks (HTTP status, exit code,
	// isError against the code table).
	Problems []string
}

// driver runs scenarios through one entry point.
type driver interface {
	// run asks for sc on s, a site of sc's variant.
	run(ctx context.Context, sc Scenario, s site) (answer, error)
	close() error
}

// Run runs every scenario through every entry point and reports what each
// said. Entry points run concurrently, each scenario in table order. An
// error is returned only when the evaluation itself cannot run.
func Run(ctx context.Context, opts Options) (Report, error) {
	entries := opts.Entries
	if len(entries) == 0 {
		entries = Entries
	}
	token, keySHA := newAPIKey()
	rep := Report{Entries: entries, Rows: make([]Row, len(Scenarios))}
	for i, sc := range Scenarios {
		rep.Rows[i] = Row{Scenario: sc, Cells: make([]Cell, len(entries))}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(entries))
	for j, e := range entries {
		wg.Go(func() {
			errs[j] = runEntry(ctx, opts, e, token, keySHA, func(i int, c Cell) { rep.Rows[i].Cells[j] = c })
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// runEntry runs the table through one entry point.
func runEntry(ctx context.Context, opts Options, e Entry, apiKey, keySHA string, put func(int, Cell)) error {
	sites := map[Variant]site{}
	for _, v := range []Variant{Main, Restricted} {
		s, err := newSite(filepath.Join(opts.Dir, string(e)+"-"+string(v)), v, opts.MCPServer, keySHA)
		if err != nil {
			return fmt.Errorf("%s: %w", e, err)
		}
		sites[v] = s
	}
	var d driver
	switch e {
	case Library:
		d = &libraryDriver{ps: pipelines{opts: opts}}
	case HTTP:
		d = &httpDriver{ps: pipelines{opts: opts}, key: apiKey}
	case CLI:
		d = &cliDriver{opts: opts}
	case MCP:
		d = &mcpDriver{opts: opts}
	default:
		return fmt.Errorf("unknown entry point %q", e)
	}
	defer d.close()
	for i, sc := range Scenarios {
		c := Cell{Entry: e, NA: sc.NA[e], Pending: sc.Pending}
		if c.Ran() {
			if sc.Variant == "" {
				sc.Variant = Main
			}
			c = runCell(ctx, d, sc, sites[sc.Variant], c)
		}
		put(i, c)
	}
	return nil
}

// runCell runs one scenario and checks what came back and what the audit
// log gained.
func runCell(ctx context.Context, d driver, sc Scenario, s site, c Cell) Cell {
	before := fileSize(s.audit)
	a, err := d.run(ctx, sc, s)
	if err != nil {
		c.Problems = append(c.Problems, "did not run: "+err.Error())
		return c
	}
	c.Got, c.Message = a.Outcome, a.Message
	c.Problems = append(c.Problems, a.Problems...)
	if a.Outcome != sc.Want {
		c.Problems = append(c.Problems, fmt.Sprintf("said %s (%s), want %s", a.Outcome, oneLine(a.Message), sc.Want))
	}
	recs, err := readRecords(s.audit, before)
	if err != nil {
		c.Problems = append(c.Problems, "audit log: "+err.Error())
		return c
	}
	var stray []string
	for _, r := range recs {
		if a.ActionID != "" && r.actionID == a.ActionID {
			c.Records = append(c.Records, r.kind)
		} else {
			stray = append(stray, r.kind+"("+r.actionID+")")
		}
	}
	want := expectedRecords(a)
	if a.ActionID == "" && len(want) > 0 {
		c.Problems = append(c.Problems, fmt.Sprintf("the answer names no action_id, so its audit records cannot be found (the log gained %d: %s)", len(recs), strings.Join(stray, ", ")))
		return c
	}
	if !sameKinds(c.Records, want) {
		c.Problems = append(c.Problems, fmt.Sprintf("audit records of %s: %s, want %s", a.ActionID, list(c.Records), list(want)))
	}
	if len(stray) > 0 {
		c.Problems = append(c.Problems, "audit records naming another action: "+strings.Join(stray, ", "))
	}
	return c
}

// expectedRecords is what the audit log must gain for an answer.
func expectedRecords(a answer) []string {
	var out []string
	switch a.Flow {
	case previewRefused:
		// A refused preview mints nothing and runs nothing, and is
		// recorded as the same refusal anywhere else (SPEC 6: every
		// decision is a record).
	case tokenFlow, confirmedFlow:
		out = append(out, "trusted_token:minted")
		if a.Code == action.CodeStalePreview {
			out = append(out, "trusted_token:stale")
		}
		if a.Flow == confirmedFlow {
			out = append(out, "approval:approved")
		}
	}
	if a.Status == action.StatusNeedsConfirmation {
		// The approval it waits for is a record naming the action.
		out = append(out, "approval:requested")
	}
	out = append(out, "pre_action", "post_action")
	if a.Status == action.StatusError {
		out = append(out, "error")
	}
	return out
}

func sameKinds(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func list(k []string) string {
	if len(k) == 0 {
		return "none"
	}
	return strings.Join(k, ", ")
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// record is what the evaluation reads of one audit line: the action it
// names and its kind (the event type, or trusted_token:<event>).
type record struct {
	actionID string
	kind     string
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// readRecords reads the audit lines written after offset.
func readRecords(path string, offset int64) ([]record, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if int64(len(data)) < offset {
		return nil, fmt.Errorf("%s shrank", path)
	}
	var out []record
	for _, line := range strings.Split(strings.TrimSpace(string(data[offset:])), "\n") {
		if line == "" {
			continue
		}
		var l struct {
			Event struct {
				EventType string `json:"event_type"`
				Kind      string `json:"kind"`
				Event     string `json:"event"`
				ActionID  string `json:"action_id"`
				Payload   struct {
					ActionID string `json:"action_id"`
				} `json:"payload"`
			} `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return nil, fmt.Errorf("%s: a line is not JSON: %w", path, err)
		}
		r := record{actionID: l.Event.Payload.ActionID, kind: l.Event.EventType}
		if l.Event.Kind != "" {
			r = record{actionID: l.Event.ActionID, kind: l.Event.Kind + ":" + l.Event.Event}
		}
		out = append(out, r)
	}
	return out, nil
}

// decode reads an observation from JSON.
func decode(data []byte) (action.Observation, error) {
	var o action.Observation
	err := json.Unmarshal(data, &o)
	return o, err
}

// outcomeOf is the compared part of an observation.
func outcomeOf(o action.Observation) Outcome {
	out := Outcome{Status: o.Status, Code: o.Code}
	if o.Decision != nil {
		out.Step = o.Decision.Step
	}
	return out
}
