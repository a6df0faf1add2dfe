package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"

	"github.com/harness-runtime/harness/action"
)

// cliDriver is the CLI binary: one `harness run ACTION --input JSON
// --config F [--tenant T] [--trusted]` per scenario, whose exit status
// must be the code table's for the observation it prints.
type cliDriver struct {
	opts Options
}

func (d *cliDriver) run(ctx context.Context, sc Scenario, s site) (answer, error) {
	args := []string{"run", sc.Action, "--input", sc.Input, "--config", s.config}
	if sc.Tenant != "" {
		args = append(args, "--tenant", sc.Tenant)
	}
	if sc.Trusted {
		args = append(args, "--trusted")
	}
	cmd := exec.CommandContext(ctx, d.opts.Harness, args...)
	cmd.Env = d.opts.Env
	cmd.Dir = s.dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return answer{}, err
	}
	o, derr := decode(out.Bytes())
	if derr != nil {
		return answer{}, fmt.Errorf("exit %d, stdout is not an observation (%v); stderr: %s", cmd.ProcessState.ExitCode(), derr, oneLine(errb.String()))
	}
	a := observed(o, direct)
	if got, want := cmd.ProcessState.ExitCode(), action.ExitFor(o.Status); got != want {
		a.Problems = append(a.Problems, fmt.Sprintf("exit %d for status %s, SPEC 4 says %d", got, o.Status, want))
	}
	return a, nil
}

func (d *cliDriver) close() error { return nil }
