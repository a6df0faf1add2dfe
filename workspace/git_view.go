package workspace

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/harness-runtime/harness/action"
)

// gitConfigFile is one configuration file git may read for a command: the
// path git opens and its sanitized form.
type gitConfigFile struct {
	path string
	cfg  *gitConfigSanitized
}

// gitView is every configuration file that git, started in the workspace
// with gitEnv, may read: the repository's own, and those of the
// repositories it may descend into (submodules, recursively). System and
// global configuration are switched off by the environment; included files
// are never reached because sanitized copies hold no include.
type gitView struct {
	configs []gitConfigFile
	// includes are the entries of files that the originals include,
	// followed as git would: only the fallback (no sanitized copies) needs
	// them, to disarm their drivers by name.
	includes []gitConfigEntry
}

// Limits of the walk: git itself stops at 5 alternates and 10 includes.
const (
	maxGitNesting    = 16 // submodules within submodules
	maxGitAlternates = 5
	maxGitIncludes   = 10
)

// scanGitView finds what git may read as configuration when it runs argv
// (the words of the command, "git" first) in the workspace at root, and
// refuses what it cannot account for. With includes, the files that the
// configuration includes are read too (see gitView.includes).
//
// Where git reads configuration, and how each place is found:
//
//   - root/.git/config: always. root/.git must be a directory (checkGitDir)
//     without a commondir file, which would move the configuration
//     elsewhere.
//   - the configuration of every submodule git may start a git in: for
//     status and diff, the gitlinks of the index (and of each submodule's
//     own index, recursively), whose ".git" entry in the work tree is a
//     directory or a "gitdir:" file. When argv asks git to look into
//     submodules' history (--submodule=..., --recurse-submodules, and
//     abbreviations), gitlinks of any commit count, so every ".git" entry
//     in the work tree and every configuration file beneath .git/modules
//     are taken instead.
//   - a linked worktree's (or submodule's) commondir: its config.
//
// Refused (command_not_allowed): a commondir in the root's .git; a gitdir
// or commondir that resolves outside the root or outside a ".git"
// directory of the root (a file the file actions could rewrite); a
// submodule work tree outside the root; object alternates outside the root
// or quoted; a configuration file that is not a regular file, is larger
// than 1 MiB or cannot be parsed; an index that cannot be read.
//
// A gitdir's config.worktree is listed too, although git reads it only
// with extensions.worktreeConfig, which the sanitized copies drop.
//
// Limits: the scan sees the files as they are when the command is planned.
// The root's .git is read-only to commands and the file actions refuse any
// path through a .git directory, so what changes in between can only be
// made by a command running at the same time (a submodule's .git file, a
// directory swapped for a symlink); the scan does not see that. For a
// command other than git (a Makefile recipe that runs git) the scan is the
// one of "git status": a recipe's git looking into the history's
// submodules may read what the index does not lead to, as may anything
// else the recipe, code of the workspace's choosing, runs.
func scanGitView(root string, argv []string, includes bool) (gitView, error) {
	s := &gitScan{root: root, seen: map[string]bool{}, configSeen: map[string]bool{}, includes: includes}
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	if errors.Is(err, fs.ErrNotExist) {
		return gitView{}, nil
	}
	if err != nil || !fi.IsDir() {
		return gitView{}, gitRefusal(".git in the workspace is not a plain directory; git would read a repository outside the root")
	}
	if _, err := os.Lstat(filepath.Join(dotgit, "commondir")); !errors.Is(err, fs.ErrNotExist) {
		return gitView{}, gitRefusal(".git/commondir exists; git would read its configuration from another repository")
	}
	deep := gitLooksIntoSubmodules(argv)
	if err := s.gitdir(dotgit, root, 0, deep); err != nil {
		return gitView{}, err
	}
	if deep {
		if err := s.walkWorktree(); err != nil {
			return gitView{}, err
		}
	}
	return s.view, nil
}

// gitLooksIntoSubmodules reports whether argv has an option that makes git
// open submodules named by commits rather than by the index: --submodule
// (diff, log, show), --recurse-submodules (grep, ls-files) or an
// unambiguous prefix of either. Words after "--" count too: "--" may be
// the value of an option ("--grep --"), and a pathspec taken for an option
// costs only a longer scan.
func gitLooksIntoSubmodules(argv []string) bool {
	for _, a := range argv[1:] {
		name, _, _ := strings.Cut(a, "=")
		if len(name) < 4 || !strings.HasPrefix(name, "--") {
			continue
		}
		if strings.HasPrefix("--submodule", name) || strings.HasPrefix("--recurse-submodules", name) {
			return true
		}
	}
	return false
}

