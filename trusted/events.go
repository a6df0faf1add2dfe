package trusted

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/audit"
)

// PermAudit allows reading the audit log's events: a session's or task's
// replay and the live stream (SPEC section 5).
const PermAudit Permission = "agent:audit"

// Bounds of GET /v1/events.
const (
	// DefaultMaxStream is EventSource.MaxStream when it is zero.
	DefaultMaxStream = 30 * time.Minute
	// DefaultKeepAlive is EventSource.KeepAlive when it is zero.
	DefaultKeepAlive = 15 * time.Second
	// streamWriteTimeout bounds one write to a stream's client: one that
	// stops reading is cut off, not waited for.
	streamWriteTimeout = 10 * time.Second
)

// EventSource is what the event routes read: the audit log for replays
// and the hub of records as they are appended. Either may be nil; its
// routes then answer 404.
type EventSource struct {
	// Replay reads a session's or task's records back (GET
	// /v1/sessions/{id}/events, GET /v1/tasks/{id}/events): the audit
	// log itself (*audit.JSONL, *audit.Postgres).
	Replay audit.Replayer
	// Hub is where the audit log publishes what it appends (GET
	// /v1/events): the one it was opened WithHub.
	Hub *audit.Hub
	// MaxStream bounds one stream's life (DefaultMaxStream when 0): a
	// server-sent events client reconnects by itself.
	MaxStream time.Duration
	// KeepAlive is how often an idle stream gets a comment line
	// (DefaultKeepAlive when 0), so proxies keep it open and a client
	// that went away is noticed.
	KeepAlive time.Duration
}

// registerEventRoutes serves the replay and live event routes from src.
func (s *Server) registerEventRoutes(src EventSource) {
	if src.MaxStream <= 0 {
		src.MaxStream = DefaultMaxStream
	}
	if src.KeepAlive <= 0 {
		src.KeepAlive = DefaultKeepAlive
	}
	s.handle("GET", "/v1/sessions/{id}/events", PermAudit, false, s.replayEvents(src, "session"))
	s.handle("GET", "/v1/tasks/{id}/events", PermAudit, false, s.replayEvents(src, "task"))
	s.handle("GET", "/v1/events", PermAudit, false, s.streamEvents(src))
}

// eventsPage is the answer of the replay routes.
type eventsPage struct {
	// Events are the audit records, each as the log stores it.
	Events []audit.Record `json:"events"`
	// Next is the "after" of the next page; 0 when there was no more.
	Next uint64 `json:"next"`
}

// checkID refuses an id no record can carry.
func checkID(what, id string) error {
	if id == "" || len(id) > audit.MaxReplayID || !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 {
		return fmt.Errorf("%s: 1 to %d bytes of UTF-8 without NUL", what, audit.MaxReplayID)
	}
	return nil
}

// replayEvents is GET /v1/sessions/{id}/events and GET
// /v1/tasks/{id}/events (?after=N&limit=M): the records of the session
// or task after the cursor, in the order of the log. A key bound to a
// tenant reads only that tenant's records.
func (s *Server) replayEvents(src EventSource, kind string) keyHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) {
		if src.Replay == nil {
			WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "this server has no audit log to replay")
			return
		}
		id := r.PathValue("id")
		if err := checkID(kind+" id", id); err != nil {
			WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), err.Error())
			return
		}
		q := audit.Query{Tenant: k.Principal.Tenant, Limit: audit.DefaultReplayLimit}
		if kind == "session" {
			q.SessionID = id
		} else {
			q.TaskID = id
		}
		v := r.URL.Query()
		if a := v.Get("after"); a != "" {
			n, err := strconv.ParseUint(a, 10, 64)
			if err != nil {
				WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "after: a cursor (the next of a previous page), 0 or more")
				return
			}
			q.After = n
		}
		if l := v.Get("limit"); l != "" {
			n, err := strconv.Atoi(l)
			if err != nil || n < 1 || n > audit.MaxReplayLimit {
				WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), fmt.Sprintf("limit: 1 to %d", audit.MaxReplayLimit))
				return
			}
			q.Limit = n
		}
		page, err := src.Replay.Replay(r.Context(), q)
		switch {
		case err == nil:
		case r.Context().Err() != nil:
			return // the client went away
		case errors.Is(err, audit.ErrBadQuery):
			WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), err.Error())
			return
		case errors.Is(err, audit.ErrNoReplayColumns):
			s.log.Error("http: replay unavailable", "err", err)
			WriteError(w, http.StatusServiceUnavailable, CodeNotReady, "the audit table cannot be replayed until its owner opens it once")
			return
		default:
			s.log.Error("http: replay failed", "err", err)
			WriteError(w, http.StatusInternalServerError, string(action.CodeInternal), "internal error")
			return
		}
		out := eventsPage{Events: page.Events, Next: page.Next}
		if out.Events == nil {
			out.Events = []audit.Record{}
		}
		WriteJSON(w, http.StatusOK, out)
	}
}

