package ahp

import (
	"encoding/json"
	"strconv"
)

// Governance is what an event records of a session's governance: its
// counters and, for each configured budget, what remains of it. The
// counters are those of the session's key (By), across every replica that
// shares the store.
type Governance struct {
	// By names the key of the counters: "session" (the action's tenant
	// and session_id) or "principal" (its principal and tenant, for
	// actions without a session_id).
	By string `json:"by"`
	// ActionHash is the action's canonical hash, in the records of an
	// action whose failure or refusal the repeat checks counted, or that
	// they refused as repeated. Counters shared between replicas (Redis)
	// compare canonical hashes, so there the records of every action the
	// checks compared carry it: every action that changes something, and a
	// read issued while a failing streak was open. Counters in one
	// process's memory compare a cheaper keyed hash of the same canonical
	// form, which no record carries. A read that succeeds in a session
	// without a failing streak is compared with nothing and carries no
	// hash.
	ActionHash string `json:"action_hash,omitempty"`
	// Counted reports whether this action counts against the budgets: it
	// was admitted in phase direct or execute (a preview is checked, not
	// counted; its execute is).
	Counted             bool  `json:"counted"`
	Actions             int64 `json:"actions"`
	Errors              int64 `json:"errors"`
	ConsecutiveErrors   int64 `json:"consecutive_errors"`
	Refusals            int64 `json:"refusals"`
	ConsecutiveRefusals int64 `json:"consecutive_refusals"`
	Risk                int64 `json:"risk"`
	WallMS              int64 `json:"wall_ms"`
	BytesWritten        int64 `json:"bytes_written"`
	BytesRead           int64 `json:"bytes_read"`
	CommandMS           int64 `json:"command_ms"`
	// Repeats is how many times in a row the last changing action was
	// issued; FailingRepeats how many times the last failing action failed
	// the same way.
	Repeats        int64 `json:"repeats"`
	FailingRepeats int64 `json:"failing_repeats"`
	// Remaining is what is left of each configured budget.
	Remaining Remaining `json:"remaining,omitzero"`
}

// IsZero reports whether g records nothing (no governance): events then
// leave it out.
func (g Governance) IsZero() bool { return g.By == "" }

// Budgets are the names of the budgets Remaining holds, in the order
// halts name them.
var Budgets = [...]string{"max-actions", "max-risk", "max-errors", "max-consecutive-errors", "max-wall-seconds", "max-bytes-written"}

// Remaining maps each configured budget (one of Budgets) to what is left
// of it (0 when spent); budgets that are not set are absent. Its JSON is
// an object {"max-actions": 3, …}. The zero value holds none. It is a
// value, not a map, so that recording it costs no allocation.
type Remaining struct {
	set  uint8
	left [len(Budgets)]int64
}

func budgetIndex(name string) int {
	for i, b := range Budgets {
		if b == name {
			return i
		}
	}
	return -1
}

// Set records what is left of budget name; an unknown name is ignored.
func (r *Remaining) Set(name string, left int64) {
	if i := budgetIndex(name); i >= 0 {
		r.set |= 1 << i
		r.left[i] = left
	}
}

// SetIndex records what is left of Budgets[i]; an index out of range is
// ignored.
func (r *Remaining) SetIndex(i int, left int64) {
	if i >= 0 && i < len(Budgets) {
		r.set |= 1 << i
		r.left[i] = left
	}
}

// Get returns what is left of budget name, and whether it is set.
func (r Remaining) Get(name string) (int64, bool) {
	i := budgetIndex(name)
	if i < 0 || r.set&(1<<i) == 0 {
		return 0, false
	}
	return r.left[i], true
}

// IsZero reports whether no budget is set.
func (r Remaining) IsZero() bool { return r.set == 0 }

// Map returns the budgets that are set and what is left of them.
func (r Remaining) Map() map[string]int64 {
	m := make(map[string]int64, len(Budgets))
	for i, b := range Budgets {
		if r.set&(1<<i) != 0 {
			m[b] = r.left[i]
		}
	}
	return m
}

// MarshalJSON writes the budgets that are set, in the order of Budgets.
func (r Remaining) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, name := range Budgets {
		if r.set&(1<<i) == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, name)
		b = append(b, ':')
		b = strconv.AppendInt(b, r.left[i], 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes; budgets this version does
// not know are ignored.
func (r *Remaining) UnmarshalJSON(data []byte) error {
	var m map[string]int64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*r = Remaining{}
	for k, v := range m {
		r.Set(k, v)
	}
	return nil
}

func (g *Governance) canonicalValue() map[string]any {
	m := map[string]any{
		"by": g.By, "counted": g.Counted, "actions": g.Actions, "errors": g.Errors,
		"consecutive_errors": g.ConsecutiveErrors, "refusals": g.Refusals,
		"consecutive_refusals": g.ConsecutiveRefusals, "risk": g.Risk, "wall_ms": g.WallMS,
		"bytes_written": g.BytesWritten, "bytes_read": g.BytesRead, "command_ms": g.CommandMS,
		"repeats": g.Repeats, "failing_repeats": g.FailingRepeats,
	}
	setNonEmpty(m, "action_hash", g.ActionHash)
	if !g.Remaining.IsZero() {
		r := make(map[string]any, len(Budgets))
		for k, v := range g.Remaining.Map() {
			r[k] = v
		}
		m["remaining"] = r
	}
	return m
}

// Redaction says how many secrets were replaced by markers in what the
// model got back, and the distinct markers (at most MaxRedactionMarkers),
// so that an operator can see which secret reached a tool's output
// without seeing the secret.
type Redaction struct {
	Count   int      `json:"count"`
	Markers []string `json:"markers,omitempty"`
}

// MaxRedactionMarkers bounds the markers a Redaction lists.
const MaxRedactionMarkers = 32

func (r *Redaction) canonicalValue() map[string]any {
	m := map[string]any{"count": r.Count}
	if len(r.Markers) > 0 {
		m["markers"] = r.Markers
	}
	return m
}
