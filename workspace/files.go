package workspace

import (
	"context"

	"github.com/harness-runtime/harness/action"
)

func (w *Workspace) listFiles(ctx context.Context, in map[string]any) (map[string]any, error) {
	return nil, action.Errorf(action.CodeInternal, "workspace_list_files is not built yet")
}

func (w *Workspace) readFile(ctx context.Context, in map[string]any) (map[string]any, error) {
	return nil, action.Errorf(action.CodeInternal, "workspace_read_file is not built yet")
}
