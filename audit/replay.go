package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/harness-runtime/harness/action"
)

// Replay limits.
const (
	// DefaultReplayLimit is Query.Limit when it is zero.
	DefaultReplayLimit = 100
	// MaxReplayLimit is the most records one page holds; a larger
	// Query.Limit is lowered to it.
	MaxReplayLimit = 1000
	// MaxReplayID bounds Query.SessionID, TaskID and Tenant, in bytes.
	MaxReplayID = 512
)

// ErrBadQuery is returned (wrapped) by Replay for a query that names
// neither a session nor a task, or names one longer than MaxReplayID or
// not in UTF-8.
var ErrBadQuery = errors.New("audit: bad replay query")

// Query selects the records of one session or one task, in the order of
// the log, one page at a time.
type Query struct {
	// SessionID selects the records that carry this session_id: an AHP
	// event's own, or a record's top-level "session_id" (token records,
	// approvals), or its payload's.
	SessionID string
	// TaskID selects the records whose payload (or the record itself)
	// carries this task_id. With both set, a record must match both.
	TaskID string
	// Tenant, when set, keeps only the records of this tenant (the
	// record's "tenant" or its payload's): what a tenant-bound reader
	// may see. A record without a tenant is not one of its records.
	Tenant string
	// After is the cursor: only records after it are returned; 0 starts
	// at the beginning. Pass the previous Page.Next.
	After uint64
	// Limit bounds the records of the page: DefaultReplayLimit when 0,
	// at most MaxReplayLimit.
	Limit int
}

// Page is one page of a replay.
type Page struct {
	// Events are the matching records in the order of the log, each as
	// it is stored (its seq, hash and event), so a reader can check it.
	Events []Record
	// Next is the cursor for the next page (Query.After), or 0 when the
	// log held no more matching records when the page was read. A page
	// may hold fewer than Limit records (even none) and still have a
	// Next: a replay reads a bounded part of the log per call.
	Next uint64
}

// Replayer reads a session's or a task's records back from an audit log.
// *JSONL and *Postgres implement it.
//
// The cursor is a position in the log, not a record's seq in general: in a
// JSONL file it is the seq (the file holds one chain), in PostgreSQL it is
// the row's position in the table across every instance's chain (column
// pos), so a session served by several replicas replays as one.
type Replayer interface {
	Replay(ctx context.Context, q Query) (Page, error)
}

func (q Query) normalize() (Query, error) {
	if q.SessionID == "" && q.TaskID == "" {
		return q, errors.Join(ErrBadQuery, errors.New("name a session or a task"))
	}
	for name, v := range map[string]string{"session": q.SessionID, "task": q.TaskID, "tenant": q.Tenant} {
		if len(v) > MaxReplayID || !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return q, errors.Join(ErrBadQuery, errors.New(name+" id is longer than 512 bytes, not UTF-8 or holds a NUL"))
		}
	}
	switch {
	case q.Limit <= 0:
		q.Limit = DefaultReplayLimit
	case q.Limit > MaxReplayLimit:
		q.Limit = MaxReplayLimit
	}
	return q, nil
}

// needle is a string a record's text must hold to match q: the
// canonical JSON of its session id (or task id), which is how the value
// is written wherever it occurs in a record. It only rules records out;
// matches decides.
func (q Query) needle() []byte {
	id := q.SessionID
	if id == "" {
		id = q.TaskID
	}
	return action.AppendJSONString(nil, id)
}

// recordKeys are the values a query selects on, read from an event.
type recordKeys struct {
	session, task, tenant string
}

// keysOf reads session_id, task_id and tenant from an event: its own
// keys first, then its payload's. An event that is not an object (or a
// key that is not a string) has none.
func keysOf(event []byte) recordKeys {
	var top map[string]json.RawMessage
	if json.Unmarshal(event, &top) != nil {
		return recordKeys{}
	}
	var pl map[string]json.RawMessage
	if raw, ok := top["payload"]; ok {
		_ = json.Unmarshal(raw, &pl) // not an object: no payload keys
	}
	get := func(k string) string {
		for _, m := range []map[string]json.RawMessage{top, pl} {
			var s string
			if raw, ok := m[k]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
				return s
			}
		}
		return ""
	}
	return recordKeys{session: get("session_id"), task: get("task_id"), tenant: get("tenant")}
}

func (q Query) matches(k recordKeys) bool {
	return (q.SessionID == "" || k.session == q.SessionID) &&
		(q.TaskID == "" || k.task == q.TaskID) &&
		(q.Tenant == "" || k.tenant == q.Tenant)
}

// matchesText decides whether a record's event matches q, trying the
// cheap test first.
func (q Query) matchesText(event, needle []byte) bool {
	return bytes.Contains(event, needle) && q.matches(keysOf(event))
}

// Matches reports whether rec is one of the records q selects by its
// SessionID, TaskID and Tenant (After and Limit aside); a Query that sets
// none of them matches every record. It is how a live reader (see Hub)
// keeps to what a replay of the same query would return.
func (q Query) Matches(rec Record) bool {
	if q.SessionID == "" && q.TaskID == "" && q.Tenant == "" {
		return true
	}
	return q.matches(keysOf(rec.Event))
}
