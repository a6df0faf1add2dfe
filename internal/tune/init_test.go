package tune_test

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/harness-runtime/harness/internal/tune"
)

// gcAtStart is the collector's target once package tune is initialised:
// this package's variables are initialised after it.
var gcAtStart = func() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}()

// gogcAtStart is GOGC as the process started with it.
var gogcAtStart = os.Getenv("GOGC")

func TestInitRaisesTheTargetAndAfterInitPutsItBack(t *testing.T) {
	if gogcAtStart != "" {
		if gcAtStart == tune.GCPercent && gogcAtStart != "400" {
			t.Errorf("with GOGC=%s set, init changed the GC percent to %d", gogcAtStart, gcAtStart)
		}
	} else if gcAtStart != tune.GCPercent {
		t.Errorf("while packages initialise the GC percent is %d, want %d", gcAtStart, tune.GCPercent)
	}
	prev := debug.SetGCPercent(tune.GCPercent)
	defer debug.SetGCPercent(prev)

	t.Setenv("GOGC", "")
	tune.AfterInit()
	if got := debug.SetGCPercent(tune.GCPercent); got != 100 {
		t.Errorf("after AfterInit the GC percent is %d, want Go's default 100", got)
	}

	t.Setenv("GOGC", "250")
	tune.AfterInit()
	if got := debug.SetGCPercent(100); got != tune.GCPercent {
		t.Errorf("with GOGC set AfterInit changed the GC percent to %d", got)
	}
}
