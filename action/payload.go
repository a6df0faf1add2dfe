package action

import "context"

type readOnlyPayloadKey struct{}

// WithReadOnlyPayload returns a context under which a runtime may return
// payload values that it shares with later calls, such as the entries of
// a listing its cache answered, instead of a copy of its own for each
// call. Set it only where every holder of the observation reads its
// payload and never changes a value of it in place: the caller, and every
// observer the payload passes through (see runtime.Observer). The MCP
// bridge sets it, since it only renders and encodes what it gets back.
func WithReadOnlyPayload(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyPayloadKey{}, true)
}

// ReadOnlyPayload reports whether ctx was made by WithReadOnlyPayload.
func ReadOnlyPayload(ctx context.Context) bool {
	ro, _ := ctx.Value(readOnlyPayloadKey{}).(bool)
	return ro
}