func gitRefusal(format string, args ...any) error {
	e := action.Errorf(action.CodeCommandNotAllowed, "git: "+format, args...)
	e.Payload = map[string]any{"word": "git"}
	return e
}

type gitScan struct {
	root       string
	view       gitView
	seen       map[string]bool // gitdirs visited
	configSeen map[string]bool // config paths listed
	walked     []string        // modules directories walked
	includes   bool            // follow include and includeIf
}

// rel is p relative to the root, for messages.
func (s *gitScan) rel(p string) string {
	if r, err := filepath.Rel(s.root, p); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return p
}

// inRoot reports whether p (absolute, clean) is the root or beneath it.
func (s *gitScan) inRoot(p string) bool {
	return p == s.root || strings.HasPrefix(p, s.root+string(filepath.Separator))
}

// inDotGit reports whether p is beneath a directory named .git inside the
// root: the file actions refuse such paths and the sandbox mounts the
// root's .git read-only, so what git finds there is what was scanned.
func (s *gitScan) inDotGit(p string) bool {
	if !s.inRoot(p) || p == s.root {
		return false
	}
	r, _ := filepath.Rel(s.root, p)
	return slices.ContainsFunc(strings.Split(r, string(filepath.Separator)), func(c string) bool {
		return strings.EqualFold(c, ".git")
	})
}

// resolve makes p absolute against dir (a path without symlinks) and
// resolves its symlinks. A path inside the root whose elements are plain
// (the common case: "sub", "../.git/modules/sub") is checked with one
// lstat per element beneath the root instead of EvalSymlinks' walk from
// "/"; anything else goes to EvalSymlinks.
func (s *gitScan) resolve(dir, p string) (string, error) {
	raw := p
	if !filepath.IsAbs(p) {
		raw = dir + string(filepath.Separator) + p
	}
	full := filepath.Clean(raw)
	if !s.inRoot(full) || !dotsLeadOnly(p) || !s.inRoot(dir) && !filepath.IsAbs(p) {
		return filepath.EvalSymlinks(raw)
	}
	rel, _ := filepath.Rel(s.root, full)
	cur := s.root
	for _, el := range strings.Split(rel, string(filepath.Separator)) {
		if el == "." {
			continue
		}
		cur = filepath.Join(cur, el)
		fi, err := os.Lstat(cur)
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return filepath.EvalSymlinks(raw)
		}
	}
	return full, nil
}

// dotsLeadOnly reports whether every ".." of p comes before its other
// elements: then cleaning p lexically against a directory without
// symlinks is what the kernel does ("a/.." is not, if a is a symlink).
func dotsLeadOnly(p string) bool {
	named := false
	for _, el := range strings.Split(filepath.ToSlash(p), "/") {
		switch {
		case el == "..":
			if named {
				return false
			}
		case el != "" && el != ".":
			named = true
		}
	}
	return true
}

// gitdir accounts for the repository directory d whose work tree is
// worktree ("" when unknown: then its index is not followed, and the deep
// walk covers its submodules).
func (s *gitScan) gitdir(d, worktree string, depth int, deep bool) error {
	if s.seen[d] {
		return nil
	}
	s.seen[d] = true
	if depth > maxGitNesting {
		return gitRefusal("submodules nested deeper than %d levels", maxGitNesting)
	}
	common := d
	if b, err := readRegularFile(filepath.Join(d, "commondir"), 4096, true); err == nil {
		c, err := s.resolve(d, strings.TrimRight(string(b), "\r\n"))
		if err != nil || !s.inDotGit(c) {
			return gitRefusal("%s/commondir leads outside the .git directories of the workspace", s.rel(d))
		}
		common = c
	} else if !errors.Is(err, fs.ErrNotExist) {
		return gitRefusal("%s/commondir cannot be read: %v", s.rel(d), err)
	}
	// config.worktree is read only with extensions.worktreeConfig, which
	// the sanitized copy drops; the fallback needs its drivers.
	for _, p := range []string{filepath.Join(common, "config"), filepath.Join(d, "config.worktree")} {
		if err := s.config(p); err != nil {
			return err
		}
	}
	if err := s.alternates(filepath.Join(common, "objects"), 0); err != nil {
		return err
	}
	if deep {
		if err := s.walkModules(filepath.Join(common, "modules"), depth); err != nil {
			return err
		}
	}
	if worktree == "" {
		return nil
	}
	links, err := indexGitlinks(filepath.Join(d, "index"), s.hashSize(common))
	if err != nil {
		return gitRefusal("the index of %s cannot be read: %v", s.rel(d), err)
	}
	for _, l := range links {
		if err := s.dotGitIn(worktree, filepath.FromSlash(l), depth+1, deep); err != nil {
			return err
		}
	}
	return nil
}

