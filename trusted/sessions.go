package trusted

import (
	"context"
	"net/http"
	"strconv"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
)

// SessionResetter forgets a session's governance counters, so that its
// budgets start again (*policy.Governor implements it).
type SessionResetter interface {
	Reset(ctx context.Context, key policy.SessionKey) error
}

// postSessionReset is POST /v1/sessions/{id}/reset (permission admin):
// the session is the path's id in the tenant of the query, or, for a key
// bound to a tenant, in that tenant only.
func (s *Server) postSessionReset(w http.ResponseWriter, r *http.Request, k *Key) {
	if s.sessions == nil {
		WriteError(w, http.StatusNotFound, string(action.CodeNotFound), "this server keeps no governance counters")
		return
	}
	id, tenant := r.PathValue("id"), r.URL.Query().Get("tenant")
	if t := k.Principal.Tenant; t != "" {
		if tenant != "" && tenant != t {
			WriteError(w, http.StatusForbidden, string(action.CodeTenantNotAllowed), "principal "+k.Principal.Name+" may not act for tenant "+strconv.Quote(tenant))
			return
		}
		tenant = t
	}
	if err := s.sessions.Reset(r.Context(), policy.SessionKey{Tenant: tenant, Session: id}); err != nil {
		s.log.Error("http: session reset failed", "err", err)
		WriteError(w, http.StatusInternalServerError, string(action.CodeInternal), "internal error")
		return
	}
	s.log.Info("governance: session reset", "principal", k.Principal.Name, "tenant", tenant)
	WriteJSON(w, http.StatusOK, map[string]any{"session_id": id, "tenant": tenant, "reset": true})
}
