package ahp

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harness-runtime/harness/action"
)

// AppendCanonical appends the canonical JSON of the event to b, exactly
// the bytes action.Canonical writes for e.CanonicalValue(), without
// building and sorting its maps: the audit log hashes every event twice
// per action. On error (a number in an input that JSON cannot hold) b is
// returned as it was. TestAppendCanonicalMatchesCanonicalValue holds the
// two together.
//
// Keys are written in the byte order canonical JSON sorts them in, and
// each field is left out exactly when CanonicalValue leaves it out.
func (e Event) AppendCanonical(b []byte) ([]byte, error) {
	out, err := e.appendCanonical(b)
	if err != nil {
		return b, err
	}
	return out, nil
}

func (e *Event) appendCanonical(b []byte) ([]byte, error) {
	b = appendStringField(b, `{"agent_id":`, e.AgentID)
	b = appendStringField(b, `,"ahp_version":`, e.Version)
	b = appendIntField(b, `,"depth":`, int64(e.Depth))
	b = appendStringField(b, `,"event_id":`, e.EventID)
	b = appendStringField(b, `,"event_type":`, string(e.EventType))
	b = append(b, `,"payload":`...)
	if e.Payload == nil {
		b = append(b, "null"...)
	} else {
		var err error
		if b, err = e.Payload.appendCanonical(b); err != nil {
			return b, err
		}
	}
	b = appendStringField(b, `,"session_id":`, e.SessionID)
	// RFC 3339 is digits and "-+:.TZ", nothing a JSON string escapes.
	b = append(b, `,"timestamp":"`...)
	b = e.Timestamp.AppendFormat(b, time.RFC3339Nano)
	return append(b, `"}`...), nil
}

func (p *ActionPayload) appendCanonical(b []byte) ([]byte, error) {
	var err error
	b = appendStringField(b, `{"action":`, p.Action)
	b = appendStringField(b, `,"action_id":`, p.ActionID)
	b = appendNonEmpty(b, `,"approval_id":`, p.ApprovalID)
	if d := p.Decision; d != nil {
		b = appendStringField(b, `,"decision":{"outcome":`, d.Outcome)
		b = appendNonEmpty(b, `,"reason":`, d.Reason)
		b = appendNonEmpty(b, `,"rule":`, d.Rule)
		b = appendStringField(b, `,"step":`, d.Step)
		b = append(b, '}')
	}
	if !p.Governance.IsZero() {
		b = append(b, `,"governance":`...)
		b = p.Governance.appendCanonical(b)
	}
	if p.Input != nil {
		b = append(b, `,"input":`...)
		if b, err = action.AppendCanonical(b, p.Input); err != nil {
			return b, err
		}
	}
	if p.ModifiedInput != nil {
		b = append(b, `,"modified_input":`...)
		if b, err = action.AppendCanonical(b, p.ModifiedInput); err != nil {
			return b, err
		}
	}
	if o := p.Observation; o != nil {
		b = append(b, `,"observation":`...)
		if b, err = o.appendCanonical(b); err != nil {
			return b, err
		}
	}
	b = appendNonEmpty(b, `,"phase":`, p.Phase)
	b = appendNonEmpty(b, `,"principal":`, p.Principal)
	b = appendNonEmpty(b, `,"step_id":`, p.StepID)
	b = appendNonEmpty(b, `,"task_id":`, p.TaskID)
	b = appendNonEmpty(b, `,"tenant":`, p.Tenant)
	b = append(b, `,"trusted":`...)
	b = strconv.AppendBool(b, p.Trusted)
	return append(b, '}'), nil
}

func (o *ObservationSummary) appendCanonical(b []byte) ([]byte, error) {
	b = appendStringField(b, `{"code":`, o.Code)
	b = append(b, `,"latency_ms":`...)
	// Through action: NaN and the infinities are errors there, and other
	// floats have its one spelling.
	b, err := action.AppendCanonical(b, o.LatencyMS)
	if err != nil {
		return b, err
	}
	b = appendNonEmpty(b, `,"message":`, o.Message)
	if len(o.PayloadKeys) > 0 {
		b = append(b, `,"payload_keys":`...)
		b = appendStrings(b, o.PayloadKeys)
	}
	if r := o.Redacted; r != nil {
		b = appendIntField(b, `,"redacted":{"count":`, int64(r.Count))
		if len(r.Markers) > 0 {
			b = append(b, `,"markers":`...)
			b = appendStrings(b, r.Markers)
		}
		b = append(b, '}')
	}
	b = appendStringField(b, `,"source":`, o.Source)
	b = appendStringField(b, `,"status":`, o.Status)
	return append(b, '}'), nil
}

func (g *Governance) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	if g.ActionHash != "" {
		b = appendStringField(b, `"action_hash":`, g.ActionHash)
		b = append(b, ',')
	}
	b = appendIntField(b, `"actions":`, g.Actions)
	b = appendStringField(b, `,"by":`, g.By)
	b = appendIntField(b, `,"bytes_read":`, g.BytesRead)
	b = appendIntField(b, `,"bytes_written":`, g.BytesWritten)
	b = appendIntField(b, `,"command_ms":`, g.CommandMS)
	b = appendIntField(b, `,"consecutive_errors":`, g.ConsecutiveErrors)
	b = appendIntField(b, `,"consecutive_refusals":`, g.ConsecutiveRefusals)
	b = append(b, `,"counted":`...)
	b = strconv.AppendBool(b, g.Counted)
	b = appendIntField(b, `,"errors":`, g.Errors)
	b = appendIntField(b, `,"failing_repeats":`, g.FailingRepeats)
	b = appendIntField(b, `,"refusals":`, g.Refusals)
	if !g.Remaining.IsZero() {
		b = append(b, `,"remaining":`...)
		b = g.Remaining.appendCanonical(b)
	}
	b = appendIntField(b, `,"repeats":`, g.Repeats)
	b = appendIntField(b, `,"risk":`, g.Risk)
	b = appendIntField(b, `,"wall_ms":`, g.WallMS)
	return append(b, '}')
}

// budgetsByName holds the indexes of Budgets in the byte order of their
// names, the order canonical JSON writes Remaining's keys in.
var budgetsByName = func() [len(Budgets)]int {
	var idx [len(Budgets)]int
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx[:], func(a, b int) int { return strings.Compare(Budgets[a], Budgets[b]) })
	return idx
}()

func (r *Remaining) appendCanonical(b []byte) []byte {
	b = append(b, '{')
	first := true
	for _, i := range budgetsByName {
		if r.set&(1<<i) == 0 {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = action.AppendJSONString(b, Budgets[i])
		b = append(b, ':')
		b = appendInt(b, r.left[i])
	}
	return append(b, '}')
}

// appendInt writes i as canonical JSON writes an integer. One beyond
// 2^53, which canonical JSON writes as the float64 nearest it, is left to
// action, which cannot fail on it.
func appendInt(b []byte, i int64) []byte {
	if i > 1<<53 || i < -(1<<53) {
		b, _ = action.AppendCanonical(b, i)
		return b
	}
	return strconv.AppendInt(b, i, 10)
}

// The key arguments below are written as they are: each is a JSON key
// (with its comma and colon) that needs no escape.

func appendIntField(b []byte, key string, i int64) []byte {
	return appendInt(append(b, key...), i)
}

func appendStringField(b []byte, key, s string) []byte {
	return action.AppendJSONString(append(b, key...), s)
}

// appendNonEmpty writes the field only if s is not empty, as setNonEmpty
// sets it.
func appendNonEmpty(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringField(b, key, s)
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = action.AppendJSONString(b, s)
	}
	return append(b, ']')
}
