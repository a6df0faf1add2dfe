// Package tune sets the Go runtime up for Harness's commands: a collector
// that stays out of the way while the program's packages initialise (see
// init), GC for harness serve and harness mcp, Procs for the HTTP service
// (harness serve, and harness-load's in-process server). Settings given in
// the environment (GOGC, GOMAXPROCS) always win.
package tune

import (
	"os"
	"runtime"
	"runtime/debug"
)

// GCPercent is the garbage collector's target: the services' live heap is
// a few megabytes, and collecting at 4x instead of 2x of it measured 25%
// less CPU per preview/execute pair (cmd/harness-load on tmpfs:
// 0.31 -> 0.24 ms).
const GCPercent = 400

// ProcsPerCPU is how many Go processors the HTTP service runs per CPU. Every
// action writes files and fsyncs the audit log: a goroutine blocked in
// such a system call (create, fsync, rename) keeps its processor until the
// runtime's monitor takes it back, which leaves CPUs idle while requests
// wait to run. With 4 per CPU, cmd/harness-load on this project's 2-core
// machine went from 1,312-1,544 to 1,825-1,954 pairs/s, at the same CPU
// per pair. The MCP bridge, which mostly answers one client a call at a
// time, keeps the default: there the extra processors only spin.
const ProcsPerCPU = 4

// init raises the collector's target to GCPercent while the program's
// packages initialise: between them they allocate about 4.5 MB, mostly
// the JSON Schema libraries compiling their meta-schemas, which at Go's
// default target (a 4 MB heap) costs two collections before main runs,
// 2-4 ms of a `harness patch` that took 24. Go initialises, of the
// packages whose dependencies are ready, the first by import path, and
// this one (its dependencies are the runtime's and os) sorts before those
// libraries (github.com/santhosh-tekuri, github.com/mark3labs), so it runs
// first. AfterInit puts the default back.
func init() { GC() }

// AfterInit ends the start-up setting of init: the collector's target is
// Go's default again (GC raises it for the commands that want it). A
// command's main calls it first.
func AfterInit() { setGCPercent(100) }

// GC applies GCPercent unless GOGC is set.
func GC() { setGCPercent(GCPercent) }

// setGCPercent sets the collector's target to p unless GOGC is set.
func setGCPercent(p int) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(p)
	}
}

// Procs applies ProcsPerCPU unless GOMAXPROCS is set.
func Procs() {
	if os.Getenv("GOMAXPROCS") == "" {
		// From the runtime's default (CPUs, or the container's CPU
		// limit), so that calling Procs again does not multiply.
		runtime.SetDefaultGOMAXPROCS()
		runtime.GOMAXPROCS(ProcsPerCPU * runtime.GOMAXPROCS(0))
	}
}
