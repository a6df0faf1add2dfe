package runtime

import (
	"context"
	"slices"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/policy"
)

// Observer is told of every action Execute decided, with the guard's
// request (its phase, its schema, what the governance step reserved) and
// the observation, before the post_action event is emitted and the caller
// gets the observation: it may change the observation (redact it) and
// count it (policy.Governor). It changes a payload by replacing its values,
// never by writing into one: a value may be shared with later calls (see
// action.WithReadOnlyPayload). It runs on every action, so it must be
// quick; it must not keep obs.
type Observer interface {
	Observe(ctx context.Context, req *policy.Request, obs *action.Observation)
}

// Observers calls each observer in order.
type Observers []Observer

// Observe implements Observer.
func (list Observers) Observe(ctx context.Context, req *policy.Request, obs *action.Observation) {
	for _, o := range list {
		o.Observe(ctx, req, obs)
	}
}

// RedactedKey is the observation payload key under which
// RedactObservations says what it redacted (an ahp.Redaction: how many
// secrets, and their markers); a runtime's own value under that key is
// replaced.
const RedactedKey = "redacted"

// RedactObservations returns the observer of harness.redact-observations:
// the observation's payload and message go through s (ValueReport,
// StringReport), so that every secret a tool printed or a file held
// reaches the model as its "hmac-sha256:…" marker, and the payload says
// under RedactedKey how many secrets s replaced and by which markers (the
// post_action record carries the same). s should not truncate
// (sanitize.Options.MaxString -1): what the runtime already capped is the
// model's to see.
//
// What the sanitizer does not recognise passes (see package sanitize); a
// redacted file's content no longer matches its sha256. The approval
// preview of an action that waits for a person is not redacted, nor is
// the observation of an action decided by a rule with redact: false
// (policy.Rule.Unredacted, Request.Unredacted): a deployment's way to
// show a trusted fixture to the model as written.
func RedactObservations(s Redactor) Observer { return redactor{s} }

// Redactor is what RedactObservations needs of a sanitizer (package
// sanitize's): Value and String that tell report each marker they put in,
// one call per secret replaced.
type Redactor interface {
	ValueReport(v any, sensitive []string, report func(marker string)) any
	StringReport(s string, report func(marker string)) string
}

type redactor struct{ s Redactor }

func (r redactor) Observe(_ context.Context, req *policy.Request, obs *action.Observation) {
	if req != nil && req.Unredacted != "" {
		return
	}
	var red ahp.Redaction
	note := func(marker string) {
		red.Count++
		if len(red.Markers) < ahp.MaxRedactionMarkers && !slices.Contains(red.Markers, marker) {
			red.Markers = append(red.Markers, marker)
		}
	}
	if obs.Payload != nil {
		obs.Payload, _ = r.s.ValueReport(obs.Payload, nil, note).(map[string]any)
	}
	obs.Message = r.s.StringReport(obs.Message, note)
	if red.Count == 0 {
		return
	}
	if obs.Payload == nil {
		obs.Payload = map[string]any{}
	}
	obs.Payload[RedactedKey] = red
}
