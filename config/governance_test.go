package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/policy"
)

func TestGovernanceDefaultsAndRedactionFollowTheProfile(t *testing.T) {
	dev := Default()
	o := dev.GovernanceOptions()
	assert.Equal(t, policy.Limits{RepeatFailing: 3, RepeatIdentical: 5, RiskWeights: policy.DefaultRiskWeights}, o.Limits)
	assert.Empty(t, o.Tenants)
	assert.False(t, Bool(dev.Harness.RedactObservations), "dev redacts observations by default")

	prod, err := Parse("p.yaml", []byte("harness: {profile: production}\n"))
	require.NoError(t, err)
	assert.True(t, Bool(prod.Harness.RedactObservations), "production does not redact observations by default")
	off, err := Parse("p.yaml", []byte("harness: {profile: production, redact-observations: false}\n"))
	require.NoError(t, err)
	assert.False(t, Bool(off.Harness.RedactObservations))
}

func TestGovernanceTenantsOverrideTheGlobalKeys(t *testing.T) {
	c, err := Parse("g.yaml", []byte(`harness:
  governance:
    max-actions: 100
    max-wall-seconds: 60
    repeat-failing: 2
    risk-weights: {exec: 20}
    rate: {session-per-second: 5}
    tenants:
      acme:
        max-actions: 10
        risk-weights: {read: 2}
        rate: {tenant-per-second: 50}
      open:
        repeat-identical: 0
`))
	require.NoError(t, err)
	o := c.GovernanceOptions()
	weights := map[string]int64{"read": 1, "write": 5, "exec": 20, "network": 10}
	assert.Equal(t, policy.Limits{MaxActions: 100, MaxWall: time.Minute, RepeatFailing: 2, RepeatIdentical: 5, RiskWeights: weights, SessionRate: 5}, o.Limits)
	acme := o.Limits
	acme.MaxActions, acme.TenantRate = 10, 50
	acme.RiskWeights = map[string]int64{"read": 2, "write": 5, "exec": 20, "network": 10}
	assert.Equal(t, acme, o.Tenants["acme"])
	open := o.Limits
	open.RepeatIdentical = 0
	assert.Equal(t, open, o.Tenants["open"])
	assert.Equal(t, int64(1), o.Limits.RiskWeights["read"], "a tenant's weights leaked into the global ones")
}

func TestGovernanceProblemsNameTheirLine(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"negative budget", "harness:\n  governance:\n    max-actions: -1\n", "line 3: harness.governance.max-actions: must be at least 0"},
		{"unknown risk class", "harness:\n  governance:\n    risk-weights: {danger: 3}\n", "harness.governance.risk-weights"},
		{"negative rate", "harness:\n  governance:\n    rate: {session-per-second: -2}\n", "line 3: harness.governance.rate.session-per-second: must be at least 0"},
		{"tenants inside a tenant", "harness:\n  governance:\n    tenants:\n      acme:\n        tenants: {}\n", "line 5: harness.governance.tenants.acme.tenants: unknown key"},
		{"a misspelt key", "harness:\n  governance:\n    max-action: 3\n", "line 3: harness.governance.max-action: unknown key; did you mean max-actions?"},
		{"not a number", "harness:\n  governance:\n    tenants:\n      acme: {max-errors: many}\n", `line 4: harness.governance.tenants.acme.max-errors: must be a whole number, not "many"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("g.yaml", []byte(tc.yaml))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// A repository's own .harness/config.yaml may add or lower limits, never
// lift them or turn a check off.
func TestWorkspaceGovernanceMayOnlyTighten(t *testing.T) {
	cases := []struct{ name, yaml, want string }{
		{"budgets where there were none", "harness:\n  governance: {max-actions: 50, max-risk: 100, rate: {session-per-second: 2}}\n", ""},
		{"fewer repeats", "harness:\n  governance: {repeat-failing: 2, repeat-identical: 4}\n", ""},
		{"heavier weights", "harness:\n  governance: {risk-weights: {exec: 50}}\n", ""},
		{"a tenant tightened", "harness:\n  governance: {tenants: {acme: {max-actions: 5, repeat-failing: 1}}}\n", ""},
		{"redaction on", "harness:\n  redact-observations: true\n", ""},
		{"repeats turned off", "harness:\n  governance: {repeat-failing: 0}\n", "repeat-failing may only be between 1 and 3"},
		{"more repeats", "harness:\n  governance: {repeat-identical: 50}\n", "repeat-identical may only be between 1 and 5"},
		{"lighter weights", "harness:\n  governance: {risk-weights: {exec: 1}}\n", "risk-weights.exec may only be raised"},
		{"a tenant loosened", "harness:\n  governance: {tenants: {acme: {repeat-failing: 9}}}\n", "tenants.acme.repeat-failing"},
		{"redaction off", "harness:\n  redact-observations: false\n", "harness.redact-observations"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			t.Setenv("HARNESS_CONFIG", "")
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			require.NoError(t, os.MkdirAll(filepath.Join(root, ".harness"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, WorkspaceFile), []byte(tc.yaml), 0o644))
			_, err := Load("", root)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.Contains(err.Error(), tc.want) && strings.Contains(err.Error(), "inside the workspace"), "%v", err)
		})
	}
}
