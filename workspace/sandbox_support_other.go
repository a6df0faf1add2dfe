//go:build !linux

package workspace

func probeSandbox() SandboxFeatures {
	const why = "the command sandbox exists only on Linux"
	return SandboxFeatures{Missing: map[string]string{
		SandboxLayerLandlock: why, SandboxLayerUserNS: why, SandboxLayerPIDNS: why,
		SandboxLayerMountNS: why, SandboxLayerNetNS: why, SandboxLayerSeccomp: why,
	}}
}

func serviceIsRoot() bool { return false }
