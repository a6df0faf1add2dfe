package config

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// A configuration found in the workspace root (.harness/config.yaml) was
// written by whoever wrote the repository, which Harness treats as
// hostile: a cloned repository must not be able to turn the sandbox off,
// auto-approve writes, start MCP servers (programs that run outside the
// sandbox), move the audit log or add API keys. So such a file may only
// tighten what the defaults allow, and only through the keys below; every
// other key, and every value that loosens, is a problem that stops
// start-up and says where to put it instead. A file named by --config or
// $HARNESS_CONFIG, or found in the user's config directory, is the
// operator's and may set anything.
var workspaceFileKeys = map[string]func(v any) string{
	"harness.profile": func(v any) string {
		if v == "production" {
			return ""
		}
		return "may only be production"
	},
	"harness.trusted-runtime-enabled": onlyFalse,
	"harness.disabled-actions":        anything,
	"harness.tenant-allowed-actions":  anything,
	"harness.auto-approved-actions": func(v any) string {
		list, _ := v.([]any)
		for _, a := range list {
			if !slices.Contains(DevAutoApprovedActions, fmt.Sprint(a)) {
				return fmt.Sprintf("may list only read actions (%s), not %v", strings.Join(DevAutoApprovedActions, ", "), a)
			}
		}
		return ""
	},
	"harness.workspace.write-enabled":            onlyFalse,
	"harness.workspace.shell-enabled":            onlyFalse,
	"harness.workspace.sandbox":                  func(v any) string { return only(v, "required") },
	"harness.workspace.command-timeout-seconds":  anything,
	"harness.workspace.max-command-output-bytes": anything,
	"harness.workspace.max-file-bytes":           anything,
	"harness.workspace.max-search-files":         anything,
	"harness.workspace.max-list-entries":         anything,
	"harness.workspace.allowed-commands":         subsetOf(defaultAllowedCommands),
	"harness.workspace.allowed-git-subcommands":  subsetOf(defaultAllowedGitSubcommands),
	"harness.redact-observations":                func(v any) string { return only(v, true) },
	"harness.governance":                         governanceTightens,
	// Rules there only add refusals and questions: they come after the
	// profile's defaults (Load puts them there), so they cannot take one
	// of those back, and an allow rule, which would end the evaluation
	// before later rules, is refused.
	"harness.rules":      onlyRestrictingRules,
	"harness.rules-mode": func(v any) string { return only(v, RulesStrictest) },
}

func onlyRestrictingRules(v any) string {
	list, ok := v.([]any)
	if !ok {
		return "" // the full parse says what is wrong with it
	}
	for i, r := range list {
		m, _ := r.(map[string]any)
		if o := fmt.Sprint(m["outcome"]); o != "deny" && o != "ask" {
			return fmt.Sprintf("rule %d (%v) has outcome %s: only deny and ask rules may be set", i, m["id"], o)
		}
		if r, ok := m["redact"].(bool); ok && !r {
			return fmt.Sprintf("rule %d (%v) sets redact: false, which shows secrets to the model: only the operator's file may", i, m["id"])
		}
	}
	return ""
}

func anything(any) string { return "" }

func onlyFalse(v any) string { return only(v, false) }

func only(v, want any) string {
	if v == want {
		return ""
	}
	return fmt.Sprintf("may only be %v", want)
}

func subsetOf(allowed []string) func(v any) string {
	return func(v any) string {
		list, _ := v.([]any)
		for _, a := range list {
			if !slices.Contains(allowed, fmt.Sprint(a)) {
				return fmt.Sprintf("may only remove entries of the default (%s), not add %v", strings.Join(allowed, ", "), a)
			}
		}
		return ""
	}
}

// checkWorkspaceFile lists what a configuration file found in the
// workspace root sets beyond what such a file may.
func checkWorkspaceFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return &ConfigError{File: path, Problems: []string{"cannot read: " + err.Error()}}
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil // the full parse reports it, with its line
	}
	var problems []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if check, ok := workspaceFileKeys[prefix]; ok {
			if why := check(v); why != "" {
				problems = append(problems, prefix+": "+why+" in a configuration inside the workspace")
			}
			return
		}
		if m, ok := v.(map[string]any); ok && (prefix == "" || prefix == "harness" || prefix == "harness.workspace") {
			for k, e := range m {
				key := k
				if prefix != "" {
					key = prefix + "." + k
				}
				walk(key, e)
			}
			return
		}
		problems = append(problems, prefix+": may not be set by a configuration inside the workspace (the repository wrote it); set it in --config, $HARNESS_CONFIG or "+UserFile+" under the user's config directory")
	}
	walk("", doc)
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return &ConfigError{File: path, Problems: problems}
}
