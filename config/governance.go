package config

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/harness-runtime/harness/policy"
)

// GovernanceConfig is harness.governance: the budgets of one session (the
// action's tenant and session_id, else its principal and tenant), each 0
// for no limit, and per-tenant overrides. See policy.Governor for what
// counts and the order in which halts decide.
type GovernanceConfig struct {
	MaxActions           *int64           `yaml:"max-actions,omitempty" validate:"omitempty,gte=0"`
	MaxErrors            *int64           `yaml:"max-errors,omitempty" validate:"omitempty,gte=0"`
	MaxConsecutiveErrors *int64           `yaml:"max-consecutive-errors,omitempty" validate:"omitempty,gte=0"`
	MaxRisk              *int64           `yaml:"max-risk,omitempty" validate:"omitempty,gte=0"`
	RiskWeights          map[string]int64 `yaml:"risk-weights,omitempty" validate:"dive,keys,oneof=read write exec network,endkeys,gte=0"`
	MaxWallSeconds       *int64           `yaml:"max-wall-seconds,omitempty" validate:"omitempty,gte=0"`
	MaxBytesWritten      *int64           `yaml:"max-bytes-written,omitempty" validate:"omitempty,gte=0"`
	// RepeatFailing: identical failing actions before repeated_action
	// (default 3); RepeatIdentical: identical actions that change or run
	// something, issued in a row (default 5).
	RepeatFailing   *int64     `yaml:"repeat-failing,omitempty" validate:"omitempty,gte=0"`
	RepeatIdentical *int64     `yaml:"repeat-identical,omitempty" validate:"omitempty,gte=0"`
	Rate            RateConfig `yaml:"rate,omitempty"`
	// Tenants override any of the keys above for one tenant's sessions.
	Tenants map[string]*TenantGovernance `yaml:"tenants" validate:"dive,keys,required,endkeys"`
}

// TenantGovernance is one tenant's overrides: the keys of
// harness.governance but tenants; a key not set keeps the global value.
type TenantGovernance struct {
	MaxActions           *int64           `yaml:"max-actions,omitempty" validate:"omitempty,gte=0"`
	MaxErrors            *int64           `yaml:"max-errors,omitempty" validate:"omitempty,gte=0"`
	MaxConsecutiveErrors *int64           `yaml:"max-consecutive-errors,omitempty" validate:"omitempty,gte=0"`
	MaxRisk              *int64           `yaml:"max-risk,omitempty" validate:"omitempty,gte=0"`
	RiskWeights          map[string]int64 `yaml:"risk-weights,omitempty" validate:"dive,keys,oneof=read write exec network,endkeys,gte=0"`
	MaxWallSeconds       *int64           `yaml:"max-wall-seconds,omitempty" validate:"omitempty,gte=0"`
	MaxBytesWritten      *int64           `yaml:"max-bytes-written,omitempty" validate:"omitempty,gte=0"`
	RepeatFailing        *int64           `yaml:"repeat-failing,omitempty" validate:"omitempty,gte=0"`
	RepeatIdentical      *int64           `yaml:"repeat-identical,omitempty" validate:"omitempty,gte=0"`
	Rate                 RateConfig       `yaml:"rate,omitempty"`
}

// RateConfig is harness.governance.rate: token buckets in actions per
// second (0: none), each holding a second's worth (at least one).
type RateConfig struct {
	SessionPerSecond *float64 `yaml:"session-per-second,omitempty" validate:"omitempty,gte=0,lte=1000000"`
	TenantPerSecond  *float64 `yaml:"tenant-per-second,omitempty" validate:"omitempty,gte=0,lte=1000000"`
}

// Defaults of harness.governance (SPEC section 3).
const (
	DefaultRepeatFailing   = policy.DefaultRepeatFailing
	DefaultRepeatIdentical = policy.DefaultRepeatIdentical
)

func setInt(p **int64, v int64) {
	if *p == nil {
		*p = &v
	}
}

func setFloat(p **float64, v float64) {
	if *p == nil {
		*p = &v
	}
}

// resolve fills every unset global key with its default; a tenant's
// unset keys stay unset (they take the global value).
func (g *GovernanceConfig) resolve() {
	for _, p := range []**int64{&g.MaxActions, &g.MaxErrors, &g.MaxConsecutiveErrors, &g.MaxRisk, &g.MaxWallSeconds, &g.MaxBytesWritten} {
		setInt(p, 0)
	}
	setInt(&g.RepeatFailing, DefaultRepeatFailing)
	setInt(&g.RepeatIdentical, DefaultRepeatIdentical)
	w := maps.Clone(policy.DefaultRiskWeights)
	maps.Copy(w, g.RiskWeights)
	g.RiskWeights = w
	setFloat(&g.Rate.SessionPerSecond, 0)
	setFloat(&g.Rate.TenantPerSecond, 0)
	if g.Tenants == nil {
		g.Tenants = map[string]*TenantGovernance{}
	}
}