// hashSize is the object name length of the repository whose common
// directory is common, from its (already scanned) configuration.
func (s *gitScan) hashSize(common string) int {
	for _, f := range s.view.configs {
		if f.path != filepath.Join(common, "config") {
			continue
		}
		for _, e := range f.cfg.entries {
			if e.subsection == nil && e.section == "extensions" && e.key == "objectformat" &&
				e.value != nil && strings.EqualFold(*e.value, "sha256") {
				return 32
			}
		}
	}
	return 20
}

// gitConfigByStat remembers the sanitized form of a configuration file by
// its identity and change time, so an unchanged file is not read again.
var gitConfigByStat = struct {
	sync.Mutex
	m map[fileStatKey]*gitConfigSanitized
}{m: map[fileStatKey]*gitConfigSanitized{}}

// config lists the configuration file at p, if there is one.
func (s *gitScan) config(p string) error {
	if s.configSeen[p] {
		return nil
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !fi.Mode().IsRegular() {
		return gitRefusal("%s is not a regular file; its configuration cannot be sanitized", s.rel(p))
	}
	key, keyed := statKey(p, fi)
	gitConfigByStat.Lock()
	cfg := gitConfigByStat.m[key]
	gitConfigByStat.Unlock()
	if cfg == nil {
		data, err := readFileMax(p, maxGitConfigBytes)
		if err == nil {
			cfg, err = sanitizeGitConfig(data)
		}
		if err != nil {
			return gitRefusal("the configuration %s cannot be sanitized: %v", s.rel(p), err)
		}
		if keyed {
			gitConfigByStat.Lock()
			if len(gitConfigByStat.m) >= 1024 {
				clear(gitConfigByStat.m)
			}
			gitConfigByStat.m[key] = cfg
			gitConfigByStat.Unlock()
		}
	}
	s.configSeen[p] = true
	s.view.configs = append(s.view.configs, gitConfigFile{path: p, cfg: cfg})
	if s.includes {
		s.follow(p, cfg.entries, 0)
	}
	return nil
}

// follow collects the entries of the files that entries (of the file at
// from) include, as git resolves them: relative to the including file,
// "~/" against HOME (the root). Conditions of includeIf are not evaluated:
// every such file counts. A file that cannot be read is skipped, as git
// skips it.
func (s *gitScan) follow(from string, entries []gitConfigEntry, depth int) {
	if depth >= maxGitIncludes {
		return
	}
	for _, e := range entries {
		if e.key != "path" || e.value == nil || *e.value == "" ||
			!(e.section == "include" && e.subsection == nil || e.section == "includeif" && e.subsection != nil) {
			continue
		}
		p := *e.value
		if rest, ok := strings.CutPrefix(p, "~/"); ok {
			p = filepath.Join(s.root, rest)
		} else if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(from), p)
		}
		// Unlike the files scanned for sanitized copies, an included file
		// is read through symlinks, as git reads it.
		data, err := readRegularFile(p, maxGitConfigBytes, true)
		if err != nil {
			continue
		}
		cfg, err := sanitizeGitConfig(data)
		if err != nil {
			continue // git stops at such a file, runs nothing
		}
		s.view.includes = append(s.view.includes, cfg.entries...)
		s.follow(p, cfg.entries, depth+1)
	}
}

