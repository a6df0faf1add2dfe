package workspace

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/harness-runtime/harness/action"
)

// systemReadDirs are readable (and executable) inside the sandbox besides
// the root: what dynamically linked programs, compilers and git need.
// Home directories, /tmp, /var, /run and /dev are not among them, so
// secrets kept there stay out of reach of the commands, even of the user's
// own code. Nor are /etc and /sys as a whole: a command of a service that
// runs as root keeps uid 0, and uid 0 owns /etc/shadow and the 0400 files
// of sysfs, so only the entries below are readable.
var systemReadDirs = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/proc",
	// CPU count and cgroup limits (glibc, the Go runtime), huge page size.
	"/sys/devices/system/cpu", "/sys/devices/system/node", "/sys/fs/cgroup", "/sys/kernel/mm/transparent_hugepage",
}

// etcReadable is what a command may read under /etc (nothing else there,
// not even the names): user and group names, name service and resolver
// configuration, the dynamic linker's, time zone, locale, OS release, MIME
// and magic tables, TLS roots, terminal descriptions. Everything else,
// /etc/shadow and /etc/ssl/private first, stays unreadable even to a
// command running as uid 0.
var etcReadable = []string{
	"/etc/passwd", "/etc/group", "/etc/hosts", "/etc/hostname", "/etc/host.conf", "/etc/resolv.conf",
	"/etc/nsswitch.conf", "/etc/gai.conf", "/etc/networks", "/etc/protocols", "/etc/services",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
	"/etc/localtime", "/etc/timezone", "/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale",
	"/etc/os-release", "/etc/lsb-release", "/etc/debian_version", "/etc/alpine-release", "/etc/redhat-release",
	"/etc/system-release", "/etc/mime.types", "/etc/magic", "/etc/magic.mime",
	"/etc/ssl/certs", "/etc/ssl/openssl.cnf", "/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/pki/tls/certs", "/etc/pki/ca-trust", "/etc/crypto-policies", "/etc/inputrc", "/etc/terminfo",
}

// Device files a command may read, and write; the rest of /dev (disks,
// memory) stays out of reach even of a command running as root.
var (
	deviceReadFiles  = []string{"/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"}
	deviceWriteFiles = []string{"/dev/null"}
)

// protectedNames are the entries of the root whose contents git or Harness
// later execute or trust (hooks, configuration); a command may not write
// beneath them, nor create them.
var protectedNames = []string{".git", ".harness"}

// layerLoss says what a command gives up when a layer is missing.
var layerLoss = map[string]string{
	SandboxLayerLandlock: "files outside the root are not confined",
	SandboxLayerPIDNS:    "the command can see other processes, and a child that leaves its process group can outlive it",
	SandboxLayerMountNS:  "the command can write beneath .git and .harness",
	SandboxLayerNetNS:    "no empty network namespace",
	SandboxLayerSeccomp:  "sockets, io_uring and new user namespaces are not filtered",
}

// nsFlags are the namespaces the helper is started in.
type nsFlags struct{ user, pid, mount, net bool }

var noteLogged sync.Map // note -> struct{}

