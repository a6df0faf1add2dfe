package trusted

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/harness-runtime/harness/action"
)

// permAnyKey is the permission of a route any authenticated key may call;
// the handler decides who sees what (GET /v1/approvals/{id}: the
// requester or an approver).
const permAnyKey Permission = "(any key)"

// registerApprovalRoutes serves the approvals API of SPEC section 5.
func (s *Server) registerApprovalRoutes() {
	s.handle("GET", "/v1/approvals", PermApprove, false, s.listApprovals)
	s.handle("GET", "/v1/approvals/{id}", permAnyKey, false, s.getApproval)
	s.handle("POST", "/v1/approvals/{id}/approve", PermApprove, false, s.decideApproval(true))
	s.handle("POST", "/v1/approvals/{id}/deny", PermApprove, false, s.decideApproval(false))
}

// approvalStatus maps the approval service's refusals to HTTP: 404
// unknown, 409 already decided or expired, 403 self-approval, 400 bad
// input, 499/504 a wait cut short.
func approvalStatus(c action.Code) int {
	switch c {
	case action.CodeNotFound:
		return http.StatusNotFound
	case CodeAlreadyDecided, action.CodeApprovalExpired, action.CodeApprovalDenied:
		return http.StatusConflict
	case CodeSelfApproval:
		return http.StatusForbidden
	}
	return c.HTTPStatus()
}

// visibleTo reports whether k may see an approval of tenant: a key bound
// to a tenant sees that tenant's only.
func visibleTo(k *Key, tenant string) bool {
	return k.Principal.Tenant == "" || k.Principal.Tenant == tenant
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request, k *Key) {
	status := r.URL.Query().Get("status")
	if status == "all" {
		status = ""
	}
	list, err := s.svc.ListApprovals(r.Context(), status)
	if err != nil {
		s.writeActionError(w, err, approvalStatus)
		return
	}
	out := make([]ApprovalView, 0, len(list))
	for _, v := range list {
		if visibleTo(k, v.Tenant) {
			out = append(out, v)
		}
	}
	WriteJSON(w, http.StatusOK, map[string]any{"approvals": out})
}

// getApproval answers the requester and approvers: the approval, after
// waiting up to ?wait=SECONDS (at most MaxApprovalWait; the wait ends
// when the client goes away) for a decision. The requester's first poll
// of an approved approval carries the one-time token, when its key may
// redeem one (agent:trusted); anyone else gets 404.
func (s *Server) getApproval(w http.ResponseWriter, r *http.Request, k *Key) {
	wait := time.Duration(0)
	if q := r.URL.Query().Get("wait"); q != "" {
		n, err := strconv.ParseFloat(q, 64)
		if err != nil || n < 0 || n != n {
			WriteError(w, http.StatusBadRequest, string(action.CodeInvalidInput), "wait: a number of seconds, 0 to "+strconv.Itoa(int(MaxApprovalWait/time.Second)))
			return
		}
		wait = time.Duration(min(n, MaxApprovalWait.Seconds()) * float64(time.Second))
	}
	id := r.PathValue("id")
	v, err := s.svc.GetApproval(r.Context(), id)
	if err != nil {
		s.writeActionError(w, err, approvalStatus)
		return
	}
	mine := isRequester(k.Principal, v.Principal, v.Tenant)
	if !mine && !(k.Allows(PermApprove) && visibleTo(k, v.Tenant)) {
		WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "no such approval")
		return
	}
	if v.Status == ApprovalPending && wait > 0 {
		if v, err = s.svc.WaitApproval(r.Context(), id, wait); err != nil {
			if r.Context().Err() != nil {
				return // the client went away: nobody to answer
			}
			s.writeActionError(w, err, approvalStatus)
			return
		}
	}
	if mine && v.Status == ApprovalApproved && !v.Claimed && k.Allows(PermTrusted) {
		got, err := s.svc.ClaimApprovalToken(r.Context(), k.Principal, id)
		switch {
		case err == nil:
			v = got
		case errors.Is(err, ErrApprovalClaimed):
			v = got // another poll took it
		default:
			s.writeActionError(w, err, approvalStatus)
			return
		}
	}
	WriteJSON(w, http.StatusOK, v)
}

// decideApproval approves or denies; body {"scope": "once"|"session",
// "reason"} (both optional; a denial has no scope).
func (s *Server) decideApproval(approve bool) keyHandler {
	return func(w http.ResponseWriter, r *http.Request, k *Key) {
		var body struct {
			Scope  string `json:"scope"`
			Reason string `json:"reason"`
		}
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				WriteError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, "request body too large")
				return
			}
			WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "cannot read the request body")
			return
		}
		if len(bytes.TrimSpace(raw)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				writeDecodeError(w, err)
				return
			}
			if _, err := dec.Token(); err != io.EOF {
				WriteError(w, http.StatusBadRequest, CodeInvalidJSON, "trailing data after the JSON object")
				return
			}
		}
		id := r.PathValue("id")
		if cur, err := s.svc.GetApproval(r.Context(), id); err == nil && !visibleTo(k, cur.Tenant) {
			WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "no such approval")
			return
		}
		v, err := s.svc.DecideApproval(r.Context(), id, k.Principal,
			ApprovalDecision{Approve: approve, Scope: body.Scope, Reason: body.Reason, Method: MethodAPI})
		if err != nil {
			s.writeActionError(w, err, approvalStatus)
			return
		}
		WriteJSON(w, http.StatusOK, v)
	}
}
