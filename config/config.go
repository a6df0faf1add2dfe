// Package config is Harness's configuration: the YAML keys of SPEC
// section 3, their defaults per profile (dev, production), loading and
// validation. Every other package takes its own options type; the
// assembly (package pipeline) translates.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harness-runtime/harness/policy"
)

// Config is the YAML configuration of SPEC section 3. Booleans are pointers
// so that "not set" can differ from "false": the production profile turns
// the trusted runtime, writes and shell off unless the file sets them.
// Call Resolve (Load does) before reading the effective values.
type Config struct {
	Harness HarnessConfig `yaml:"harness"`
	// Source is where the configuration was read from (Load, LoadFile,
	// Parse); it is not a key of the file.
	Source Source `yaml:"-"`
}

// HarnessConfig is everything under the top-level "harness" key.
type HarnessConfig struct {
	Profile               string              `yaml:"profile" validate:"omitempty,oneof=dev production"`
	TrustedRuntimeEnabled *bool               `yaml:"trusted-runtime-enabled"`
	RedactObservations    *bool               `yaml:"redact-observations"` // secrets in observations become markers; production: on
	DisabledActions       []string            `yaml:"disabled-actions" validate:"dive,required"`
	AutoApprovedActions   []string            `yaml:"auto-approved-actions" validate:"dive,required"`
	TenantAllowedActions  map[string][]string `yaml:"tenant-allowed-actions" validate:"dive,keys,required,endkeys,dive,required"`
	Workspace             WorkspaceConfig     `yaml:"workspace"`
	MCP                   MCPConfig           `yaml:"mcp"`
	Governance            GovernanceConfig    `yaml:"governance"`
	AHP                   AHPConfig           `yaml:"ahp"`
	Trusted               TrustedConfig       `yaml:"trusted"`
	Approvals             ApprovalsConfig     `yaml:"approvals"`
	Audit                 AuditConfig         `yaml:"audit"`
	Auth                  AuthConfig          `yaml:"auth"`
	Sanitize              SanitizeConfig      `yaml:"sanitize"`
	HTTP                  HTTPConfig          `yaml:"http"`
	// Rules are the deployment's rules, in order (see RuleConfig). Not
	// set: the profile's defaults (DevRules in dev, none in production);
	// [] none.
	Rules []RuleConfig `yaml:"rules"`
	// RulesMode is first-match (the first matching rule decides; the
	// default) or strictest (every matching rule counts: deny over ask
	// over allow).
	RulesMode string `yaml:"rules-mode" validate:"omitempty,oneof=first-match strictest"`

	// rulesDefaulted records that Resolve set Rules to the profile's.
	rulesDefaulted bool
}

// WorkspaceConfig is harness.workspace.
type WorkspaceConfig struct {
	Root                  string   `yaml:"root"`
	WriteEnabled          *bool    `yaml:"write-enabled"`
	ShellEnabled          *bool    `yaml:"shell-enabled"`
	CommandTimeoutSeconds int      `yaml:"command-timeout-seconds" validate:"gte=0,lte=3600"`
	MaxCommandOutputBytes int      `yaml:"max-command-output-bytes" validate:"gte=0,lte=104857600"`
	MaxFileBytes          int64    `yaml:"max-file-bytes" validate:"gte=0"`
	MaxSearchFiles        int      `yaml:"max-search-files" validate:"gte=0"`
	MaxListEntries        int      `yaml:"max-list-entries" validate:"gte=0"`
	AllowedCommands       []string `yaml:"allowed-commands" validate:"dive,required,excludesall=/\\ "`
	AllowedGitSubcommands []string `yaml:"allowed-git-subcommands" validate:"dive,required"`
	// Sandbox is required (refuse to run commands without Landlock),
	// best-effort (run without it, and say so) or off.
	Sandbox string `yaml:"sandbox" validate:"omitempty,oneof=required best-effort off"`
	// NetworkCommands names allowed commands that may reach the network
	// (a go that fetches modules through the proxy); none by default. The
	// preview of such a command says so.
	NetworkCommands []string `yaml:"network-commands" validate:"dive,required,excludesall=/\\ "`
}

// MCPConfig is harness.mcp.
type MCPConfig struct {
	Servers map[string]MCPServerConfig `yaml:"servers" validate:"dive,keys,required,endkeys"`
	// Bridge configures `harness mcp`, the server side.
	Bridge MCPBridgeConfig `yaml:"bridge"`
}

