package config

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const exampleFile = "../examples/harness.yaml"

// TestExampleConfigHasEveryKeyAndTheDefaults keeps examples/harness.yaml
// true: it loads without a problem, holds every key of Config (a key added
// to the struct fails this test until the example shows it), and its
// values are the defaults (the illustrative MCP servers and auth key
// aside, which are switched off and unusable).
func TestExampleConfigHasEveryKeyAndTheDefaults(t *testing.T) {
	for _, k := range []string{"HARNESS_PROFILE", "HARNESS_WORKSPACE_ROOT", "HARNESS_AUDIT_PATH", "HARNESS_TRUSTED_STORE"} {
		t.Setenv(k, "")
	}
	c, err := LoadFile(exampleFile)
	require.NoError(t, err)

	data, err := os.ReadFile(exampleFile)
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(data, &doc))
	missing := missingKeys(reflect.TypeFor[Config](), []*yaml.Node{doc.Content[0]}, "")
	assert.Empty(t, missing, "keys of Config that %s does not show", exampleFile)

	for name, s := range c.Harness.MCP.Servers {
		assert.False(t, Bool(s.Enabled), "example server %s is switched on", name)
	}
	for _, k := range c.Harness.Auth.Keys {
		assert.Equal(t, "0000000000000000000000000000000000000000000000000000000000000000", k.SHA256, "an example key someone could hold the token of")
	}
	c.Harness.MCP.Servers, c.Harness.Auth.Keys = nil, nil
	got, err := c.YAML()
	require.NoError(t, err)
	want, err := Default().YAML()
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "the example's values are not the defaults")

	// Switched to production, a copy of the example follows the profile.
	require.Contains(t, string(data), "\n  profile: dev\n")
	prod, err := Parse("prod.yaml", []byte(strings.Replace(string(data), "\n  profile: dev\n", "\n  profile: production\n", 1)))
	require.NoError(t, err)
	h := prod.Harness
	assert.False(t, Bool(h.TrustedRuntimeEnabled) || Bool(h.Workspace.WriteEnabled) || Bool(h.Workspace.ShellEnabled))
	assert.Empty(t, h.AutoApprovedActions)
	assert.Equal(t, "required", h.Workspace.Sandbox)
}

// missingKeys lists the keys of struct type t that none of the mappings
// ms holds, looking inside mappings of names and lists of mappings too:
// each key must appear in at least one of their entries.
func missingKeys(t reflect.Type, ms []*yaml.Node, path string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name := yamlName(f)
		if name == "" {
			continue
		}
		var vals []*yaml.Node
		for _, m := range ms {
			for j := 0; j+1 < len(m.Content); j += 2 {
				if m.Content[j].Value == name {
					vals = append(vals, m.Content[j+1])
				}
			}
		}
		p := join(path, name)
		if len(vals) == 0 {
			out = append(out, p)
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft.Kind() == reflect.Struct:
			out = append(out, missingKeys(ft, vals, p)...)
		case (ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice) && ft.Elem().Kind() == reflect.Struct:
			var entries []*yaml.Node
			for _, v := range vals {
				if v.Kind == yaml.MappingNode && ft.Kind() == reflect.Map {
					for j := 1; j < len(v.Content); j += 2 {
						entries = append(entries, v.Content[j])
					}
				}
				if v.Kind == yaml.SequenceNode && ft.Kind() == reflect.Slice {
					entries = append(entries, v.Content...)
				}
			}
			if len(entries) == 0 {
				out = append(out, p+" (an entry showing its keys)")
				continue
			}
			out = append(out, missingKeys(ft.Elem(), entries, p+"[…]")...)
		}
	}
	return out
}
