package workspace

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// The go command's allowlist. Each subcommand lists the flags the go
// command registers for it (cmd/go/internal/work.AddBuildFlags and the
// subcommand's own), with what their values are; a flag left out is
// refused. The arities matter: a flag that takes a value takes the next
// word, whatever it looks like, so a wrong arity would let a value be
// read as something else.
//
// Values passed on to other programs are checked flag by flag against the
// tool's own allowlist (-gcflags, -asmflags, -ldflags), or refused
// (-toolexec, -exec, -vettool, -gccgoflags, -overlay, -C).

var (
	goBool   = optSpec{kind: optBool}
	goValue  = optSpec{kind: optValue}
	goWrite  = optSpec{kind: optWrite}
	goRead   = optSpec{kind: optRead}
	goToolex = refused("it runs a program of your choice in front of every compiler, linker and vet step")
)

// goBuildFlags are the build flags shared by build, test, vet and list
// (work.AddBuildFlags).
var goBuildFlags = map[string]optSpec{
	"a": goBool, "n": goBool, "x": goBool, "v": goBool, "p": goValue,
	"asan": goBool, "msan": goBool, "race": goBool,
	"asmflags":  {kind: optValue, check: toolFlagsCheck("-asmflags", "assembler", asmFlags)},
	"gcflags":   {kind: optValue, check: toolFlagsCheck("-gcflags", "compiler", compileFlags)},
	"ldflags":   {kind: optValue, check: toolFlagsCheck("-ldflags", "linker", linkFlags)},
	"compiler":  {kind: optValue, values: []string{"gc"}},
	"buildmode": {kind: optValue, values: []string{"default", "exe", "pie", "archive", "c-archive", "c-shared", "plugin"}},
	// Bool-like: -buildvcs, or -buildvcs=true|false|auto attached.
	"buildvcs":      goBool,
	"installsuffix": goValue,
	"json":          goBool,
	"linkshared":    goBool,
	"mod":           {kind: optValue, values: []string{"readonly", "vendor", "mod"}},
	"modcacherw":    goBool,
	// The go command reads the named go.mod (its replace directives pick
	// source code) and may rewrite it and the go.sum beside it.
	"modfile":  {kind: optWrite, check: goModfile},
	"pgo":      {kind: optValue, check: goPGO},
	"pkgdir":   goWrite,
	"tags":     goValue,
	"trimpath": goBool,
	"work":     goBool,

	"debug-actiongraph":   goWrite,
	"debug-runtime-trace": goWrite,
	"debug-trace":         goWrite,

	"toolexec":   goToolex,
	"gccgoflags": refused("it passes flags to gccgo, which can run programs"),
	"overlay":    refused("it names a JSON file that maps source files to any other file, which the toolchain then reads as code"),
	"C":          refused("it changes the directory the command runs in"),
}

// goCoverFlags are the coverage flags of build, test and list (not vet).
var goCoverFlags = map[string]optSpec{
	"cover":     goBool,
	"covermode": {kind: optValue, values: []string{"set", "count", "atomic"}},
	"coverpkg":  goValue,
}

// goTestFlags are go test's own flags and the test binary flags it
// forwards, which it also accepts with a "test." prefix.
var goTestFlags = map[string]optSpec{
	"c": goBool, "o": goWrite, "json": goBool, "vet": goValue, "v": goBool,
	"exec": refused("it runs the test binary through a program of your choice"),
	// Everything after -args goes to the test binary.
	"args": {kind: optRest},

	"artifacts": goBool, "bench": goValue, "benchmem": goBool, "benchtime": goValue,
	"blockprofile": goWrite, "blockprofilerate": goValue, "count": goValue, "cpu": goValue,
	"coverprofile": goWrite, "cpuprofile": goWrite, "failfast": goBool, "fullpath": goBool,
	"fuzz": goValue, "fuzzminimizetime": goValue, "fuzztime": goValue, "list": goValue,
	"memprofile": goWrite, "memprofilerate": goValue, "mutexprofile": goWrite,
	"mutexprofilefraction": goValue, "outputdir": goWrite, "parallel": goValue, "run": goValue,
	"short": goBool, "shuffle": goValue, "skip": goValue, "timeout": goValue, "trace": goWrite,
}

// goTestForwarded are the test flags go test also accepts as -test.NAME.
var goTestForwarded = []string{
	"artifacts", "bench", "benchmem", "benchtime", "blockprofile", "blockprofilerate",
	"count", "coverprofile", "cpu", "cpuprofile", "failfast", "fullpath", "fuzz",
	"fuzzminimizetime", "fuzztime", "list", "memprofile", "memprofilerate",
	"mutexprofile", "mutexprofilefraction", "outputdir", "parallel", "run", "short",
	"shuffle", "skip", "timeout", "trace", "v",
}

// goTestProfiles are the files go test writes relative to -outputdir.
var goTestProfiles = []string{"blockprofile", "coverprofile", "cpuprofile", "memprofile", "mutexprofile", "trace"}

