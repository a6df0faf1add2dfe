package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedactedHidesSecretsAndKeepsTheRest(t *testing.T) {
	const hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	c, err := Parse("c.yaml", []byte(`harness:
  trusted: {store: "redis://:s3cret-pw@cache:6379/0"}
  audit: {path: "postgres://harness:pg-pass@db/audit?sslmode=disable&password=qs-pass"}
  auth:
    keys: [{principal: alice, sha256: `+hash+`, permissions: [agent:execute]}]
  mcp:
    servers:
      a:
        command: [srv, --api-key, sk-live-1, --token=tok-2, --verbose, plain]
        env: {API_KEY: literal-key, FROM_ENV: "${TOKEN}", TWO: "${A}${B}", MIXED: "Bearer ${T}"}
      b: {url: "https://u:url-pw@mcp.example/mcp?access_token=at-3&page=1"}
`))
	require.NoError(t, err)
	r := c.Redacted()
	out, err := r.YAML()
	require.NoError(t, err)
	text := string(out)
	for _, secret := range []string{"s3cret-pw", "pg-pass", "qs-pass", "sk-live-1", "tok-2", "literal-key", "url-pw", "at-3", "Bearer"} {
		assert.NotContains(t, text, secret)
	}
	for _, shown := range []string{hash, "redis://:***@cache:6379/0", "postgres://harness:***@db/audit?sslmode=disable&password=***",
		"--api-key, '***', --token=***, --verbose, plain", "FROM_ENV: ${TOKEN}", "TWO: ${A}${B}", "API_KEY: '***'", "MIXED: '***'",
		"https://u:***@mcp.example/mcp?access_token=***&page=1"} {
		assert.Contains(t, text, shown)
	}
	assert.Equal(t, "literal-key", c.Harness.MCP.Servers["a"].Env["API_KEY"], "Redacted changed the configuration it copied")
	assert.Equal(t, "sk-live-1", c.Harness.MCP.Servers["a"].Command[2])
	assert.Contains(t, c.Harness.Trusted.Store, "s3cret-pw")
}

// The effective settings are themselves a configuration: read back, they
// give the same settings.
func TestYAMLReadsBack(t *testing.T) {
	for _, profile := range []string{"dev", "production"} {
		c, err := Parse("c.yaml", []byte("harness:\n  profile: "+profile+"\n  tenant-allowed-actions: {acme: [workspace_read_file]}\n"))
		require.NoError(t, err)
		out, err := c.YAML()
		require.NoError(t, err)
		assert.Contains(t, string(out), "  allowed-commands: [pwd, ls, rg, git, go, make]\n")
		back, err := Parse("back.yaml", out)
		require.NoError(t, err, "%s", out)
		again, err := back.YAML()
		require.NoError(t, err)
		assert.Equal(t, string(out), string(again))
		assert.True(t, strings.HasPrefix(string(out), "harness:\n  profile: "+profile+"\n"))
	}
}