// streamEvents is GET /v1/events (?session_id=&task_id=): the records
// appended from now on, as server-sent events, each "id: <seq>" and
// "data: <the record's JSON>". A key bound to a tenant sees only that
// tenant's records. The stream ends when the client goes, after
// MaxStream, when the server shuts the hub, or when the client reads too
// slowly to keep up: the hub then drops it, and the stream's last event
// is "event: dropped" (reconnect, and replay what was missed).
func (s *Server) streamEvents(src EventSource) keyHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) {
		if src.Hub == nil {
			WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "this server publishes no live events")
			return
		}
		v := r.URL.Query()
		filter := audit.Query{SessionID: v.Get("session_id"), TaskID: v.Get("task_id"), Tenant: k.Principal.Tenant}
		for name, id := range map[string]string{"session_id": filter.SessionID, "task_id": filter.TaskID} {
			if id == "" {
				continue
			}
			if err := checkID(name, id); err != nil {
				WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), err.Error())
				return
			}
		}
		sub, err := src.Hub.Subscribe()
		switch {
		case errors.Is(err, audit.ErrHubFull):
			w.Header().Set("Retry-After", "5")
			WriteError(w, http.StatusTooManyRequests, CodeRateLimited, "too many live event streams; retry")
			return
		case err != nil:
			WriteError(w, http.StatusServiceUnavailable, CodeNotReady, "live events are closed")
			return
		}
		defer sub.Close()

		// net/http lifts the read timeout once the request is read, and
		// still ends the request's context when the client goes; the
		// write deadline below replaces any write timeout per write.
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodHead {
			return
		}
		send := func(b []byte) bool {
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := w.Write(b); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		if !send([]byte(": harness live events\n\n")) {
			return
		}
		keep := time.NewTicker(src.KeepAlive)
		defer keep.Stop()
		end := time.NewTimer(src.MaxStream)
		defer end.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-end.C:
				return
			case <-keep.C:
				if !send([]byte(": keep-alive\n\n")) {
					return
				}
			case rec, ok := <-sub.C:
				if !ok {
					if sub.Dropped() {
						send([]byte("event: dropped\ndata: {\"code\":\"dropped\",\"message\":\"the stream fell behind; reconnect and replay what was missed\"}\n\n"))
					}
					return
				}
				if !filter.Matches(rec) {
					continue
				}
				data, err := rec.MarshalJSON()
				if err != nil {
					continue
				}
				// The record's JSON is one line: JSON escapes every line
				// break inside its strings.
				msg := make([]byte, 0, len(data)+32)
				msg = append(msg, "id: "...)
				msg = strconv.AppendUint(msg, rec.Seq, 10)
				msg = append(msg, "\ndata: "...)
				msg = append(append(msg, data...), "\n\n"...)
				if !send(msg) {
					return
				}
			}
		}
	}
}