// goVetAnalyzers are the analyzers of go vet (go tool vet -flags): each is
// a bool flag, and some have string options.
var goVetAnalyzers = []string{
	"all", "appends", "asmdecl", "assign", "atomic", "bool", "bools", "buildtag",
	"buildtags", "cgocall", "composites", "compositewhitelist", "composites.whitelist",
	"copylocks", "defers", "directive", "errorsas", "framepointer", "hostport",
	"httpresponse", "ifaceassert", "loopclosure", "lostcancel", "methods", "nilfunc",
	"printf", "rangeloops", "shift", "sigchanyzer", "slog", "source", "stdmethods",
	"stdversion", "stringintconv", "structtag", "testinggoroutine",
	"testinggoroutine.subtest", "tests", "timeformat", "unmarshal", "unreachable",
	"unsafeptr", "unusedresult", "waitgroup", "V", "flags",
}

var goVetStrings = []string{
	"printf.funcs", "printfuncs", "unusedfuncs", "unusedresult.funcs",
	"unusedresult.stringmethods", "unusedstringmethods",
}

func goFlags(parts ...map[string]optSpec) map[string]optSpec {
	out := map[string]optSpec{}
	for _, p := range parts {
		maps.Copy(out, p)
	}
	return out
}

func goTestRule() *argRule {
	opts := goFlags(goBuildFlags, goCoverFlags, goTestFlags)
	for _, name := range goTestForwarded {
		opts["test."+name] = opts[name]
	}
	return &argRule{style: styleGoFlag, opts: opts, after: goTestOutputs}
}

func goVetRule() *argRule {
	opts := goFlags(goBuildFlags, map[string]optSpec{
		"vettool": refused("it runs a program of your choice as the analysis tool"),
		"diff":    goBool, "json": goBool, "c": goValue,
	})
	for _, a := range goVetAnalyzers {
		opts[a] = goBool
	}
	for _, s := range goVetStrings {
		opts[s] = goValue
	}
	return &argRule{style: styleGoFlag, opts: opts}
}

var goRule = &argRule{
	style: styleGoFlag,
	subcommands: map[string]*argRule{
		"build": {style: styleGoFlag, opts: goFlags(goBuildFlags, goCoverFlags, map[string]optSpec{"o": goWrite})},
		"test":  goTestRule(),
		"vet":   goVetRule(),
		"list": {style: styleGoFlag, opts: goFlags(goBuildFlags, goCoverFlags, map[string]optSpec{
			"compiled": goBool, "deps": goBool, "e": goBool, "export": goBool, "f": goValue,
			"find": goBool, "json": goBool, "m": goBool, "retracted": goBool, "reuse": goRead,
			"test": goBool, "u": goBool, "versions": goBool,
		})},
		"version": {style: styleGoFlag, opts: map[string]optSpec{"m": goBool, "v": goBool, "json": goBool}},
		"env": {style: styleGoFlag, opts: map[string]optSpec{
			"json": goBool, "changed": goBool, "n": goBool, "x": goBool,
			"w": refused("it writes the go command's configuration file, outside the workspace"),
			"u": refused("it writes the go command's configuration file, outside the workspace"),
		}},
	},
}

// goTestOutputs checks where go test really writes its profiles: relative
// names are joined to -outputdir, so -outputdir=sub -coverprofile=../.git/x
// writes .git/x although each value passes on its own.
func goTestOutputs(c argChecker, seen []seenOpt) error {
	var dirs []string
	for _, s := range seen {
		if strings.TrimPrefix(s.name, "test.") == "outputdir" && s.val != "" {
			dirs = append(dirs, s.val)
		}
	}
	for _, s := range seen {
		if !slices.Contains(goTestProfiles, strings.TrimPrefix(s.name, "test.")) || s.val == "" {
			continue
		}
		for _, d := range dirs {
			if err := c.checkTarget(s.word, filepath.Join(d, s.val), targetWrite); err != nil {
				return err
			}
		}
	}
	return nil
}

// goModfile: the go command insists on the .mod suffix and writes the
// matching .sum beside the file, in the same directory.
func goModfile(c argChecker, word, val string) error {
	if !strings.HasSuffix(val, ".mod") {
		return refuseWord(word, "%s: -modfile %q must name a .mod file", c.cmd, word)
	}
	return nil
}

// goPGO: -pgo is auto, off, or a profile file that steers the compiler.
func goPGO(c argChecker, word, val string) error {
	if val == "auto" || val == "off" {
		return nil
	}
	return c.checkTarget(word, val, targetCode)
}