// MCPServerConfig is one configured MCP server. Exactly one of Command and
// URL is set.
type MCPServerConfig struct {
	Enabled   *bool    `yaml:"enabled"`
	Command   []string `yaml:"command" validate:"required_without=URL,excluded_with=URL,omitempty,min=1,dive,required"`
	URL       string   `yaml:"url" validate:"required_without=Command,omitempty,url"`
	Transport string   `yaml:"transport" validate:"omitempty,oneof=stdio http sse"`
	Tools     []string `yaml:"tools" validate:"dive,required"`
	TimeoutMS int      `yaml:"timeout-ms" validate:"gte=0,lte=600000"`
	// Env adds variables to a stdio server's environment, which otherwise
	// holds only PATH, HOME, the user and locale variables, TZ and TMPDIR.
	// ${NAME} in a value is taken from Harness's own environment, so that
	// a credential need not be written into the file.
	Env map[string]string `yaml:"env" validate:"dive,keys,required,excludesall==,endkeys"`
	// RegisterTools also registers each allowed tool as its own action
	// named mcp.<server>.<tool>.
	RegisterTools bool `yaml:"register-tools"`
}

// MCPBridgeConfig says which trusted actions `harness mcp` serves beyond the
// auto-approved ones; they run only after the person confirms through MCP
// elicitation.
type MCPBridgeConfig struct {
	TrustedActions []string `yaml:"trusted-actions" validate:"dive,required"`
	// ApprovalWaitSeconds is how long a call that waits for a person's
	// approval (a rule asked) holds its answer for the decision before
	// it answers needs_confirmation with the approval's id (and
	// harness.approvals.console-url, where to decide it); calling the
	// tool again with the same arguments waits again, and runs once
	// approved. Default 20; 0 answers at once.
	ApprovalWaitSeconds *int `yaml:"approval-wait-seconds" validate:"omitempty,gte=0,lte=600"`
}

// DefaultApprovalWaitSeconds is harness.mcp.bridge.approval-wait-seconds'
// default.
const DefaultApprovalWaitSeconds = 20

// ApprovalWait is ApprovalWaitSeconds (its default when unset) as a
// duration.
func (b MCPBridgeConfig) ApprovalWait() time.Duration {
	if b.ApprovalWaitSeconds == nil {
		return DefaultApprovalWaitSeconds * time.Second
	}
	return time.Duration(*b.ApprovalWaitSeconds) * time.Second
}

// TrustedConfig is harness.trusted.
type TrustedConfig struct {
	TokenTTLSeconds int    `yaml:"token-ttl-seconds" validate:"gte=0,lte=86400"`
	Store           string `yaml:"store" validate:"omitempty,store"`
	// MaxTokensPerPrincipal and MaxTokenBytesPerPrincipal cap the live
	// (minted, unredeemed, unexpired) tokens of one principal: 0 means the
	// defaults (64 tokens, 32 MiB), -1 no cap. Beyond, a preview is refused
	// with rate_limited (429, Retry-After).
	MaxTokensPerPrincipal     int   `yaml:"max-tokens-per-principal" validate:"gte=-1"`
	MaxTokenBytesPerPrincipal int64 `yaml:"max-token-bytes-per-principal" validate:"gte=-1"`
}

// AuditConfig is harness.audit.
type AuditConfig struct {
	Path     string `yaml:"path"`
	Instance string `yaml:"instance"`
}

// AuthConfig is harness.auth.
type AuthConfig struct {
	Keys []AuthKey `yaml:"keys" validate:"dive"`
}

// AuthKey is one API key: the SHA-256 of its bearer token (never the token
// itself), who holds it, and what it may do.
type AuthKey struct {
	Principal   string   `yaml:"principal" validate:"required"`
	SHA256      string   `yaml:"sha256" validate:"required,len=64,hexadecimal"`
	Permissions []string `yaml:"permissions" validate:"min=1,dive,oneof=agent:execute agent:trusted agent:approve agent:audit admin"`
	Tenant      string   `yaml:"tenant"`
}

// SanitizeConfig is harness.sanitize.
type SanitizeConfig struct {
	// MaxString is the length past which strings in events are cut.
	MaxString int `yaml:"max-string" validate:"gte=0"`
	// KeyPath is the per-installation HMAC key file (created if missing).
	KeyPath string `yaml:"key-path"`
}

// HTTPConfig is harness.http.
type HTTPConfig struct {
	Addr         string `yaml:"addr"`
	MaxBodyBytes int64  `yaml:"max-body-bytes" validate:"gte=0"`
}

