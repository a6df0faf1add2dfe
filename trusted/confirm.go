package trusted

import (
	"context"

	"github.com/harness-runtime/harness/action"
)

// RecordConfirmation writes the audit record of a person's confirmation
// of a, previewed for principal p (token is the preview's one-time token)
// and confirmed through an MCP client's elicitation (method mcp): an
// approval record, event approved, scope once, naming the client the
// person answered through as the approver, the action's canonical hash,
// and the action_id the token's run will carry. It returns the record's
// approval id. The record is durable before it returns; an error means
// the action must not run.
func (s *Service) RecordConfirmation(ctx context.Context, p Principal, a action.Action, token, client string) (string, error) {
	if s.audit == nil {
		return "", nil
	}
	hash, err := a.Hash()
	if err != nil {
		return "", err
	}
	id, err := newApprovalID()
	if err != nil {
		return "", &action.Error{Code: action.CodeInternal, Message: "cannot name the confirmation", Err: err}
	}
	now := s.now().UTC()
	if client == "" {
		client = "mcp"
	}
	var actionID string
	if wellFormed(token) {
		actionID = runID(TokenID(token))
	}
	rec := ApprovalRecord{
		ActionID: actionID,
		Kind:     "approval", Event: "approved", ApprovalID: id, Action: a.Name, ActionHash: hash,
		Principal: p.Name, Tenant: p.Tenant, SessionID: a.SessionID, TaskID: a.TaskID,
		Approver: client, Scope: "once", Method: MethodMCP, Time: now, ExpiresAt: now,
	}
	if _, err := s.audit.Append(context.WithoutCancel(ctx), rec, true); err != nil {
		return "", &action.Error{Code: action.CodeInternal, Message: "the audit log cannot record the confirmation, so the action does not run", Err: err}
	}
	return id, nil
}