// Allowlists of the flags the go command may pass on to its tools. Bool
// flags (including the compiler's counting flags such as -m, which also
// take -m=2) are optBool; the rest take a value, attached or as the next
// field. Everything else is refused: flags that run programs (-extld,
// -extar), pass flags to them (-extldflags), write files (-o, -cpuprofile,
// -json, -asmhdr, -tmpdir…), read files as configuration (-importcfg,
// -embedcfg, -I, -L, -D) or change the environment (-env).
var (
	compileFlags = map[string]optSpec{
		"%": goBool, "B": goBool, "C": goBool, "E": goBool, "K": goBool, "L": goBool,
		"N": goBool, "S": goBool, "W": goBool, "e": goBool, "h": goBool, "j": goBool,
		"l": goBool, "m": goBool, "r": goBool, "v": goBool, "w": goBool,
		"live": goBool, "smallframes": goBool, "wb": goBool, "dwarf": goBool,
		"dwarflocationlists": goBool, "dwarfbasentries": goBool, "clobberdead": goBool,
		"clobberdeadreg": goBool, "errorurl": goBool, "nolocalimports": goBool,
		"c": goValue, "gendwarfinl": goValue, "lang": goValue,
		"spectre": {kind: optValue, values: []string{"all", "index", "ret", "index,ret", "ret,index", ""}},
	}
	asmFlags = map[string]optSpec{
		"S": goBool, "e": goBool, "v": goBool, "V": goBool,
		"spectre": {kind: optValue, values: []string{"all", "ret", ""}},
	}
	linkFlags = map[string]optSpec{
		"s": goBool, "w": goBool, "v": goBool, "e": goBool, "h": goBool, "V": goBool,
		"compressdwarf": goBool, "checklinkname": goBool, "pruneweakmap": goBool,
		"bindnow": goBool, "aslr": goBool,
		"X": goValue, "buildid": goValue, "B": goValue, "strictdups": goValue,
		"randlayout": goValue, "funcalign": goValue,
		"linkmode": {kind: optValue, values: []string{"internal", "external", "auto"}},
	}
)

// toolFlagsCheck returns the check of a -gcflags, -asmflags or -ldflags
// value, which the go command splits as [pattern=]flags (a value not
// starting with '-' has a package pattern before its first '='), the
// flags into fields at spaces, a field wholly inside '…' or "…" being one
// field (cmd/go's quoted fields). Each field must be a flag of the tool's
// allowlist, followed by its value when it takes one; a field starting
// with '@' is refused anywhere, since the tools read such a response file
// as more flags.
func toolFlagsCheck(opt, tool string, allowed map[string]optSpec) func(c argChecker, word, val string) error {
	return func(c argChecker, word, val string) error {
		v := strings.TrimSpace(val)
		if v != "" && v[0] != '-' {
			// The go command refuses these too; refusing them here keeps the
			// check from depending on its error.
			if v[0] == '\'' || v[0] == '"' {
				return refuseWord(word, "%s: %s value %q starts with a quote", c.cmd, opt, word)
			}
			pattern, after, ok := strings.Cut(v, "=")
			if !ok || strings.TrimSpace(pattern) == "" {
				return refuseWord(word, "%s: %s value %q is neither -flags nor pattern=-flags", c.cmd, opt, word)
			}
			v = after
		}
		fields, ok := splitQuotedFields(v)
		if !ok {
			return refuseWord(word, "%s: %s value %q has an unterminated quote", c.cmd, opt, word)
		}
		for k := 0; k < len(fields); k++ {
			f := fields[k]
			if strings.HasPrefix(f, "@") {
				return refuseWord(word, "%s: %s value %q names the response file %s, whose contents the %s would read as more flags", c.cmd, opt, word, f, tool)
			}
			if len(f) < 2 || f[0] != '-' || f == "--" {
				return refuseWord(word, "%s: %s value %q passes %q to the %s, which is not a flag; only known-inert %s flags are allowed", c.cmd, opt, word, f, tool, tool)
			}
			name, fv, hasVal := strings.Cut(strings.TrimPrefix(f[1:], "-"), "=")
			spec, ok := allowed[name]
			if !ok {
				return refuseWord(word, "%s: %s value %q passes -%s to the %s, which is not allowed; only known-inert %s flags are (%s)",
					c.cmd, opt, word, name, tool, tool, strings.Join(slices.Sorted(maps.Keys(allowed)), " "))
			}
			if spec.kind != optBool && !hasVal && k+1 < len(fields) {
				k++
				fv = fields[k]
				if strings.HasPrefix(fv, "@") {
					return refuseWord(word, "%s: %s value %q names the response file %s, whose contents the %s would read as more flags", c.cmd, opt, word, fv, tool)
				}
			}
			if spec.values != nil && !slices.Contains(spec.values, fv) {
				return refuseWord(word, "%s: %s value %q gives -%s the value %q; allowed: %s", c.cmd, opt, word, name, fv, strings.Join(spec.values, ", "))
			}
		}
		return nil
	}
}

// splitQuotedFields splits s into fields at ASCII spaces, tabs and
// newlines; a field that starts with a single or double quote runs to the
// next such quote and keeps everything in between as written. Quotes
// elsewhere are ordinary characters. ok is false for an unterminated
// quote. This is how the go command splits -gcflags and -ldflags.
func splitQuotedFields(s string) (fields []string, ok bool) {
	isSpace := func(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }
	for i := 0; i < len(s); {
		if isSpace(s[i]) {
			i++
			continue
		}
		if q := s[i]; q == '\'' || q == '"' {
			end := strings.IndexByte(s[i+1:], q)
			if end < 0 {
				return nil, false
			}
			fields = append(fields, s[i+1:i+1+end])
			i += end + 2
			continue
		}
		j := i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
		fields = append(fields, s[i:j])
		i = j
	}
	return fields, true
}
