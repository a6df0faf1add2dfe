package workspace

import (
	"crypto/sha256"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Git runs programs named in configuration even for read-only
// subcommands: core.fsmonitor on status, diff.external and textconv drivers
// on diff, log and show, core.pager everywhere, clean/smudge filters when it
// compares the work tree, gpg.program for signatures, hooks, and the same
// again in every submodule it looks into. A driver is named by
// .gitattributes, which the workspace writes, and defined in configuration
// under any name, so no list of settings to switch off can be complete.
//
// Harness therefore decides what git may read, not what it may not: every
// configuration file git could open for the workspace (the repository's,
// its submodules', a linked worktree's common one) is replaced, inside the
// command's mount namespace, by a copy holding only the variables of
// gitInertConfig (see planGit). The settings below are passed besides, as
// command-scope configuration (GIT_CONFIG_COUNT), which beats any file and
// reaches submodules; they are what stands when the sandbox cannot lay the
// copies (see planGit).
//
// Values are harmless programs rather than empty strings because git treats
// an empty program setting as a program named "". diff.external is not
// here: any value of it is a program that every diff, also a submodule's,
// would run (only the top-level diff gets --no-ext-diff); driverOverrides
// replaces it where a file defines it.
var gitNeutralConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"core.sshCommand", "false"},
	{"core.askPass", "false"},
	{"core.alternateRefsCommand", "false"},
	{"core.attributesFile", "/dev/null"},
	{"sequence.editor", "false"},
	{"log.showSignature", "false"},
	{"gpg.program", "false"},
	{"gpg.openpgp.program", "false"},
	{"gpg.x509.program", "false"},
	{"gpg.ssh.program", "false"},
	{"protocol.allow", "never"},
	{"credential.helper", ""},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
	{"submodule.recurse", "false"},
	{"diff.ignoreSubmodules", "all"},
	{"diff.submodule", "short"}, // "diff" would open submodules of any commit
	{"status.submoduleSummary", "false"},
	{"pager.status", "false"},
	{"pager.diff", "false"},
	{"pager.log", "false"},
	{"pager.show", "false"},
	{"pager.branch", "false"},
	{"pager.grep", "false"},
	{"pager.blame", "false"},
}