// Defaults of SPEC section 3.
const (
	DefaultCommandTimeoutSeconds = 10
	DefaultMaxCommandOutputBytes = 12000
	DefaultMaxFileBytes          = 20000
	DefaultMaxSearchFiles        = 1000
	DefaultMaxListEntries        = 1000
	DefaultTokenTTLSeconds       = 300
	DefaultMCPTimeoutMS          = 5000
	DefaultMaxBodyBytes          = 4 << 20
	DefaultMaxString             = 2048
	DefaultAddr                  = "127.0.0.1:8080"
)

// Default returns the configuration used when there is no file: the dev
// profile, the current directory as workspace root, SPEC's defaults.
func Default() *Config {
	c := &Config{}
	c.Resolve()
	return c
}

// Bool returns *p, or false for nil. After Resolve no field is nil.
func Bool(p *bool) bool { return p != nil && *p }

func setDefault(p **bool, v bool) {
	if *p == nil {
		*p = &v
	}
}

// The default command allowlists of SPEC section 3.
var (
	defaultAllowedCommands       = []string{"pwd", "ls", "rg", "git", "go", "make"}
	defaultAllowedGitSubcommands = []string{"status", "diff", "show", "log", "rev-parse", "branch"}
)

// DevAutoApprovedActions are the dev profile's auto-approved actions when
// the configuration does not set harness.auto-approved-actions: the
// read-risk workspace actions.
var DevAutoApprovedActions = []string{"workspace_list_files", "workspace_read_file", "workspace_search_text", "workspace_propose_patch"}

// DefaultAuditPath is where the audit log lives unless configured: in the
// user's state directory ($XDG_STATE_HOME/harness/audit.jsonl, by default
// ~/.local/state/harness/audit.jsonl), never in the current directory,
// which is often the workspace root an agent can read and write. Without a
// home directory it is the system's temporary directory's
// harness-<uid>/audit.jsonl.
func DefaultAuditPath() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "harness", "audit.jsonl")
	}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "harness", "audit.jsonl")
	}
	return filepath.Join(os.TempDir(), "harness-"+strconv.Itoa(os.Getuid()), "audit.jsonl")
}

// Resolve fills every unset value with its default for the profile.
func (c *Config) Resolve() {
	h := &c.Harness
	if h.Profile == "" {
		h.Profile = "dev"
	}
	prod := h.Profile == "production"
	setDefault(&h.TrustedRuntimeEnabled, !prod)
	// In dev a new user can list, read, search and propose at once; writes,
	// commands and MCP calls still need trust or approval. A file that sets
	// the key (even to []) decides; production auto-approves nothing.
	if h.AutoApprovedActions == nil && !prod {
		h.AutoApprovedActions = append([]string(nil), DevAutoApprovedActions...)
	}
	if h.Rules == nil && !prod {
		h.Rules, h.rulesDefaulted = DevRules(), true
	}
	if h.RulesMode == "" {
		h.RulesMode = RulesFirstMatch
	}
	w := &h.Workspace
	if w.Root == "" {
		w.Root = "."
	}
	setDefault(&w.WriteEnabled, !prod)
	setDefault(&w.ShellEnabled, !prod)
	if w.CommandTimeoutSeconds == 0 {
		w.CommandTimeoutSeconds = DefaultCommandTimeoutSeconds
	}
	if w.MaxCommandOutputBytes == 0 {
		w.MaxCommandOutputBytes = DefaultMaxCommandOutputBytes
	}
	if w.MaxFileBytes == 0 {
		w.MaxFileBytes = DefaultMaxFileBytes
	}
	if w.MaxSearchFiles == 0 {
		w.MaxSearchFiles = DefaultMaxSearchFiles
	}
	if w.MaxListEntries == 0 {
		w.MaxListEntries = DefaultMaxListEntries
	}
	if w.AllowedCommands == nil {
		w.AllowedCommands = append([]string(nil), defaultAllowedCommands...)
	}
	if w.AllowedGitSubcommands == nil {
		w.AllowedGitSubcommands = append([]string(nil), defaultAllowedGitSubcommands...)
	}
	if w.Sandbox == "" {
		w.Sandbox = "best-effort"
		if prod {
			w.Sandbox = "required"
		}
	}
	for name, s := range h.MCP.Servers {
		setDefault(&s.Enabled, true)
		if s.TimeoutMS == 0 {
			s.TimeoutMS = DefaultMCPTimeoutMS
		}
		if s.Transport == "" {
			s.Transport = "stdio"
			if s.URL != "" {
				s.Transport = "http"
			}
		}
		h.MCP.Servers[name] = s
	}
	if h.Trusted.TokenTTLSeconds == 0 {
		h.Trusted.TokenTTLSeconds = DefaultTokenTTLSeconds
	}
	if h.Trusted.Store == "" {
		h.Trusted.Store = "memory"
	}
	if h.Audit.Path == "" {
		h.Audit.Path = DefaultAuditPath()
	}
	if h.Sanitize.MaxString == 0 {
		h.Sanitize.MaxString = DefaultMaxString
	}
	if h.HTTP.MaxBodyBytes == 0 {
		h.HTTP.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.HTTP.Addr == "" {
		h.HTTP.Addr = DefaultAddr
	}
	h.Governance.resolve()
	h.AHP.resolve()
	if h.MCP.Bridge.ApprovalWaitSeconds == nil {
		wait := DefaultApprovalWaitSeconds
		h.MCP.Bridge.ApprovalWaitSeconds = &wait
	}
	h.Approvals.resolve()
	setDefault(&h.RedactObservations, prod)
}

// ConfigError lists every problem found in a configuration, each in the
// configuration's own terms: "line 12: harness.workspace.write-enabeld:
// unknown key; did you mean write-enabled?", or, for a value set by the
// environment, "$HARNESS_PROFILE: harness.profile: …".
type ConfigError struct {
	File     string
	Problems []string // "line L: key: why", sorted by line
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	file := e.File
	if file == "" {
		file = "(no file)"
	}
	fmt.Fprintf(&b, "config %s: %d problem(s):", file, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}

// LoadFile reads, validates and resolves the configuration at path. An empty
// path means no file: the embedded defaults (Load also looks for a file).
// Environment variables HARNESS_PROFILE, HARNESS_WORKSPACE_ROOT,
// HARNESS_AUDIT_PATH and HARNESS_TRUSTED_STORE override the file.
func LoadFile(path string, opts ...Option) (*Config, error) {
	if path == "" {
		c, err := Parse("", nil, opts...)
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = ViaDefaults // what an environment variable broke
		}
		return c, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Problems: []string{"cannot read: " + err.Error()}}
	}
	return Parse(path, data, opts...)
}