// planSandbox decides how the plan is confined and fills its sandbox
// fields. Required mode refuses the command (internal, naming each missing
// layer and why) unless the helper exists and every layer of
// requiredLayers is available; the command never runs unconfined.
// Best-effort runs with what there is and says what is missing.
func (w *Workspace) planSandbox(plan *CommandPlan) error {
	plan.Sandbox = SandboxNone
	mode := w.opts.Sandbox
	if mode == SandboxOff {
		plan.SandboxNote = "the OS sandbox is off by configuration"
		return nil
	}
	bestEffort := mode == SandboxBestEffort // anything else fails closed as required
	logNote := func() {
		if _, seen := noteLogged.LoadOrStore(plan.SandboxNote, struct{}{}); !seen {
			w.logger().Warn("workspace: commands run with less than the full OS sandbox", "note", plan.SandboxNote)
		}
	}
	if runtime.GOOS != "linux" {
		// No layer at all: best-effort would be no sandbox, so only an
		// explicit "off" runs commands here.
		return action.Errorf(action.CodeShellDisabled, "commands need the OS sandbox, which exists only on Linux; set harness.workspace.sandbox: off to run them unconfined on %s", runtime.GOOS)
	}
	helper, err := resolveHelper(w.opts.HelperPath)
	if err != nil {
		if !bestEffort {
			return &action.Error{Code: action.CodeInternal, Message: "sandbox required: the sandbox helper cannot run: " + err.Error(), Err: err}
		}
		plan.SandboxNote = "the sandbox helper cannot run (" + err.Error() + "); the command runs without an OS sandbox (sandbox: best-effort)"
		logNote()
		return nil
	}

	network := slices.Contains(w.opts.NetworkCommands, plan.Argv[0])
	f := currentSandboxSupport()
	var missing, reasons []string
	for _, l := range requiredLayers {
		if l == SandboxLayerNetNS && network {
			continue
		}
		if why, ok := f.Missing[l]; ok {
			missing = append(missing, l)
			reasons = append(reasons, fmt.Sprintf("%s (%s)", l, why))
		}
	}
	if len(missing) > 0 && !bestEffort {
		e := action.Errorf(action.CodeInternal, "sandbox required: this host lacks %s; the command does not run",
			strings.Join(reasons, "; "))
		e.Payload = map[string]any{"sandbox_missing": missing}
		return e
	}

	ns := nsFlags{mount: f.MountNS, pid: f.PIDNS && f.MountNS, net: f.NetNS && !network}
	// A root service makes the namespaces without a user namespace: the
	// command ends up with no capability either way, and without one the
	// service can start the helper with vfork instead of copying its own
	// address space (about a millisecond per command).
	ns.user = f.UserNS && !serviceIsRoot() && (ns.mount || ns.pid || ns.net)
	read := slices.Clone(systemReadDirs)
	for _, name := range w.allowedCommands() {
		p, err := lookCommand(name)
		if err != nil {
			continue
		}
		dirs := []string{filepath.Dir(p)}
		if name == "go" {
			dirs = append(dirs, filepath.Dir(filepath.Dir(p))) // GOROOT
		}
		for _, d := range dirs {
			if !slices.Contains(read, d) {
				read = append(read, d)
			}
		}
	}
	if ns.mount {
		if err := w.checkProtectable(); err != nil {
			return err
		}
	}
	if network {
		// The deployment opened the network to this command so that it can
		// fetch (go from its module proxy): Go's default proxy then.
		plan.Env = slices.DeleteFunc(plan.Env, func(kv string) bool { return kv == "GOPROXY=off" })
	}
	plan.helper = helper
	plan.ns = ns
	plan.policy = sandboxPolicy{
		ReadDirs:   read,
		WriteDirs:  []string{w.rootPath, plan.private},
		ReadFiles:  slices.Concat(etcReadable, deviceReadFiles),
		WriteFiles: deviceWriteFiles,
		NoNet:      !network,
		BestEffort: bestEffort,
		NoLandlock: f.LandlockABI == 0,
		Seccomp:    f.Seccomp,
		MountNS:    ns.mount,
		PIDNS:      ns.pid,
	}
	plan.SandboxLayers = nil
	for _, l := range []struct {
		name string
		on   bool
	}{{SandboxLayerLandlock, f.LandlockABI > 0}, {SandboxLayerUserNS, ns.user}, {SandboxLayerPIDNS, ns.pid},
		{SandboxLayerMountNS, ns.mount}, {SandboxLayerNetNS, ns.net}, {SandboxLayerSeccomp, f.Seccomp},
		{SandboxLayerNoCaps, true}} {
		if l.on {
			plan.SandboxLayers = append(plan.SandboxLayers, l.name)
		}
	}
	plan.SandboxMissing = missing
	plan.Sandbox = SandboxFull
	if f.LandlockABI > 0 {
		plan.SandboxRead = slices.Concat(read, etcReadable)
		plan.SandboxWrite = plan.policy.WriteDirs
	}
	if ns.mount {
		for _, name := range protectedNames {
			plan.SandboxReadOnly = append(plan.SandboxReadOnly, filepath.Join(w.rootPath, name))
		}
	}
	// Either network layer closes every way out on its own; Landlock's TCP
	// rules (ABI 4+) alone would leave UDP open.
	plan.NoNetwork = !network && (ns.net || f.Seccomp)
	var notes []string
	if len(missing) > 0 {
		plan.Sandbox = SandboxPartial
		var loss []string
		for _, l := range missing {
			loss = append(loss, layerLoss[l])
		}
		notes = append(notes, "best-effort sandbox without "+strings.Join(reasons, "; ")+": "+strings.Join(loss, "; "))
		if ns.mount && !ns.pid {
			notes = append(notes, "an empty placeholder made for a missing .git or .harness is left in place after the command")
		}
		if !network && !ns.net && !f.Seccomp {
			if f.LandlockABI >= 4 {
				notes = append(notes, "only TCP is closed (Landlock); UDP and other sockets are open")
			} else {
				notes = append(notes, "the network is open")
			}
		}
	}
	if network {
		notes = append(notes, "the network is open to "+plan.Argv[0]+" by configuration (network_commands): no network namespace, IP and netlink sockets allowed")
	}
	plan.SandboxNote = strings.Join(notes, "; ")
	if len(missing) > 0 {
		logNote()
	}
	return nil
}

// checkProtectable refuses, when the command is planned, what
// holdProtected would refuse when it runs: a protected name that is a
// symlink or a special file, which the sandbox cannot keep a command from
// replacing.
func (w *Workspace) checkProtectable() error {
	for _, name := range protectedNames {
		fi, err := w.root.Lstat(name)
		if err != nil || fi.IsDir() || fi.Mode().IsRegular() {
			continue
		}
		e := action.Errorf(action.CodeCommandNotAllowed,
			"%s in the workspace is not a directory or a file: the sandbox cannot keep a command from replacing it, so no command runs until it is a directory, a file or absent", name)
		e.Payload = map[string]any{"path": name}
		return e
	}
	return nil
}

// sandboxFields adds the sandbox of the plan to a preview or payload.
func (p CommandPlan) sandboxFields(m map[string]any) {
	m["sandbox"] = p.Sandbox
	m["no_network"] = p.NoNetwork
	if p.SandboxNote != "" {
		m["sandbox_note"] = p.SandboxNote
	}
	if p.Sandbox == SandboxNone {
		return
	}
	m["sandbox_layers"] = p.SandboxLayers
	if len(p.SandboxMissing) > 0 {
		m["sandbox_missing"] = p.SandboxMissing
	}
}