// gitEnv returns the environment that points git at the workspace's own
// repository with the neutral configuration plus extra overrides. System
// and global configuration are off: HOME is the root and XDG_CONFIG_HOME
// a directory commands write, so a command could plant either. So are the
// system attributes.
func gitEnv(root string, extra [][2]string) []string {
	cfg := make([][2]string, 0, len(gitNeutralConfig)+len(extra)+1)
	cfg = append(cfg, gitNeutralConfig...)
	// The ownership check guards against the configuration of a repository
	// owned by someone else; that configuration is sanitized here, and the
	// service may run as another user than the workspace's owner.
	cfg = append(cfg, [2]string{"safe.directory", root})
	cfg = append(cfg, extra...)
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_DIR=" + root + "/.git",
		"GIT_WORK_TREE=" + root,
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(root),
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_NO_LAZY_FETCH=1",
		"GIT_CONFIG_COUNT=" + strconv.Itoa(len(cfg)),
	}
	for i, kv := range cfg {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// gitInertConfig is the allowlist of a sanitized configuration: variables
// that make git read the repository correctly (format, object and ref
// storage, file-system quirks), show it as the person expects (upstream
// tracking, identity, quoting, encodings, rename detection) and name no
// program, file, directory, URL rewrite or command. A key with a
// subsection is written "section.*.key". The function, when set, accepts
// the value; a bare key has a nil value.
//
// Everything else is dropped: include and includeIf, core.worktree,
// core.hooksPath, core.fsmonitor, core.pager, core.editor,
// core.sshCommand, core.attributesFile, every filter, diff and merge
// driver, alias, credential, url.*.insteadOf, pager, gpg, remote helpers
// (remote.*.vcs), extensions.worktreeConfig (so no config.worktree is
// read) and anything git may add in the future.
var gitInertConfig = map[string]func(v *string) bool{
	"core.repositoryformatversion": oneOf("0", "1"),
	"core.bare":                    gitFalse,
	"core.filemode":                anyValue,
	"core.logallrefupdates":        anyValue,
	"core.ignorecase":              anyValue,
	"core.precomposeunicode":       anyValue,
	"core.symlinks":                anyValue,
	"core.quotepath":               anyValue,
	"core.autocrlf":                anyValue,
	"core.eol":                     anyValue,
	"core.safecrlf":                anyValue,
	"core.checkstat":               anyValue,
	"core.trustctime":              anyValue,
	"core.abbrev":                  anyValue,
	"core.protecthfs":              anyValue,
	"core.protectntfs":             anyValue,
	"core.sparsecheckout":          anyValue,
	"core.sparsecheckoutcone":      anyValue,
	"extensions.objectformat":      oneOf("sha1", "sha256"),
	"extensions.refstorage":        oneOf("files", "reftable"),
	"user.name":                    anyValue,
	"user.email":                   anyValue,
	"i18n.commitencoding":          anyValue,
	"i18n.logoutputencoding":       anyValue,
	"diff.renames":                 anyValue,
	"diff.renamelimit":             anyValue,
	"diff.algorithm":               anyValue,
	"diff.indentheuristic":         anyValue,
	"diff.context":                 anyValue,
	"diff.interhunkcontext":        anyValue,
	"status.showuntrackedfiles":    anyValue,
	"remote.*.url":                 anyValue,
	"remote.*.fetch":               anyValue,
	"branch.*.remote":              anyValue,
	"branch.*.merge":               anyValue,
	"submodule.*.url":              anyValue,
	"submodule.*.active":           anyValue,
	"submodule.active":             anyValue,
}

func anyValue(*string) bool { return true }

func oneOf(allowed ...string) func(*string) bool {
	return func(v *string) bool {
		if v == nil {
			return false
		}
		for _, a := range allowed {
			if strings.EqualFold(*v, a) {
				return true
			}
		}
		return false
	}
}

// gitFalse accepts the spellings git reads as false (a bare key is true).
func gitFalse(v *string) bool {
	return v != nil && oneOf("false", "no", "off", "0", "")(v)
}

func gitInert(e gitConfigEntry) bool {
	k := e.section + "." + e.key
	if e.subsection != nil {
		k = e.section + ".*." + e.key
	}
	ok := gitInertConfig[k]
	return ok != nil && ok(e.value)
}

// gitConfigSanitized is one configuration file read and sanitized.
type gitConfigSanitized struct {
	entries   []gitConfigEntry // every entry of the original
	sanitized []byte           // the inert entries, written anew
	sum       [32]byte         // sha256 of sanitized
}

// maxGitConfigBytes bounds a configuration file Harness reads; git's own
// files are a few hundred bytes.
const maxGitConfigBytes = 1 << 20

var gitConfigCache = struct {
	sync.Mutex
	m map[[32]byte]*gitConfigSanitized
}{m: map[[32]byte]*gitConfigSanitized{}}

// sanitizeGitConfig parses a configuration file and keeps its inert
// entries. Results are cached by the content's hash, so the files of a
// repository are parsed once per process, not once per command.
func sanitizeGitConfig(data []byte) (*gitConfigSanitized, error) {
	if len(data) > maxGitConfigBytes {
		return nil, errors.New("larger than 1 MiB")
	}
	key := sha256.Sum256(data)
	gitConfigCache.Lock()
	c := gitConfigCache.m[key]
	gitConfigCache.Unlock()
	if c != nil {
		return c, nil
	}
	entries, err := parseGitConfig(data)
	if err != nil {
		return nil, err
	}
	var keep []gitConfigEntry
	for _, e := range entries {
		if gitInert(e) {
			keep = append(keep, e)
		}
	}
	out, _ := writeGitConfig(keep)
	c = &gitConfigSanitized{entries: entries, sanitized: out, sum: sha256.Sum256(out)}
	gitConfigCache.Lock()
	if len(gitConfigCache.m) >= 1024 {
		clear(gitConfigCache.m)
	}
	gitConfigCache.m[key] = c
	gitConfigCache.Unlock()
	return c, nil
}

// driverOverrides disarms, by their exact names, the filter, diff and merge
// drivers and the external diff that entries define: the fallback for a sandbox that cannot lay
// sanitized copies over the configuration files. Subsections are
// case-sensitive in git, so "filter.EVIL.clean" and "filter.evil.clean"
// are two drivers and each gets its own override.
func driverOverrides(entries []gitConfigEntry) [][2]string {
	var out [][2]string
	for _, e := range entries {
		var value string
		switch {
		case e.section == "diff" && e.subsection == nil && e.key == "external":
			out = append(out, [2]string{"diff.external", "false"})
			continue
		case e.subsection == nil:
			continue
		case e.section == "filter" && (e.key == "clean" || e.key == "smudge"):
			value = "cat"
		case e.section == "filter" && (e.key == "process" || e.key == "required"):
			value = "false"
		case e.section == "diff" && e.key == "textconv":
			value = "cat"
		case e.section == "diff" && e.key == "command":
			value = "false"
		case e.section == "merge" && e.key == "driver":
			value = "false"
		default:
			continue
		}
		out = append(out, [2]string{e.section + "." + *e.subsection + "." + e.key, value})
	}
	return out
}
