package runtime

import (
	"context"

	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/audit"
)

// AuditRecorder adapts an audit log to the dispatcher's Recorder.
func AuditRecorder(log audit.Appender) Recorder { return auditRecorder{log} }

type auditRecorder struct{ log audit.Appender }

func (r auditRecorder) Record(ctx context.Context, ev ahp.Event, durable bool) error {
	_, err := r.log.Append(ctx, ev, durable)
	return err
}
