package workspace

import (
	"context"

	"github.com/harness-runtime/harness/action"
)

func (w *Workspace) proposePatch(ctx context.Context, in map[string]any) (map[string]any, error) {
	return nil, action.Errorf(action.CodeInternal, "workspace_propose_patch is not built yet")
}

func (w *Workspace) applyPatch(ctx context.Context, in map[string]any) (map[string]any, error) {
	return nil, action.Errorf(action.CodeInternal, "workspace_apply_patch is not built yet")
}
