package action

import "context"

// FileState is what a plan expects of one workspace path when it runs:
// that it exists or not and, for a regular file, the SHA-256 of its
// content. With Tree set, SHA256 is instead a fingerprint of the whole tree
// beneath Path (every entry's name, kind, size, inode and change time),
// which no write can keep unchanged.
type FileState struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	SHA256 string `json:"sha256,omitempty"`
	Tree   bool   `json:"tree,omitempty"`
}

// Plan is what an action will do, computed without doing it: the preview
// a person approves, and the state of the files it depends on. A token or
// an approval stores the plan's preconditions with the action; when it is
// redeemed the runtime runs the action only while every precondition
// holds, checked under the same locks as the write (else stale_preview).
type Plan struct {
	Preview       map[string]any
	Preconditions []FileState
}

type preconditionsKey struct{}

// WithPreconditions returns a context under which a runtime runs an action
// only if every state in pre still holds (the trusted flow's execute sets
// it from the redeemed token).
func WithPreconditions(ctx context.Context, pre []FileState) context.Context {
	return context.WithValue(ctx, preconditionsKey{}, pre)
}

// PreconditionsFrom returns the states set by WithPreconditions; ok is
// false when none were set (a direct call).
func PreconditionsFrom(ctx context.Context) (pre []FileState, ok bool) {
	pre, ok = ctx.Value(preconditionsKey{}).([]FileState)
	return pre, ok
}
