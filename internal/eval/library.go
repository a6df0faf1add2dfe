package eval

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/schema"
	"github.com/harness-runtime/harness/trusted"
)

// builtinName is the builtin tool the library side registers.
const builtinName = "eval_echo"

type echoIn struct {
	Text string `json:"text" desc:"text to echo"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// libraryPrincipal is who the library's trusted flow runs for.
var libraryPrincipal = trusted.Principal{Name: "eval"}

// openPipeline builds the pipeline of a site's configuration file, as a
// library user does, with the builtin tool registered.
func openPipeline(ctx context.Context, opts Options, s site) (*pipeline.Pipeline, error) {
	cfg, err := config.LoadFile(s.config)
	if err != nil {
		return nil, err
	}
	p, err := pipeline.Open(ctx, cfg, pipeline.Options{HelperPath: opts.SandboxHelper, Trusted: true})
	if err != nil {
		return nil, err
	}
	err = runtime.RegisterFunc(p.Harness, runtime.Spec{
		Name: builtinName, Description: "Echo a text (the evaluation's builtin tool).", Risk: schema.RiskRead,
	}, func(_ context.Context, in echoIn) (echoOut, error) { return echoOut{Echo: in.Text}, nil })
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// pipelines opens one pipeline per variant, on first use.
type pipelines struct {
	opts Options
	open map[Variant]*pipeline.Pipeline
}

func (ps *pipelines) get(ctx context.Context, v Variant, s site) (*pipeline.Pipeline, error) {
	if p := ps.open[v]; p != nil {
		return p, nil
	}
	p, err := openPipeline(ctx, ps.opts, s)
	if err != nil {
		return nil, err
	}
	if ps.open == nil {
		ps.open = map[Variant]*pipeline.Pipeline{}
	}
	ps.open[v] = p
	return p, nil
}

func (ps *pipelines) close() error {
	var first error
	for _, p := range ps.open {
		if err := p.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// libraryDriver is the Go library: Harness.Execute, with Action.Trusted
// set by the program for trusted scenarios, and the pipeline's trusted
// service for the preview -> execute flow.
type libraryDriver struct {
	ps pipelines
}

func (d *libraryDriver) run(ctx context.Context, sc Scenario, s site) (answer, error) {
	p, err := d.ps.get(ctx, sc.Variant, s)
	if err != nil {
		return answer{}, err
	}
	in, err := inputOf(sc)
	if err != nil {
		return answer{}, err
	}
	a := action.Action{Name: sc.Action, Input: in, Tenant: sc.Tenant}
	if !sc.Stale {
		a.Trusted = sc.Trusted
		return observed(p.Harness.Execute(ctx, a), direct), nil
	}
	pr, err := p.Trusted.Preview(ctx, libraryPrincipal, a)
	if err != nil {
		return refusedBy(err, previewRefused, ""), nil
	}
	if err := s.makeStale(); err != nil {
		return answer{}, err
	}
	id := tokenActionID(pr.Token)
	obs, err := p.Trusted.Execute(ctx, libraryPrincipal, pr.Token)
	if obs.Action == "" && err != nil {
		return refusedBy(err, tokenFlow, id), nil
	}
	a2 := observed(obs, tokenFlow)
	if a2.ActionID != id {
		a2.Problems = append(a2.Problems, fmt.Sprintf("the run's action_id is %q, the token's records name %q", a2.ActionID, id))
	}
	return a2, nil
}

func (d *libraryDriver) close() error { return d.ps.close() }

// inputOf decodes a scenario's input.
func inputOf(sc Scenario) (map[string]any, error) {
	var in map[string]any
	if err := json.Unmarshal([]byte(sc.Input), &in); err != nil {
		return nil, fmt.Errorf("scenario %q: input: %w", sc.Name, err)
	}
	return in, nil
}

// observed is the answer of an observation.
func observed(o action.Observation, f flow) answer {
	return answer{Outcome: outcomeOf(o), Message: o.Message, ActionID: o.ActionID, Flow: f}
}

// refusedBy is the answer of an *action.Error (a refused preview or
// redeem): no observation, so no decision step.
func refusedBy(err error, f flow, id string) answer {
	c := action.CodeOf(err)
	return answer{Outcome: Outcome{Status: c.Status(), Code: c}, Message: action.MessageOf(err), Flow: f, ActionID: id}
}

// tokenActionID is the action_id a token's records and its run carry.
func tokenActionID(token string) string {
	if token == "" {
		return ""
	}
	return "tok-" + trusted.TokenID(token)[:16]
}
