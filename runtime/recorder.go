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

// RecordAll implements BatchRecorder: in one write when the log can (a
// JSONL file), else one append each, in order.
func (r auditRecorder) RecordAll(ctx context.Context, evs []ahp.Event, durable bool) error {
	if b, ok := r.log.(audit.BatchAppender); ok {
		all := make([]any, len(evs))
		for i := range evs {
			all[i] = &evs[i]
		}
		_, err := b.AppendAll(ctx, all, durable)
		return err
	}
	for _, ev := range evs {
		if _, err := r.log.Append(ctx, ev, durable); err != nil {
			return err
		}
	}
	return nil
}
