package runtime

import (
	"context"
	"strings"
	"unsafe"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/policy"
)

// Observer is told of every action Execute decided, with the guard's
// request (its phase, its schema, what the governance step reserved) and
// the observation, before the post_action event is emitted and the caller
// gets the observation: it may change the observation (redact it) and
// count it (policy.Governor). It runs on every action, so it must be quick;
// it must not keep obs.
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

// markerPrefix starts every marker the sanitizer writes
// (sanitize.MarkerPrefix), and markerLen is a marker's length.
const (
	markerPrefix = "hmac-sha256:"
	markerLen    = len(markerPrefix) + 64
)

// RedactObservations returns the observer of harness.redact-observations:
// the observation's payload and message go through s (Value, String), so
// that every secret a tool printed or a file held reaches the model as its
// "hmac-sha256:…" marker, and the payload says under RedactedKey how many
// secrets were replaced and by which markers (the post_action record
// carries the same). s should not truncate (sanitize.Options.MaxString
// -1): what the runtime already capped is the model's to see.
//
// What the sanitizer does not recognise passes (see package sanitize); a
// redacted file's content no longer matches its sha256. The approval
// preview of an action that waits for a person is not redacted, nor is
// the observation of an action decided by a rule with redact: false
// (policy.Rule.Unredacted, Request.Unredacted): a deployment's way to
// show a trusted fixture to the model as written.
func RedactObservations(s Sanitizer) Observer { return redactor{s} }

type redactor struct{ s Sanitizer }

func (r redactor) Observe(_ context.Context, req *policy.Request, obs *action.Observation) {
	if req != nil && req.Unredacted != "" {
		return
	}
	var red ahp.Redaction
	if obs.Payload != nil {
		out, _ := r.s.Value(obs.Payload, nil).(map[string]any)
		countNew(obs.Payload, out, &red)
		obs.Payload = out
	}
	if msg := r.s.String(obs.Message); !same(msg, obs.Message) {
		countString(obs.Message, msg, &red)
		obs.Message = msg
	}
	if red.Count == 0 {
		return
	}
	if obs.Payload == nil {
		obs.Payload = map[string]any{}
	}
	obs.Payload[RedactedKey] = red
}

// same reports whether a and b are one string (the sanitizer returns its
// input itself when nothing changed), without comparing their bytes.
func same(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b))
}

// countNew adds to red the markers in out that in did not hold: out is the
// sanitized copy of in, so the two are walked together and only strings
// the sanitizer changed are looked at.
func countNew(in, out any, red *ahp.Redaction) {
	switch o := out.(type) {
	case string:
		i, _ := in.(string)
		if !same(i, o) {
			countString(i, o, red)
		}
	case map[string]any:
		im, _ := in.(map[string]any)
		for k, v := range o {
			iv, ok := im[k]
			if !ok {
				// The key itself was redacted; its value is new too.
				countString("", k, red)
			}
			countNew(iv, v, red)
		}
	case []any:
		is, _ := in.([]any)
		for j, v := range o {
			var iv any
			if j < len(is) {
				iv = is[j]
			}
			countNew(iv, v, red)
		}
	case []string:
		is, _ := in.([]string)
		for j, v := range o {
			var iv string
			if j < len(is) {
				iv = is[j]
			}
			if !same(iv, v) {
				countString(iv, v, red)
			}
		}
	case map[string]string:
		im, _ := in.(map[string]string)
		for k, v := range o {
			if iv, ok := im[k]; !ok || !same(iv, v) {
				countString(iv, v, red)
			}
		}
	case action.Entries:
		is, _ := in.(action.Entries)
		for j, e := range o {
			var ie action.Entry
			if j < len(is) {
				ie = is[j]
			}
			for _, f := range [...][2]string{{ie.Path, e.Path}, {ie.Name, e.Name}, {ie.Type, e.Type}, {ie.ModTime, e.ModTime}} {
				if !same(f[0], f[1]) {
					countString(f[0], f[1], red)
				}
			}
		}
	}
}

// countString adds the markers of out beyond those already in in: one
// pass over each.
func countString(in, out string, red *ahp.Redaction) {
	had := strings.Count(in, markerPrefix)
	n := 0
	for rest := out; ; {
		i := strings.Index(rest, markerPrefix)
		if i < 0 {
			break
		}
		n++
		end := min(i+markerLen, len(rest))
		if m := rest[i:end]; len(m) == markerLen && len(red.Markers) < ahp.MaxRedactionMarkers &&
			!contains(red.Markers, m) && (had == 0 || !strings.Contains(in, m)) {
			red.Markers = append(red.Markers, strings.Clone(m))
		}
		rest = rest[end:]
	}
	red.Count += max(n-had, 0)
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
