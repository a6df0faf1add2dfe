package workspace

import (
	"context"

	"github.com/harness-runtime/harness/action"
)

// Preview says what an action would do without doing it, for a person to
// approve: for patches the unified diff and the SHA-256 of every file it
// touches (as they are now), for commands the argv after tokenizing, the
// working directory, the limits and the sandbox; read-only actions preview
// as their input. Nothing is written or run.
func (w *Workspace) Preview(ctx context.Context, a action.Action) (map[string]any, error) {
	switch a.Name {
	case "workspace_apply_patch", "workspace_propose_patch":
		plan, err := w.PlanPatch(ctx, a.Input)
		if err != nil {
			return nil, err
		}
		return plan.Payload(false), nil
	case "workspace_run_shell":
		cmd, _, err := strArg(a.Input, "command")
		if err != nil {
			return nil, err
		}
		plan, err := w.PlanCommand(cmd)
		if err != nil {
			return nil, err
		}
		return plan.Preview(), nil
	case "workspace_list_files", "workspace_read_file", "workspace_search_text":
		return map[string]any{"action": a.Name, "input": a.Input, "writes": false}, nil
	}
	return nil, action.Errorf(action.CodeUnknownAction, "workspace has no action %q", a.Name)
}
