package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAHPSupervisorConfig(t *testing.T) {
	ok := []string{
		"transport: stdio\n      command: [python3, h.py]",
		"transport: http\n      url: https://policy.example/ahp",
		"transport: ws\n      url: ws://127.0.0.1:9000/ahp",
		"transport: unix\n      socket: /run/ahp.sock",
		"transport: \"\"",
	}
	for _, sup := range ok {
		c, err := Parse("a.yaml", []byte("harness:\n  ahp:\n    supervisor:\n      "+sup+"\n"))
		require.NoError(t, err, sup)
		assert.Equal(t, DefaultAHPTimeoutMS, c.Harness.AHP.Supervisor.TimeoutMS)
		assert.Equal(t, "deny", c.Harness.AHP.Serve.UnknownTools)
	}
	bad := []struct{ sup, want string }{
		{"transport: stdio", "harness.ahp.supervisor.command"},
		{"transport: http\n      url: ws://h/ahp", "harness.ahp.supervisor.url"},
		{"transport: ws\n      url: http://h/ahp", "harness.ahp.supervisor.url"},
		{"transport: http\n      url: /ahp", "harness.ahp.supervisor.url"},
		{"transport: unix", "harness.ahp.supervisor.socket"},
		{"transport: grpc\n      url: http://h/", "harness.ahp.supervisor.transport"},
		{"url: http://h/ahp", "set transport"},
		{"transport: stdio\n      command: [x]\n      socket: /s", "not several"},
		{"transport: stdio\n      command: [x]\n      timeout-ms: -1", "harness.ahp.supervisor.timeout-ms"},
	}
	for _, tc := range bad {
		_, err := Parse("a.yaml", []byte("harness:\n  ahp:\n    supervisor:\n      "+tc.sup+"\n"))
		require.Error(t, err, tc.sup)
		assert.Contains(t, err.Error(), tc.want, tc.sup)
		assert.Contains(t, err.Error(), "a.yaml:", "the problem names the file and line")
	}
	_, err := Parse("a.yaml", []byte("harness:\n  ahp:\n    serve:\n      unknown-tools: maybe\n"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "unknown-tools")
}

func TestAHPSupervisorKeyHiddenInShow(t *testing.T) {
	t.Setenv("AHP_TEST_KEY", "s3cr3t")
	c, err := Parse("a.yaml", []byte("harness:\n  ahp:\n    supervisor:\n      transport: http\n      url: https://u:pw@h/ahp\n      api-key: literal-key\n"))
	require.NoError(t, err)
	y, err := c.Redacted().YAML()
	require.NoError(t, err)
	assert.NotContains(t, string(y), "literal-key")
	assert.NotContains(t, string(y), ":pw@")
	assert.Equal(t, "literal-key", c.Harness.AHP.Supervisor.Key(), "the original is untouched")
	c, err = Parse("a.yaml", []byte("harness:\n  ahp:\n    supervisor:\n      transport: http\n      url: https://h/ahp\n      api-key: ${AHP_TEST_KEY}\n"))
	require.NoError(t, err)
	assert.Equal(t, "s3cr3t", c.Harness.AHP.Supervisor.Key())
	y, _ = c.Redacted().YAML()
	assert.Contains(t, string(y), "${AHP_TEST_KEY}", "a reference names the secret without holding it")
}