// GovernanceOptions returns the governance of a resolved configuration:
// the global limits and, per tenant, the global limits with the tenant's
// overrides.
func (c *Config) GovernanceOptions() policy.GovernanceOptions {
	g := c.Harness.Governance
	base := policy.Limits{
		MaxActions: deref(g.MaxActions), MaxErrors: deref(g.MaxErrors), MaxConsecutiveErrors: deref(g.MaxConsecutiveErrors),
		MaxRisk: deref(g.MaxRisk), RiskWeights: maps.Clone(g.RiskWeights),
		MaxWall: time.Duration(deref(g.MaxWallSeconds)) * time.Second, MaxBytesWritten: deref(g.MaxBytesWritten),
		RepeatFailing: deref(g.RepeatFailing), RepeatIdentical: deref(g.RepeatIdentical),
		SessionRate: derefF(g.Rate.SessionPerSecond), TenantRate: derefF(g.Rate.TenantPerSecond),
	}
	opts := policy.GovernanceOptions{Limits: base}
	for name, t := range g.Tenants {
		if t == nil {
			continue
		}
		l := base
		l.RiskWeights = maps.Clone(base.RiskWeights)
		if l.RiskWeights == nil {
			l.RiskWeights = maps.Clone(policy.DefaultRiskWeights)
		}
		maps.Copy(l.RiskWeights, t.RiskWeights)
		over := func(dst *int64, v *int64) {
			if v != nil {
				*dst = *v
			}
		}
		over(&l.MaxActions, t.MaxActions)
		over(&l.MaxErrors, t.MaxErrors)
		over(&l.MaxConsecutiveErrors, t.MaxConsecutiveErrors)
		over(&l.MaxRisk, t.MaxRisk)
		over(&l.MaxBytesWritten, t.MaxBytesWritten)
		over(&l.RepeatFailing, t.RepeatFailing)
		over(&l.RepeatIdentical, t.RepeatIdentical)
		if t.MaxWallSeconds != nil {
			l.MaxWall = time.Duration(*t.MaxWallSeconds) * time.Second
		}
		if t.Rate.SessionPerSecond != nil {
			l.SessionRate = *t.Rate.SessionPerSecond
		}
		if t.Rate.TenantPerSecond != nil {
			l.TenantRate = *t.Rate.TenantPerSecond
		}
		if opts.Tenants == nil {
			opts.Tenants = map[string]policy.Limits{}
		}
		opts.Tenants[name] = l
	}
	return opts
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func derefF(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// governanceTightens is the rule for harness.governance in a
// configuration found in the workspace root: it may set limits where the
// defaults have none and lower the defaults it has (repeat-failing at most
// 3, repeat-identical at most 5, neither 0, which turns the check off;
// risk weights at least the defaults), for every tenant alike. Values of
// the wrong type are left to the full parse, which names their line.
func governanceTightens(v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	var why []string
	check := func(prefix string, m map[string]any) {
		for k, val := range m {
			n, isNum := number(val)
			switch k {
			case "repeat-failing", "repeat-identical":
				limit := float64(DefaultRepeatFailing)
				if k == "repeat-identical" {
					limit = DefaultRepeatIdentical
				}
				if isNum && (n < 1 || n > limit) {
					why = append(why, fmt.Sprintf("%s%s may only be between 1 and %g (the default), not %v", prefix, k, limit, val))
				}
			case "risk-weights":
				ws, _ := val.(map[string]any)
				for class, w := range ws {
					if n, ok := number(w); ok && n < float64(policy.DefaultRiskWeights[class]) {
						why = append(why, fmt.Sprintf("%srisk-weights.%s may only be raised above %d, not %v", prefix, class, policy.DefaultRiskWeights[class], w))
					}
				}
			}
		}
	}
	check("", m)
	if ts, ok := m["tenants"].(map[string]any); ok {
		for name, t := range ts {
			if tm, ok := t.(map[string]any); ok {
				check("tenants."+name+".", tm)
			}
		}
	}
	if len(why) == 0 {
		return ""
	}
	sort.Strings(why)
	return strings.Join(why, "; ")
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}
