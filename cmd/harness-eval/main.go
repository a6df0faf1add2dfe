// Command harness-eval runs Harness's fixed evaluation (package
// internal/eval) and prints its table: every scenario through the library,
// the HTTP service, the CLI and the MCP bridge. It exits 1 when any entry
// point differs, 2 when the evaluation cannot run. `make eval` runs it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/harness-runtime/harness/internal/eval"
)

func main() {
	eval.ServeMCPIfAsked()
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "harness-eval-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness-eval:", err)
		return 2
	}
	defer os.RemoveAll(dir)
	opts, err := eval.NewOptions(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness-eval:", err)
		return 2
	}
	start := time.Now()
	rep, err := eval.Run(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness-eval:", err)
		return 2
	}
	fmt.Printf("Harness fixed evaluation: %d scenarios through %d entry points (%.1fs)\n\n", len(rep.Rows), len(rep.Entries), time.Since(start).Seconds())
	rep.WriteTable(os.Stdout)
	if len(rep.Differences()) > 0 {
		return 1
	}
	return 0
}
