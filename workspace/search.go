package workspace

import (
	"context"

	"github.com/harness-runtime/harness/action"
)

func (w *Workspace) searchText(ctx context.Context, in map[string]any) (map[string]any, error) {
	return nil, action.Errorf(action.CodeInternal, "workspace_search_text is not built yet")
}
