package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestApprovalsDefaultsAndBounds(t *testing.T) {
	c, err := Parse("h.yaml", []byte("harness:\n  approvals: {}\n"))
	require.NoError(t, err)
	a := c.Harness.Approvals
	require.Equal(t, DefaultApprovalTTLSeconds, a.TTLSeconds)
	require.Equal(t, DefaultSessionScopeSeconds, a.SessionScopeSeconds)
	require.Equal(t, DefaultMaxApprovals, a.MaxApprovals)
	require.False(t, a.AllowSelfApproval)

	for name, y := range map[string]string{
		"negative ttl":      "harness:\n  approvals: {ttl-seconds: -1}\n",
		"ttl beyond a week": "harness:\n  approvals: {ttl-seconds: 604801}\n",
		"notify-url":        "harness:\n  approvals: {notify-url: not a url}\n",
		"unknown key":       "harness:\n  approvals: {ttl: 5}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("h.yaml", []byte(y))
			require.Error(t, err)
		})
	}
}

// TestApprovalsNotifyURLIsHiddenWhenShown: a hook commonly holds its
// secret in the path, so config check shows its scheme and host only.
func TestApprovalsNotifyURLIsHiddenWhenShown(t *testing.T) {
	for in, want := range map[string]string{
		"https://hooks.example/services/T0/B0/XyZsecret": "https://hooks.example/" + Hidden,
		"https://hooks.example":                          "https://hooks.example",
		"https://user:pw@hooks.example":                  "https://hooks.example/" + Hidden,
		"":                                               "",
	} {
		require.Equal(t, want, redactHook(in), in)
	}
	c, err := Parse("h.yaml", []byte("harness:\n  approvals: {notify-url: \"https://hooks.example/services/XyZsecret\"}\n"))
	require.NoError(t, err)
	require.NotContains(t, c.Redacted().Harness.Approvals.NotifyURL, "XyZsecret")
}
