package workspace

import (
	"bytes"
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Git runs programs named in repository configuration even for read-only
// subcommands: core.fsmonitor on status, diff.external and textconv drivers
// on diff, log and show, core.pager everywhere, clean/smudge filters when it
// compares the work tree, gpg.program for signatures, hooks. The settings
// below are passed as command-scope configuration (GIT_CONFIG_COUNT), which
// beats the repository's .git/config, and system and global configuration
// are switched off, so a hostile .git/config planted in the workspace runs
// nothing. Git started by a Makefile recipe inherits the same environment.
//
// Values are harmless programs rather than empty strings because git treats
// an empty diff.external or filter process as a program named "".
var gitNeutralConfig = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", "/dev/null"},
	{"core.pager", "cat"},
	{"core.sshCommand", "false"},
	{"core.askPass", "false"},
	{"core.alternateRefsCommand", "false"},
	{"diff.external", "false"},
	{"log.showSignature", "false"},
	{"gpg.program", "false"},
	{"gpg.openpgp.program", "false"},
	{"gpg.x509.program", "false"},
	{"gpg.ssh.program", "false"},
	{"protocol.allow", "never"},
	{"credential.helper", ""},
	{"submodule.recurse", "false"},
	{"diff.ignoreSubmodules", "all"},
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
// repository with the neutral configuration plus extra overrides.
func gitEnv(root string, extra [][2]string) []string {
	cfg := make([][2]string, 0, len(gitNeutralConfig)+len(extra)+1)
	cfg = append(cfg, gitNeutralConfig...)
	// The ownership check guards against the configuration of a repository
	// owned by someone else; that configuration is neutralised here, and the
	// service may run as another user than the workspace's owner.
	cfg = append(cfg, [2]string{"safe.directory", root})
	cfg = append(cfg, extra...)
	env := []string{
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_DIR=" + root + "/.git",
		"GIT_WORK_TREE=" + root,
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(root),
		"GIT_PAGER=cat",
		"PAGER=cat",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_NO_REPLACE_OBJECTS=1",
		"GIT_CONFIG_COUNT=" + strconv.Itoa(len(cfg)),
	}
	for i, kv := range cfg {
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+kv[0], "GIT_CONFIG_VALUE_"+n+"="+kv[1])
	}
	return env
}

// driverOverrides turns the names printed by
// `git config --name-only --get-regexp` into overrides that disarm every
// filter and diff driver the repository defines: a driver is named by
// .gitattributes (which the workspace may contain) and defined in config,
// so its name cannot be known in advance.
func driverOverrides(names []byte) [][2]string {
	var out [][2]string
	for _, name := range bytes.Split(names, []byte{0}) {
		key := strings.ToLower(strings.TrimSpace(string(name)))
		section, rest, ok := strings.Cut(key, ".")
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot <= 0 {
			continue
		}
		driver, variable := rest[:dot], rest[dot+1:]
		var value string
		switch {
		case section == "filter" && (variable == "clean" || variable == "smudge"):
			value = "cat"
		case section == "filter" && variable == "process":
			value = "false"
		case section == "filter" && variable == "required":
			value = "false"
		case section == "diff" && variable == "textconv":
			value = "cat"
		case section == "diff" && variable == "command":
			value = "false"
		case section == "merge" && variable == "driver":
			value = "false"
		default:
			continue
		}
		out = append(out, [2]string{section + "." + driver + "." + variable, value})
	}
	return out
}

// gitDriverOverrides asks git, with the neutral configuration and inside
// the same sandbox as the command, which filter and diff drivers the
// repository's configuration defines. Listing configuration runs nothing.
// A failure (not a repository, no such keys) means no overrides.
func (w *Workspace) gitDriverOverrides(ctx context.Context, plan CommandPlan) [][2]string {
	q := plan
	q.Argv = []string{"git", "config", "--null", "--name-only", "--get-regexp", `^(filter|diff|merge)\.`}
	q.ExecArgv = q.Argv
	q.Timeout = min(plan.Timeout, 5*time.Second)
	q.MaxOutputBytes = 1 << 16
	res, err := w.execute(ctx, q)
	if err != nil || res.exitCode != 0 {
		return nil
	}
	return driverOverrides(res.stdout.buf)
}
