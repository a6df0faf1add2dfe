package mcp

import (
	"slices"
	"strings"
	"testing"
)

func TestChildEnvKeepsSecretsOutAndAddsConfigured(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "do-not-pass")
	t.Setenv("HARNESS_TEST_TOKEN", "tok-123")
	t.Setenv("LANG", "C.UTF-8")
	env := childEnv(map[string]string{"API_TOKEN": "${HARNESS_TEST_TOKEN}", "LANG": "fr_FR.UTF-8", "MODE": "ro"})
	joined := strings.Join(env, "\n")
	if strings.Contains(joined, "do-not-pass") {
		t.Fatalf("an unlisted variable reached the server: %v", env)
	}
	for _, want := range []string{"API_TOKEN=tok-123", "LANG=fr_FR.UTF-8", "MODE=ro"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %s: %v", want, env)
		}
	}
	if slices.Contains(env, "LANG=C.UTF-8") {
		t.Errorf("configured LANG did not replace the inherited one: %v", env)
	}
	if base := childEnv(nil); slices.ContainsFunc(base, func(s string) bool { return strings.HasPrefix(s, "HARNESS_TEST_TOKEN=") }) {
		t.Errorf("unconfigured variable passed: %v", base)
	}
}
