package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Source says where a configuration came from.
type Source struct {
	// Path is the file read; "" for the embedded defaults.
	Path string
	// Via says how the file was chosen: one of the Via constants, or ""
	// when a program named the file itself (LoadFile, Parse).
	Via string
}

// How Load chose a file, in the order it looks.
const (
	ViaFlag      = "--config"
	ViaEnv       = "$HARNESS_CONFIG"
	ViaWorkspace = "the workspace root"
	ViaUser      = "the user's config directory"
	ViaDefaults  = "embedded defaults"
)

// String says where the configuration came from, for a person:
// "/srv/proj/.harness/config.yaml (found in the workspace root)".
func (s Source) String() string {
	switch {
	case s.Path == "":
		return ViaDefaults
	case s.Via == ViaWorkspace || s.Via == ViaUser:
		return s.Path + " (found in " + s.Via + ")"
	case s.Via != "":
		return s.Path + " (from " + s.Via + ")"
	}
	return s.Path
}

// WorkspaceFile and UserFile are where Load looks for a configuration:
// under the workspace root, and under the user's config directory.
const (
	WorkspaceFile = ".harness/config.yaml"
	UserFile      = "harness/config.yaml"
)

// Discover chooses the configuration file as SPEC section 3 orders it:
// flagPath (--config) if set, else $HARNESS_CONFIG, else
// .harness/config.yaml under the workspace root, else
// harness/config.yaml under the user's config directory
// (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config on Linux), else none
// (Path ""). The workspace root is root (--root) if set, else
// $HARNESS_WORKSPACE_ROOT, else the current directory. A file named by the
// flag or the variable is chosen whether or not it exists (reading it then
// fails); one that is looked for is chosen when something is there, so
// that a file that exists but cannot be read is an error rather than
// silently passed over.
func Discover(flagPath, root string) Source {
	if flagPath != "" {
		return Source{Path: flagPath, Via: ViaFlag}
	}
	if p := os.Getenv("HARNESS_CONFIG"); p != "" {
		return Source{Path: p, Via: ViaEnv}
	}
	if root == "" {
		root = os.Getenv("HARNESS_WORKSPACE_ROOT")
	}
	if root == "" {
		root = "."
	}
	if p := filepath.Join(root, WorkspaceFile); present(p) {
		return Source{Path: absolute(p), Via: ViaWorkspace}
	}
	if dir, err := os.UserConfigDir(); err == nil {
		if p := filepath.Join(dir, UserFile); present(p) {
			return Source{Path: absolute(p), Via: ViaUser}
		}
	}
	return Source{Via: ViaDefaults}
}

func present(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR)
}

func absolute(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// Load finds the configuration (Discover), reads, checks and resolves it,
// and records in the result's Source which file was used. It is what every
// command of the CLI does with its --config and --root flags; the root
// only chooses where to look here, the caller still applies it.
func Load(flagPath, root string, opts ...Option) (*Config, error) {
	src := Discover(flagPath, root)
	if src.Via == ViaWorkspace {
		if err := checkWorkspaceFile(src.Path); err != nil {
			return nil, err
		}
	}
	c, err := LoadFile(src.Path, opts...)
	if err != nil {
		return nil, err
	}
	if src.Via == ViaWorkspace {
		c.Harness.keepDefaultRules()
	}
	c.Source = src
	return c, nil
}
