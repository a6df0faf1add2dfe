package workspace

import (
	"context"

	"github.com/harness-runtime/harness/action"
)

func (w *Workspace) runShell(ctx context.Context, in map[string]any) (map[string]any, error) {
	if !w.opts.ShellEnabled {
		return nil, action.Errorf(action.CodeShellDisabled, "shell is disabled")
	}
	return nil, action.Errorf(action.CodeInternal, "workspace_run_shell is not built yet")
}