// Parse decodes YAML configuration data, checks it and resolves it; name
// is the file named in messages and recorded as the Source ("" for the
// embedded defaults). Every problem is listed in one *ConfigError, with
// its line: an unknown key (with the nearest valid one), a value of the
// wrong type (in YAML's words), a value out of range, an action name that
// is not registered (with the nearest real one, see WithActions). A wrong
// value does not stop the checks of the others.
func Parse(name string, data []byte, opts ...Option) (*Config, error) {
	o := newOptions(opts)
	c := &Config{}
	d := newDecoder()
	if d.decodeYAML(data, c) {
		d.env(c)
		d.check(c, o)
		d.problems = append(d.problems, c.Harness.checkOverlap(d.at)...)
	}
	if err := d.err(name); err != nil {
		return nil, err
	}
	c.Resolve()
	c.Source = Source{Path: name}
	return c, nil
}

// envOverrides are the variables that override the file, and the values
// they set.
var envOverrides = []struct {
	name, ns string
	field    func(*Config) *string
}{
	{"HARNESS_PROFILE", "harness.profile", func(c *Config) *string { return &c.Harness.Profile }},
	{"HARNESS_WORKSPACE_ROOT", "harness.workspace.root", func(c *Config) *string { return &c.Harness.Workspace.Root }},
	{"HARNESS_AUDIT_PATH", "harness.audit.path", func(c *Config) *string { return &c.Harness.Audit.Path }},
	{"HARNESS_TRUSTED_STORE", "harness.trusted.store", func(c *Config) *string { return &c.Harness.Trusted.Store }},
}

// env applies the environment's overrides and remembers which variable set
// each value, for the messages.
func (d *decoder) env(c *Config) {
	for _, e := range envOverrides {
		if v := os.Getenv(e.name); v != "" {
			*e.field(c) = v
			d.places[e.ns] = place{key: e.ns, env: e.name}
			delete(d.broken, e.ns)
		}
	}
}

// Validate checks a configuration built or changed in Go (after flags,
// for example) and returns a *ConfigError listing every problem, or nil.
// It cannot name lines; Parse does.
func (c *Config) Validate(file string, opts ...Option) error {
	d := newDecoder()
	d.check(c, newOptions(opts))
	return d.err(file)
}

// GuardOptions returns the guard's built-in judgements of a resolved
// configuration.
func (c *Config) GuardOptions() policy.Options {
	h := c.Harness
	return policy.Options{
		DisabledActions: h.DisabledActions, AutoApprovedActions: h.AutoApprovedActions,
		TenantAllowedActions: h.TenantAllowedActions, TrustedRuntime: Bool(h.TrustedRuntimeEnabled),
	}
}
