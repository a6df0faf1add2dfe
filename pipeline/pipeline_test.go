package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/pipeline"
)

// home gives the test a home, state and config directory of its own.
func home(t *testing.T) string {
	return testkit.Home(t)
}

func TestOpenOnDefaultsWritesNothingInTheRootAndKeysTheChain(t *testing.T) {
	h := home(t)
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644)
	cfg := config.Default()
	cfg.Harness.Workspace.Root = root
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a.txt"}, Trusted: true})
	if obs.Status != action.StatusOK {
		t.Fatalf("%s", obs.JSON())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Fatalf("the root holds %v; Harness's own files belong elsewhere", entries)
	}
	log, err := os.ReadFile(filepath.Join(h, "state", "harness", "audit.jsonl"))
	if err != nil {
		t.Fatalf("the audit log is not in the state directory: %v", err)
	}
	if !strings.Contains(string(log), `"key_id"`) {
		t.Fatalf("the audit chain is not keyed: %.200s", log)
	}
	if _, err := os.Stat(filepath.Join(h, "config", "harness", "hmac.key")); err != nil {
		t.Fatalf("the key is not in the config directory: %v", err)
	}
}

func TestOpenRefusesHarnessFilesInsideTheRoot(t *testing.T) {
	home(t)
	root := t.TempDir()
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	outside := t.TempDir()
	os.Symlink(root, filepath.Join(outside, "via-link"))
	cases := []struct {
		name string
		set  func(c *config.Config)
		want string
	}{
		{"audit log in the root", func(c *config.Config) { c.Harness.Audit.Path = filepath.Join(root, "audit.jsonl") }, "harness.audit.path"},
		{"audit log in a subdirectory", func(c *config.Config) { c.Harness.Audit.Path = filepath.Join(root, "sub", "a.jsonl") }, "harness.audit.path"},
		{"audit log through a link into the root", func(c *config.Config) { c.Harness.Audit.Path = filepath.Join(outside, "via-link", "a.jsonl") }, "harness.audit.path"},
		{"key in the root", func(c *config.Config) { c.Harness.Sanitize.KeyPath = filepath.Join(root, ".harness-hmac.key") }, "harness.sanitize.key-path"},
		{"key through a link into the root", func(c *config.Config) { c.Harness.Sanitize.KeyPath = filepath.Join(outside, "via-link", "k") }, "harness.sanitize.key-path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Harness.Workspace.Root = root
			c.set(cfg)
			p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
			if err == nil {
				p.Close()
				t.Fatal("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not name %s", err, c.want)
			}
			entries, _ := os.ReadDir(root)
			if len(entries) != 1 {
				t.Fatalf("a refused start wrote into the root: %v", entries)
			}
		})
	}
}

// An input nested deeper than the audit log's canonical form allows is
// still recorded (its deep part replaced by a marker) and refused as
// invalid, whatever the depth up to the JSON decoder's own limit.
func TestDeeplyNestedInputIsAuditedAndRefused(t *testing.T) {
	h := home(t)
	cfg := config.Default()
	cfg.Harness.Workspace.Root = t.TempDir()
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, depth := range []int{100, 300, 5000} {
		var v any
		if err := json.Unmarshal([]byte(strings.Repeat("[", depth)+strings.Repeat("]", depth)), &v); err != nil {
			t.Fatal(err)
		}
		for _, trusted := range []bool{false, true} {
			obs := p.Execute(context.Background(), action.Action{Name: "workspace_read_file", Input: map[string]any{"path": "a", "x": v}, Trusted: trusted})
			if obs.Code != action.CodeInvalidInput {
				t.Fatalf("depth %d: %s", depth, obs.JSON())
			}
			log, _ := os.ReadFile(filepath.Join(h, "state", "harness", "audit.jsonl"))
			if !strings.Contains(string(log), `"action_id":"`+obs.ActionID+`"`) || !strings.Contains(string(log), "nested deeper than 64 levels") {
				t.Fatalf("depth %d: no pre_action record for %s", depth, obs.ActionID)
			}
		}
	}
}
