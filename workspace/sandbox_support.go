package workspace

import (
	"maps"
	"slices"
	"sync"
)

// SandboxFeatures is what the kernel (and the host around the service)
// offers the command sandbox, as measured by SandboxSupport.
type SandboxFeatures struct {
	// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
	LandlockABI int
	// UserNS: the service can make a user namespace. An unprivileged
	// service needs one to make the other namespaces (without it they
	// are missing too); a root service makes them without one.
	UserNS bool
	// PIDNS: a new PID namespace can be made and a private /proc mounted
	// in it (a container that masks parts of /proc makes the kernel refuse
	// that mount).
	PIDNS bool
	// MountNS: a new mount namespace can be made, with the descriptor-based
	// mount API (Linux 5.12+) for read-only binds.
	MountNS bool
	// NetNS: a new network namespace can be made.
	NetNS bool
	// Seccomp: the kernel filters system calls and the helper has a filter
	// for this architecture.
	Seccomp bool
	// Missing says, for each layer (SandboxLayer*) that is not available,
	// what the measurement found.
	Missing map[string]string
}

// Layers lists the available layers among SandboxLayerLandlock, UserNS,
// PIDNS, MountNS, NetNS and Seccomp, in that order. SandboxLayerNoCaps is
// not a kernel feature and is not listed.
func (f SandboxFeatures) Layers() []string {
	var out []string
	for _, l := range []struct {
		name string
		on   bool
	}{{SandboxLayerLandlock, f.LandlockABI > 0}, {SandboxLayerUserNS, f.UserNS}, {SandboxLayerPIDNS, f.PIDNS},
		{SandboxLayerMountNS, f.MountNS}, {SandboxLayerNetNS, f.NetNS}, {SandboxLayerSeccomp, f.Seccomp}} {
		if l.on {
			out = append(out, l.name)
		}
	}
	return out
}

var sandboxSupportOnce = sync.OnceValue(probeSandbox)

// SandboxSupport measures, once per process, which layers of the command
// sandbox this kernel and host offer: the Landlock ABI, user, PID, mount and
// network namespaces (by actually making each, in a child that then fails
// to exec a path that does not exist, so nothing runs), and seccomp. The
// result is what the first call saw; later changes of the host (a sysctl
// that forbids user namespaces) show as a failure of the command itself,
// never as a command run with less than its plan says.
//
// Options.Sandbox decides what happens with what is missing: required
// refuses every command, best-effort runs with the layers there are and
// names the others in the observation.
func SandboxSupport() SandboxFeatures {
	f := sandboxSupportOnce()
	f.Missing = maps.Clone(f.Missing)
	return f
}

// sandboxTestMissing, when set by a test, pretends that the layers it names
// are missing (with the given reasons), so that each degraded mode can be
// tested on a kernel that has everything.
var sandboxTestMissing struct {
	sync.Mutex
	layers map[string]string
}

// currentSandboxSupport is SandboxSupport with the test mask applied.
func currentSandboxSupport() SandboxFeatures {
	f := SandboxSupport()
	sandboxTestMissing.Lock()
	defer sandboxTestMissing.Unlock()
	for l, why := range sandboxTestMissing.layers {
		f = f.without(l, why)
	}
	return f
}

// without returns f with layer marked missing, and the layers that depend
// on it: without a user namespace an unprivileged service makes no
// namespace; a private /proc needs the mount namespace.
func (f SandboxFeatures) without(layer, why string) SandboxFeatures {
	if f.Missing == nil {
		f.Missing = map[string]string{}
	}
	if !slices.Contains(f.Layers(), layer) {
		return f
	}
	f.Missing[layer] = why
	switch layer {
	case SandboxLayerLandlock:
		f.LandlockABI = 0
	case SandboxLayerUserNS:
		f.UserNS = false
		if !serviceIsRoot() {
			for _, l := range []string{SandboxLayerPIDNS, SandboxLayerMountNS, SandboxLayerNetNS} {
				f = f.without(l, "needs a user namespace, which is missing")
			}
		}
	case SandboxLayerPIDNS:
		f.PIDNS = false
	case SandboxLayerMountNS:
		f.MountNS = false
		f = f.without(SandboxLayerPIDNS, "a private /proc needs the mount namespace, which is missing")
	case SandboxLayerNetNS:
		f.NetNS = false
	case SandboxLayerSeccomp:
		f.Seccomp = false
	}
	return f
}
