package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/harness-runtime/harness/policy"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
)

// openGovernance builds the Governor of harness.governance, its counters
// in the store of harness.trusted.store (memory, or the Redis every
// replica shares), and the observer the dispatcher tells of every
// observation: redaction first (harness.redact-observations), so that
// what is counted and recorded is what the model gets, then governance.
func (p *Pipeline) openGovernance(ctx context.Context, key []byte) (*policy.Governor, runtime.Observer, error) {
	cfg := p.Config
	opts := cfg.GovernanceOptions()
	opts.Logger = p.log
	if s := cfg.Harness.Trusted.Store; strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://") {
		rc, err := policy.OpenRedisCounters(ctx, s)
		if err != nil {
			return nil, nil, fmt.Errorf("harness.trusted.store: %w", err)
		}
		p.closers = append(p.closers, rc.Close)
		opts.Store = rc
	}
	gov, err := policy.NewGovernor(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("harness.governance: %w", err)
	}
	p.closers = append(p.closers, gov.Close)
	var obs runtime.Observers
	if cfg.Harness.RedactObservations != nil && *cfg.Harness.RedactObservations {
		// Whole: what the runtime already capped is the model's to see.
		s, err := sanitize.New(sanitize.Options{Key: key, MaxString: -1})
		if err != nil {
			return nil, nil, err
		}
		obs = append(obs, runtime.RedactObservations(s))
	}
	return gov, append(obs, gov), nil
}
