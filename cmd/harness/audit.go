package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/sanitize"
)

func init() {
	commands["audit"] = command{summary: "verify the hash chain of an audit log (audit verify FILE|postgres://…)", run: auditCmd}
}

const auditUsageLine = "harness audit verify [FILE | postgres://…] [--key-path F] [--allow-unkeyed] [--head SEQ[:HASH]] [--instance ID] [--table NAME] [--config F] [--json]"

// auditCmd is `harness audit verify`: it prints one line to stdout, "ok: N
// records, head seq S hash H (keyed…|unkeyed…)" or "bad: seq S (line L):
// problem: reason", and exits 0 for a good chain, 1 for a bad one and 2
// when it could not verify (usage, configuration, unreadable file or key,
// a keyed log and no key, unreachable database).
func auditCmd(ctx context.Context, args []string, s stdio) int {
	fs := newFlags("audit", auditUsageLine, s.err)
	usage := fs.Usage
	fs.Usage = func() {
		usage()
		fmt.Fprint(s.err, `
Verifies every record of the audit log: its hash, its seq (1, 2, 3, …) and
its link to the record before, and names the first bad one. A last line
without a newline (a torn write) is bad. Records removed from the end of a
log cannot be detected from the log alone: keep the printed head
elsewhere and pass it back with --head to check that the log still reaches
it (and, with the hash, that it was not rewritten up to there).

The chain is keyed: each record's hash is an HMAC under a key derived from
the installation's HMAC key, so a log rewritten by someone who cannot read
the key does not verify. The key is read from --key-path, else from where
Harness keeps it (harness.sanitize.key-path of the configuration, else
~/.config/harness/hmac.key); verifying never creates one. With the key,
every record must be keyed with it: an unkeyed record is bad, because a
valid unkeyed chain is exactly what someone without the key can write.
A log written before chains were keyed (no "key_id" in its first
records) verifies with --allow-unkeyed, and the result says how many of
its records are unkeyed. Without a key, only unkeyed records can be
checked; a keyed log then cannot be verified (exit 2).

With no FILE or URL, the harness.audit.path of the configuration is
verified. For Postgres, every instance's chain is verified unless
--instance names one.

Exit codes: 0 the chain is good, 1 it is not, 2 usage or configuration
error or the log could not be read.
`)
	}
	config := fs.String("config", "", "configuration file (YAML) whose harness.audit.path is verified when no FILE or URL is given")
	instance := fs.String("instance", "", "Postgres: verify only this instance's chain (default: every chain)")
	table := fs.String("table", "", "Postgres: the audit table (default "+audit.DefaultTable+", or the URL's "+audit.TableParam+" parameter)")
	asJSON := fs.Bool("json", false, "print the report as JSON instead of one line")
	head := fs.String("head", "", "a head printed by an earlier verify, SEQ or SEQ:HASH, that the log must still reach")
	keyPathFlag := fs.String("key-path", "", "the installation's HMAC key file (default: harness.sanitize.key-path of the configuration, else ~/.config/harness/hmac.key)")
	allowUnkeyed := fs.Bool("allow-unkeyed", false, "accept unkeyed records at the start of the log (one written before chains were keyed); they are counted in the result")
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) == 0 || pos[0] != "verify" || len(pos) > 2 {
		if err == nil && len(pos) > 0 && pos[0] != "verify" {
			fmt.Fprintf(s.err, "harness audit: unknown sub-command %q\n\n", pos[0])
		}
		fs.Usage()
		return exitUsage
	}
	target := ""
	if len(pos) == 2 {
		target = pos[1]
	}
	keyFile := *keyPathFlag
	if target == "" || keyFile == "" {
		cfg, err := loadConfig(*config, "")
		if err != nil {
			fmt.Fprintf(s.err, "harness audit verify: %v\n", err)
			return exitUsage
		}
		if target == "" {
			target = cfg.Harness.Audit.Path
		}
		if keyFile == "" {
			if keyFile, err = pipeline.KeyPath(cfg); err != nil {
				fmt.Fprintf(s.err, "harness audit verify: %v\n", err)
				return exitUsage
			}
		}
	}
	if target == "" {
		fmt.Fprintln(s.err, "harness audit verify: no audit log given and none configured")
		return exitUsage
	}

	var opts []audit.Option
	key, err := sanitize.LoadKey(keyFile)
	switch {
	case err == nil:
		opts = append(opts, audit.WithKey(key))
	case errors.Is(err, os.ErrNotExist) && *keyPathFlag == "":
		fmt.Fprintf(s.err, "harness audit verify: warning: no key at %s: only unkeyed records can be verified (give the key with --key-path)\n", keyFile)
	default:
		fmt.Fprintf(s.err, "harness audit verify: %v\n", err)
		return exitUsage
	}
	if *allowUnkeyed {
		opts = append(opts, audit.AllowUnkeyed())
	}
	if *head != "" {
		a, err := audit.ParseAnchor(*head)
		if err != nil {
			fmt.Fprintf(s.err, "harness audit verify: --head: %v\n", err)
			return exitUsage
		}
		opts = append(opts, audit.WithAnchor(a))
	}
	var rep audit.Report
	if audit.IsPostgres(target) {
		if *table != "" {
			opts = append(opts, audit.WithTable(*table))
		}
		if *head != "" && *instance == "" {
			fmt.Fprintln(s.err, "harness audit verify: --head needs --instance: a head belongs to one chain")
			return exitUsage
		}
		rep, err = audit.VerifyPostgres(ctx, target, *instance, opts...)
	} else {
		if *instance != "" || *table != "" {
			fmt.Fprintln(s.err, "harness audit verify: --instance and --table apply to postgres:// logs only")
			return exitUsage
		}
		rep, err = audit.VerifyJSONLFile(ctx, target, opts...)
	}
	if errors.Is(err, audit.ErrKeyRequired) {
		fmt.Fprintf(s.err, "harness audit verify: %v; %d records before it verified. Give the installation's key with --key-path (looked for it at %s)\n", err, rep.Records, keyFile)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(s.err, "harness: %v\n", err)
		return exitUsage
	}
	if rep.OK() && rep.Records == 0 {
		fmt.Fprintf(s.err, "harness audit verify: warning: %s holds no records\n", describeTarget(target, *instance))
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintf(s.out, "%s\n", b)
	} else {
		fmt.Fprintln(s.out, rep.String())
	}
	if !rep.OK() {
		return exitActionError
	}
	return exitOK
}

// describeTarget names a log for people without printing a DSN, which may
// hold a password.
func describeTarget(target, instance string) string {
	if !audit.IsPostgres(target) {
		return target
	}
	if instance != "" {
		return fmt.Sprintf("the Postgres chain of instance %q", instance)
	}
	return "the Postgres audit table"
}
