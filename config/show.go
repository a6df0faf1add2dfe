package config

import (
	"bytes"
	"maps"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Hidden replaces a secret in what Redacted returns.
const Hidden = "***"

// Redacted returns a copy of c fit to show a person: the values of MCP
// servers' env (unless made only of ${NAME} references, which name a
// secret without holding it), passwords and secret-named query parameters
// in URLs (trusted.store, audit.path, a server's url) and the value of a
// secret-named option in a server's command (--api-key X, --token=X) are
// replaced by Hidden. Auth keys are shown: they are hashes, not the
// tokens. Other secrets a person writes into a value that is not meant
// for one are not recognised.
func (c *Config) Redacted() *Config {
	r := *c
	h := &r.Harness
	h.Trusted.Store = redactURL(h.Trusted.Store)
	h.Audit.Path = redactURL(h.Audit.Path)
	h.Approvals.NotifyURL = redactHook(h.Approvals.NotifyURL)
	if h.MCP.Servers != nil {
		h.MCP.Servers = maps.Clone(h.MCP.Servers)
		for name, s := range h.MCP.Servers {
			s.URL = redactURL(s.URL)
			s.Command = redactArgs(s.Command)
			if s.Env != nil {
				s.Env = maps.Clone(s.Env)
				for k, v := range s.Env {
					if envRef.ReplaceAllString(v, "") != "" {
						s.Env[k] = Hidden
					}
				}
			}
			h.MCP.Servers[name] = s
		}
	}
	sv := &h.AHP.Supervisor
	sv.URL = redactURL(sv.URL)
	sv.Command = redactArgs(sv.Command)
	if envRef.ReplaceAllString(sv.APIKey, "") != "" {
		sv.APIKey = Hidden
	}
	return &r
}

var (
	envRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)
	// userinfo's password: scheme://user:PASSWORD@host
	urlPassword = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^/?#@:]*:)[^/?#@]*@`)
	// a query parameter whose name says it holds a secret
	urlSecretParam = regexp.MustCompile(`(?i)([?&][^=&#]*(?:pass|secret|token|key|auth)[^=&#]*=)[^&#]*`)
	secretOption   = regexp.MustCompile(`(?i)^--?[a-z0-9-]*(?:pass|secret|token|key|auth)[a-z0-9-]*$`)
)

func redactURL(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	s = urlPassword.ReplaceAllString(s, "${1}"+Hidden+"@")
	return urlSecretParam.ReplaceAllString(s, "${1}"+Hidden)
}

func redactArgs(argv []string) []string {
	out := slices.Clone(argv)
	for i, a := range out {
		if name, _, ok := strings.Cut(a, "="); ok && secretOption.MatchString(name) {
			out[i] = name + "=" + Hidden
		} else if secretOption.MatchString(a) && i+1 < len(out) {
			out[i+1] = Hidden
		}
	}
	return out
}

// YAML renders the configuration as the file would hold it, every key
// present (a resolved configuration shows every effective value), two
// spaces to a level, lists of names on one line. Call it on Redacted()
// before showing it.
func (c *Config) YAML() ([]byte, error) {
	var n yaml.Node
	if err := n.Encode(c); err != nil {
		return nil, err
	}
	flowLists(&n)
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// flowLists writes each list of plain values as [a, b, c].
func flowLists(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode && !slices.ContainsFunc(n.Content, func(e *yaml.Node) bool { return e.Kind != yaml.ScalarNode }) {
		n.Style = yaml.FlowStyle
		return
	}
	for _, e := range n.Content {
		flowLists(e)
	}
}
