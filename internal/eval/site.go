package eval

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/harness-runtime/harness/action"
)

// site is one entry point's copy of one configuration: its own workspace
// root, audit log, HMAC key and configuration file, in its own directory.
type site struct {
	dir    string
	root   string
	audit  string
	config string
}

// The workspace every site starts from.
var seedFiles = map[string]string{
	"a.txt":     "alpha\nbeta\n",
	"apply.txt": "before\n",
	"stale.txt": "previewed\n",
}

// staleContent is what a stale scenario writes between preview and execute.
const staleContent = "changed after the preview\n"

// configYAML is the configuration of a variant. Paths are filled in per
// site; mcpServer is the command line of the evaluation's MCP server.
func configYAML(v Variant, s site, mcpServer []string, keySHA string) string {
	var b strings.Builder
	b.WriteString("harness:\n  profile: dev\n")
	if v == Restricted {
		b.WriteString("  trusted-runtime-enabled: false\n  disabled-actions: [workspace_apply_patch]\n")
	} else {
		b.WriteString("  trusted-runtime-enabled: true\n")
	}
	b.WriteString("  auto-approved-actions: [workspace_list_files, workspace_read_file, workspace_search_text, workspace_propose_patch]\n")
	b.WriteString("  tenant-allowed-actions:\n    restricted: [workspace_list_files]\n")
	b.WriteString("  governance:\n    tenants:\n      capped: {max-risk: 1, risk-weights: {read: 2}}\n")
	fmt.Fprintf(&b, "  workspace:\n    root: %s\n    sandbox: best-effort\n", strconv.Quote(s.root))
	b.WriteString("  mcp:\n")
	if v == Main {
		b.WriteString("    servers:\n      evalsrv:\n        command: [")
		for i, a := range mcpServer {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(a))
		}
		b.WriteString("]\n")
		fmt.Fprintf(&b, "        env: {%s: \"1\"}\n", mcpServerEnv)
		b.WriteString("        tools: [echo]\n        register-tools: true\n        timeout-ms: 20000\n")
	}
	fmt.Fprintf(&b, "    bridge:\n      trusted-actions: [%s]\n", strings.Join(bridgeConfirmed, ", "))
	fmt.Fprintf(&b, "  audit:\n    path: %s\n", strconv.Quote(s.audit))
	fmt.Fprintf(&b, "  sanitize:\n    key-path: %s\n", strconv.Quote(filepath.Join(s.dir, "hmac.key")))
	fmt.Fprintf(&b, "  auth:\n    keys:\n      - {principal: eval, sha256: %q, permissions: [agent:execute, agent:trusted]}\n", keySHA)
	if askEnabled() {
		b.WriteString(askRuleYAML)
	}
	return b.String()
}

// askRuleYAML is the rule the "ask" scenario needs (keys as SPEC section
// 3 shows them). It is in the configuration once that scenario is no
// longer pending: the configuration refuses keys it does not know yet.
const askRuleYAML = `  rules:
    - id: eval-ask
      actions: [workspace_read_file]
      when: 'glob(path, "ask/**")'
      outcome: ask
      reason: the evaluation asks before reading under ask/
`

// askEnabled reports whether the "ask" scenario runs.
func askEnabled() bool {
	for _, sc := range Scenarios {
		if sc.Want.Code == action.CodeApprovalRequired {
			return sc.Pending == ""
		}
	}
	return false
}

// newSite lays out a site under dir: the seeded root, a file beside it
// (outside the root), and the configuration file.
func newSite(dir string, v Variant, mcpServer []string, keySHA string) (site, error) {
	s := site{dir: dir, root: filepath.Join(dir, "root"), audit: filepath.Join(dir, "audit.jsonl"), config: filepath.Join(dir, "harness.yaml")}
	if err := os.MkdirAll(filepath.Join(s.root, "ask"), 0o755); err != nil {
		return s, err
	}
	for name, content := range seedFiles {
		if err := os.WriteFile(filepath.Join(s.root, name), []byte(content), 0o644); err != nil {
			return s, err
		}
	}
	if err := os.WriteFile(filepath.Join(s.root, "ask", "secret.txt"), []byte("ask first\n"), 0o644); err != nil {
		return s, err
	}
	if err := os.WriteFile(filepath.Join(dir, "outside.txt"), []byte("outside the root\n"), 0o644); err != nil {
		return s, err
	}
	return s, os.WriteFile(s.config, []byte(configYAML(v, s, mcpServer, keySHA)), 0o600)
}

// makeStale changes the stale scenario's file behind the preview's back.
func (s site) makeStale() error {
	return os.WriteFile(filepath.Join(s.root, "stale.txt"), []byte(staleContent), 0o644)
}

// newAPIKey returns a random bearer token and its SHA-256 in hex.
func newAPIKey() (token, sha string) {
	var b [24]byte
	_, _ = rand.Read(b[:])
	token = "eval_" + hex.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(token))
	return token, hex.EncodeToString(sum[:])
}