// alternates checks objects/info/alternates beneath objects: every
// alternate object directory must be inside the root.
func (s *gitScan) alternates(objects string, depth int) error {
	b, err := readFileMax(filepath.Join(objects, "info", "alternates"), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return gitRefusal("%s/info/alternates cannot be read: %v", s.rel(objects), err)
	}
	if depth >= maxGitAlternates {
		return gitRefusal("object alternates nested deeper than %d", maxGitAlternates)
	}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '"' {
			return gitRefusal("%s/info/alternates has a quoted path, which Harness does not check", s.rel(objects))
		}
		alt, err := s.resolve(objects, line)
		if errors.Is(err, fs.ErrNotExist) {
			continue // git skips a missing alternate too
		}
		if err != nil || !s.inRoot(alt) {
			return gitRefusal("%s/info/alternates names an object directory outside the workspace", s.rel(objects))
		}
		if err := s.alternates(alt, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// dotGitIn accounts for the ".git" entry of the submodule work tree dir.
func (s *gitScan) dotGitIn(worktree, rel string, depth int, deep bool) error {
	dir := filepath.Join(worktree, rel)
	real, err := s.resolve(worktree, rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil || !s.inRoot(real) {
		return gitRefusal("the submodule directory %s leads outside the workspace", s.rel(dir))
	}
	dotgit := filepath.Join(real, ".git")
	fi, err := os.Lstat(dotgit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return gitRefusal("%s: %v", s.rel(dotgit), err)
	}
	switch {
	case fi.IsDir():
		return s.gitdir(dotgit, real, depth, deep)
	case fi.Mode().IsRegular():
		b, err := readFileMax(dotgit, 4096)
		if err != nil {
			return gitRefusal("%s cannot be read: %v", s.rel(dotgit), err)
		}
		target, ok := strings.CutPrefix(string(b), "gitdir: ")
		if !ok {
			return nil // not a gitfile: git does not use it either
		}
		d, err := s.resolve(real, strings.TrimRight(target, "\r\n"))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !s.inDotGit(d) {
			return gitRefusal("%s points at a repository outside the .git directories of the workspace", s.rel(dotgit))
		}
		return s.gitdir(d, real, depth, deep)
	default:
		return gitRefusal("%s is neither a directory nor a gitdir file", s.rel(dotgit))
	}
}

// walkModules takes every directory beneath modules that holds a config
// file as a repository (a submodule's gitdir, whatever its name).
func (s *gitScan) walkModules(modules string, depth int) error {
	for _, w := range s.walked {
		if modules == w || strings.HasPrefix(modules, w+string(filepath.Separator)) {
			return nil // the walk of an enclosing modules directory saw it
		}
	}
	s.walked = append(s.walked, modules)
	var dirs []string
	err := filepath.WalkDir(modules, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == modules && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if d.Name() == "config" && !d.IsDir() {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	if err != nil {
		return gitRefusal("%s cannot be read: %v", s.rel(modules), err)
	}
	for _, d := range dirs {
		if err := s.gitdir(d, "", depth+1, true); err != nil {
			return err
		}
	}
	return nil
}

// walkWorktree takes every ".git" entry in the work tree, outside the
// root's own .git, as a submodule's.
func (s *gitScan) walkWorktree() error {
	var dirs []string
	top := filepath.Join(s.root, ".git")
	err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == top {
			return fs.SkipDir
		}
		if strings.EqualFold(d.Name(), ".git") && p != s.root {
			dirs = append(dirs, filepath.Dir(p))
			if d.IsDir() {
				return fs.SkipDir
			}
		}
		return nil
	})
	if err != nil {
		return gitRefusal("the work tree cannot be walked for submodules: %v", err)
	}
	for _, d := range dirs {
		if err := s.dotGitIn(d, ".", 1, true); err != nil {
			return err
		}
	}
	return nil
}

// readFileMax reads at most max bytes of the regular file at p, which must
// not be a symlink; a longer file is an error.
func readFileMax(p string, max int64) ([]byte, error) {
	return readRegularFile(p, max, false)
}

// readRegularFile reads the file at p, at most max bytes, if it is a
// regular file (opened non-blocking, so a FIFO cannot hang the read). With
// follow false, p itself must not be a symlink.
func readRegularFile(p string, max int64, follow bool) ([]byte, error) {
	f, err := os.OpenFile(p, openFlags, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", filepath.Base(p))
	}
	if !follow {
		if li, err := os.Lstat(p); err != nil || !os.SameFile(fi, li) {
			return nil, fmt.Errorf("%s is a symlink", filepath.Base(p))
		}
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(p), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", filepath.Base(p), max)
	}
	return b, nil
}

// gitConfigDir is where the sanitized copies of a root's configuration
// files are kept: beside the root's private directory, not in it, because
// its commands write there and a copy must be what Harness wrote.
func gitConfigDir(root string) (string, error) {
	private, err := privateDir(root)
	if err != nil {
		return "", err
	}
	return private + gitConfigSuffix, nil
}

// gitConfigSuffix names gitConfigDir after the private directory; closeExec
// removes both.
const gitConfigSuffix = ".git-config"

// storeSanitized writes the sanitized copy c into dir under its hash, once,
// and returns its path.
func storeSanitized(dir string, c *gitConfigSanitized) (string, error) {
	p := filepath.Join(dir, hex.EncodeToString(c.sum[:16])+".config")
	// Only Harness writes dir, each file once under the hash of what it
	// holds: a file there of the right size is the copy.
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(c.sanitized)) {
		return p, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(c.sanitized)
	err = errors.Join(err, tmp.Chmod(0o444), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return p, nil
}

// planGit decides what configuration git reads in the plan's command,
// after planSandbox; PlanCommand calls it for every command, since a
// Makefile recipe or a test may run git too.
//
// With a mount namespace, each configuration file git may read
// (scanGitView) is covered, for this command only, by a read-only copy
// holding only the inert variables (gitInertConfig): git and every git it
// starts (in submodules, in a recipe) read nothing else, whatever the
// repository defines.
//
// Without one (sandbox off, or a kernel without mount namespaces in
// best-effort mode), git reads the files themselves, and only command-scope
// overrides stand between them and git: the known settings
// (gitNeutralConfig) and, by exact name, each filter, diff and merge driver
// those files and their includes define. That is a denylist: the sandbox
// note says so, and with sandbox required git is refused unless every
// variable of every file is inert already. For other commands the
// overrides are not added; what the command runs is its own code.
//
// For git itself a repository scanGitView refuses is refused; for other
// commands it is said in the sandbox note and nothing is laid.
func (w *Workspace) planGit(plan *CommandPlan) error {
	isGit := plan.Argv[0] == "git"
	laid := plan.Sandbox != SandboxNone && plan.policy.MountNS
	if !isGit && !laid {
		return nil
	}
	if isGit {
		if err := gitVersionSupported(plan.Program); err != nil {
			return err
		}
	}
	argv := plan.Argv
	if !isGit {
		argv = []string{"git", "status"} // what a recipe most likely runs
	}
	view, err := scanGitView(w.rootPath, argv, !laid)
	if err != nil {
		if isGit {
			return err
		}
		var ae *action.Error
		if errors.As(err, &ae) {
			addSandboxNote(plan, "git run by this command reads the repository's configuration as it is: "+ae.Message)
		}
		return nil
	}
	if laid {
		dir, err := gitConfigDir(w.rootPath)
		for _, f := range view.configs {
			var src string
			if err == nil {
				src, err = storeSanitized(dir, f.cfg)
			}
			if err != nil {
				return &action.Error{Code: action.CodeInternal, Message: "git: sanitized configuration", Err: err}
			}
			plan.policy.ROBinds = append(plan.policy.ROBinds, [2]string{src, f.path})
		}
		return nil
	}
	inert := true
	var extra [][2]string
	for _, f := range view.configs {
		inert = inert && !slices.ContainsFunc(f.cfg.entries, func(e gitConfigEntry) bool { return !gitInert(e) })
		extra = append(extra, driverOverrides(f.cfg.entries)...)
	}
	extra = append(extra, driverOverrides(view.includes)...)
	plan.Env = w.commandEnv(plan.private, extra)
	if inert {
		return nil
	}
	const note = "git reads the repository's configuration as it is, with only the known program-running settings overridden: without a mount namespace no sanitized copy can be laid over it"
	if mode := w.opts.Sandbox; mode != SandboxOff && mode != SandboxBestEffort {
		return gitRefusal("sandbox required: %s", strings.Replace(note, "git reads", "git would read", 1))
	}
	addSandboxNote(plan, note)
	return nil
}

func addSandboxNote(plan *CommandPlan, note string) {
	if plan.SandboxNote != "" {
		plan.SandboxNote += "; "
	}
	plan.SandboxNote += note
}

var gitVersions sync.Map // program path -> error

// gitVersionSupported refuses a git older than 2.32: it would ignore
// GIT_CONFIG_COUNT (2.31) or GIT_CONFIG_GLOBAL (2.32) and read a global
// configuration from $HOME/.gitconfig, which is in the root. Asked once per
// program per process; "git version" reads no configuration.
func gitVersionSupported(program string) error {
	if v, ok := gitVersions.Load(program); ok {
		err, _ := v.(error)
		return err
	}
	cmd := exec.Command(program, "version")
	cmd.Dir = "/"
	cmd.Env = []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "LANG=C"}
	out, err := cmd.Output()
	if err == nil {
		err = checkGitVersion(string(out))
	}
	if err != nil {
		err = gitRefusal("%v", err)
	}
	gitVersions.Store(program, err)
	return err
}

// checkGitVersion reads "git version X.Y[.Z...]" and wants X.Y >= 2.32.
func checkGitVersion(out string) error {
	rest, ok := strings.CutPrefix(strings.TrimSpace(out), "git version ")
	var major, minor int
	if ok {
		_, err := fmt.Sscanf(rest, "%d.%d", &major, &minor)
		ok = err == nil
	}
	if !ok {
		return fmt.Errorf("cannot tell the version of git from %q", out)
	}
	if major < 2 || major == 2 && minor < 32 {
		return fmt.Errorf("git %d.%d is older than 2.32 and would read a global configuration from the workspace", major, minor)
	}
	return nil
}
