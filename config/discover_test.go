package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiscoveryOrder: --config, else $HARNESS_CONFIG, else
// .harness/config.yaml under the workspace root, else the user's
// config directory, else the embedded defaults (SPEC 3, Discovery). Each
// place holds a file that disables a different action, so the loaded
// configuration says which one was read.
func TestDiscoveryOrder(t *testing.T) {
	type places struct{ flag, env, root, cwd, xdg, home bool }
	cases := []struct {
		name      string
		have      places
		rootFlag  bool // pass the root as --root (else: run in it)
		rootEnv   bool // name the root with $HARNESS_WORKSPACE_ROOT
		xdgUnset  bool
		want      string // the disabled action of the file read ("" for defaults)
		wantVia   string
		wantInDir string // the file's directory, relative to the test's
	}{
		{"--config beats everything", places{true, true, true, true, true, true}, true, false, false, "flag", ViaFlag, ""},
		{"$HARNESS_CONFIG beats the files found", places{false, true, true, true, true, true}, true, false, false, "env", ViaEnv, ""},
		{"the --root directory's .harness/config.yaml", places{false, false, true, true, true, true}, true, false, false, "root", ViaWorkspace, "root/.harness"},
		{"without --root, the current directory's", places{false, false, true, true, true, true}, false, false, false, "cwd", ViaWorkspace, "cwd/.harness"},
		{"without --root, $HARNESS_WORKSPACE_ROOT's", places{false, false, true, true, true, true}, false, true, false, "root", ViaWorkspace, "root/.harness"},
		{"the user's config directory ($XDG_CONFIG_HOME)", places{false, false, false, false, true, true}, true, false, false, "xdg", ViaUser, "xdg/harness"},
		{"the user's config directory (~/.config)", places{false, false, false, false, true, true}, true, false, true, "home", ViaUser, "home/.config/harness"},
		{"nothing: the embedded defaults", places{}, true, false, false, "", ViaDefaults, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(rel, action string) string {
				p := filepath.Join(dir, rel)
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				require.NoError(t, os.WriteFile(p, []byte("harness:\n  disabled-actions: [workspace_run_shell]\n  tenant-allowed-actions: {"+action+": []}\n"), 0o600))
				return p
			}
			for _, d := range []string{"root", "cwd", "xdg", "home"} {
				require.NoError(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
			}
			var flag string
			if tc.have.flag {
				flag = write("flag.yaml", "flag")
			}
			t.Setenv("HARNESS_CONFIG", "")
			if tc.have.env {
				t.Setenv("HARNESS_CONFIG", write("env.yaml", "env"))
			}
			if tc.have.root {
				write("root/.harness/config.yaml", "root")
			}
			if tc.have.cwd {
				write("cwd/.harness/config.yaml", "cwd")
			}
			if tc.have.xdg {
				write("xdg/harness/config.yaml", "xdg")
			}
			if tc.have.home {
				write("home/.config/harness/config.yaml", "home")
			}
			t.Setenv("HOME", filepath.Join(dir, "home"))
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
			if tc.xdgUnset {
				t.Setenv("XDG_CONFIG_HOME", "")
			}
			t.Setenv("HARNESS_WORKSPACE_ROOT", "")
			t.Chdir(filepath.Join(dir, "cwd"))
			root := filepath.Join(dir, "root")
			if tc.rootEnv {
				t.Setenv("HARNESS_WORKSPACE_ROOT", root)
			}
			if !tc.rootFlag {
				root = ""
			}

			c, err := Load(flag, root)
			require.NoError(t, err)
			var got string
			for k := range c.Harness.TenantAllowedActions {
				got = k
			}
			assert.Equal(t, tc.want, got, "read the wrong file")
			assert.Equal(t, tc.wantVia, c.Source.Via)
			if tc.wantInDir != "" {
				assert.Equal(t, filepath.Join(dir, tc.wantInDir, "config.yaml"), c.Source.Path, "a found file is named by its absolute path")
				assert.Contains(t, c.Source.String(), "(found in ")
			}
			if tc.want == "" {
				assert.Equal(t, "embedded defaults", c.Source.String())
				assert.Equal(t, Default().Harness.Workspace, c.Harness.Workspace)
			}
		})
	}
}

// A file that is chosen is read or refused; discovery never falls back
// past it to the next place.
func TestDiscoveryNeverSkipsAChosenFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HARNESS_CONFIG", "")
	t.Setenv("HARNESS_WORKSPACE_ROOT", "")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "harness"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "harness", "config.yaml"), []byte("harness: {}\n"), 0o600))

	_, err := Load(filepath.Join(dir, "missing.yaml"), dir)
	var ce *ConfigError
	require.True(t, errors.As(err, &ce), "a missing --config file fell back: %v", err)
	assert.Contains(t, err.Error(), "missing.yaml: 1 problem(s):\n  cannot read: ")

	t.Setenv("HARNESS_CONFIG", filepath.Join(dir, "gone.yaml"))
	_, err = Load("", dir)
	require.Error(t, err, "a missing $HARNESS_CONFIG file fell back")
	assert.Contains(t, err.Error(), "gone.yaml")
	t.Setenv("HARNESS_CONFIG", "")

	// .harness/config.yaml that is not a file is an error, not absent.
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "root", ".harness", "config.yaml"), 0o755))
	_, err = Load("", filepath.Join(dir, "root"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join("root", ".harness", "config.yaml"))

	// A bad file found by discovery is named in the problems.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "harness", "config.yaml"), []byte("harness:\n  disabled-actions: [workspace_serch_text]\n"), 0o600))
	_, err = Load("", filepath.Join(dir, "elsewhere"))
	require.Error(t, err)
	assert.Equal(t, "config "+filepath.Join(dir, "harness", "config.yaml")+": 1 problem(s):\n  line 2: harness.disabled-actions[0]: \"workspace_serch_text\" is not a registered action; did you mean workspace_search_text?", err.Error())
}

// The environment's overrides apply to a discovered file and to the
// embedded defaults alike, and a bad one is named by its variable.
func TestEnvironmentOverridesApplyAfterDiscovery(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HARNESS_CONFIG", "")
	t.Setenv("HARNESS_PROFILE", "production")
	c, err := Load("", dir)
	require.NoError(t, err)
	assert.Equal(t, "production", c.Harness.Profile)
	assert.False(t, Bool(c.Harness.Workspace.WriteEnabled))

	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".harness"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".harness", "config.yaml"), []byte("harness:\n  disabled-actions: [workspace_search_text]\n"), 0o600))
	c, err = Load("", dir)
	require.NoError(t, err)
	assert.Equal(t, "production", c.Harness.Profile)
	assert.Equal(t, ViaWorkspace, c.Source.Via)

	t.Setenv("HARNESS_PROFILE", "staging")
	_, err = Load("", filepath.Join(dir, "none"))
	require.Error(t, err)
	assert.Equal(t, "config embedded defaults: 1 problem(s):\n  $HARNESS_PROFILE: harness.profile: \"staging\" is not one of: dev production", err.Error())
}
