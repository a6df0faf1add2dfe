package bridge_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/testkit"
	"github.com/harness-runtime/harness/mcp/bridge"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/trusted"
)

// awaitFlow runs approved plans as the bridge's principal.
type awaitFlow struct{ svc *trusted.Service }

func (f awaitFlow) Await(ctx context.Context, id string) (action.Observation, error) {
	return f.svc.AwaitApproval(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, id)
}

// approvalBridge serves a pipeline whose rule asks before patches to a
// client without elicitation, the bridge waiting wait for decisions.
func approvalBridge(t *testing.T, wait time.Duration) (*mcpclient.Client, *trusted.Service, string) {
	t.Helper()
	dir := testkit.Home(t)
	root := filepath.Join(dir, "root")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644))
	cfg, err := config.Parse("t.yaml", []byte("harness:\n  profile: dev\n  workspace: {root: "+root+"}\n  audit: {path: "+filepath.Join(dir, "audit.jsonl")+"}\n"+
		"  rules:\n    - {id: ask-writes, actions: [workspace_apply_patch], outcome: ask, reason: a person looks first}\n"))
	require.NoError(t, err)
	p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{Trusted: true})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	srv, err := bridge.NewServer(p.Harness, cfg, bridge.WithApprovals(awaitFlow{p.Trusted}, wait, "https://harness.example/console/"))
	require.NoError(t, err)
	cli, err := mcpclient.NewInProcessClient(srv.MCPServer())
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, cli.Start(ctx))
	_, err = cli.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpgo.Implementation{Name: "unit", Version: "1"}}})
	require.NoError(t, err)
	return cli, p.Trusted, root
}

func patchCall(t *testing.T, cli *mcpclient.Client) action.Observation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cli.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{
		Name: "workspace_apply_patch", Arguments: map[string]any{"path": "a.txt", "content": "TWO\n"}}})
	require.NoError(t, err)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var obs action.Observation
	require.NoError(t, json.Unmarshal(raw, &obs))
	return obs
}

// TestBridgeApprovalWaitsAndRunsOnRetry: a call a rule asks about answers
// with the approval's id and where to decide it; once a person approves,
// the same call again runs exactly the approved change; a denial is seen
// as approval_denied and nothing is written.
func TestBridgeApprovalWaitsAndRunsOnRetry(t *testing.T) {
	cli, svc, root := approvalBridge(t, 50*time.Millisecond)
	obs := patchCall(t, cli)
	require.Equal(t, action.StatusNeedsConfirmation, obs.Status, obs.Message)
	require.NotNil(t, obs.Approval)
	id := obs.Approval.ID
	assert.Contains(t, obs.Message, id)
	assert.Contains(t, obs.Message, "https://harness.example/console/")
	assert.Contains(t, obs.Message, "call the tool again")

	// Asked again before anyone decided: the same approval, not a new one.
	again := patchCall(t, cli)
	require.NotNil(t, again.Approval)
	assert.Equal(t, id, again.Approval.ID)
	pending, err := svc.ListApprovals(context.Background(), trusted.ApprovalPending)
	require.NoError(t, err)
	assert.Len(t, pending, 1, "one approval for the one call")

	_, err = svc.DecideApproval(context.Background(), id, trusted.Principal{Name: "reviewer"}, trusted.ApprovalDecision{Approve: true, Scope: "once", Method: "api"})
	require.NoError(t, err)
	obs = patchCall(t, cli)
	assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
	got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
	assert.Equal(t, "TWO\n", string(got))

	// A new call asks anew; denied, nothing is written.
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644))
	obs = patchCall(t, cli)
	require.NotNil(t, obs.Approval)
	require.NotEqual(t, id, obs.Approval.ID, "an approval runs once")
	_, err = svc.DecideApproval(context.Background(), obs.Approval.ID, trusted.Principal{Name: "reviewer"}, trusted.ApprovalDecision{Approve: false, Reason: "no", Method: "api"})
	require.NoError(t, err)
	obs = patchCall(t, cli)
	assert.Equal(t, action.CodeApprovalDenied, obs.Code, obs.Message)
	got, _ = os.ReadFile(filepath.Join(root, "a.txt"))
	assert.Equal(t, "one\n", string(got))
}

// TestBridgeApprovalDecidedDuringTheWait: a decision that comes while the
// call waits is answered in the same call.
func TestBridgeApprovalDecidedDuringTheWait(t *testing.T) {
	cli, svc, root := approvalBridge(t, 20*time.Second)
	go func() {
		for {
			pending, err := svc.ListApprovals(context.Background(), trusted.ApprovalPending)
			if err == nil && len(pending) == 1 {
				_, _ = svc.DecideApproval(context.Background(), pending[0].ID, trusted.Principal{Name: "reviewer"},
					trusted.ApprovalDecision{Approve: true, Scope: "once", Method: "console"})
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	obs := patchCall(t, cli)
	assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
	got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
	assert.Equal(t, "TWO\n", string(got))
}

// confirmFlow is the trusted flow harness mcp uses, recording each
// confirmation (or failing to, when fail is set).
type confirmFlow struct {
	svc  *trusted.Service
	fail bool
}

func (f confirmFlow) Preview(ctx context.Context, a action.Action) (map[string]any, string, error) {
	r, err := f.svc.Preview(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, a)
	return r.Preview, r.Token, err
}

func (f confirmFlow) Execute(ctx context.Context, token string) (action.Observation, error) {
	return f.svc.Execute(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, token)
}

func (f confirmFlow) RecordConfirmation(ctx context.Context, a action.Action, token, client string) (string, error) {
	if f.fail {
		return "", &action.Error{Code: action.CodeInternal, Message: "the audit log is full"}
	}
	return f.svc.RecordConfirmation(ctx, trusted.Principal{Name: bridge.DefaultPrincipal}, a, token, client)
}

type acceptAll struct{}

func (acceptAll) Elicit(context.Context, mcpgo.ElicitationRequest) (*mcpgo.ElicitationResult, error) {
	return &mcpgo.ElicitationResult{ElicitationResponse: mcpgo.ElicitationResponse{
		Action: mcpgo.ElicitationResponseActionAccept, Content: map[string]any{"confirm": true}}}, nil
}

// TestBridgeElicitationConfirmationIsAnApprovalRecord: a person's
// confirmation through the client's form is an approval record (method
// mcp, the client as the approver, the action's hash) written before the
// action runs; when it cannot be written, the action does not run.
func TestBridgeElicitationConfirmationIsAnApprovalRecord(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(map[bool]string{false: "recorded", true: "record fails"}[fail], func(t *testing.T) {
			dir := testkit.Home(t)
			root := filepath.Join(dir, "root")
			require.NoError(t, os.MkdirAll(root, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\n"), 0o644))
			auditPath := filepath.Join(dir, "audit.jsonl")
			cfg, err := config.Parse("t.yaml", []byte("harness:\n  profile: dev\n  workspace: {root: "+root+"}\n  audit: {path: "+auditPath+"}\n"+
				"  rules: []\n  mcp: {bridge: {trusted-actions: [workspace_apply_patch]}}\n"))
			require.NoError(t, err)
			p, err := pipeline.Open(context.Background(), cfg, pipeline.Options{Trusted: true})
			require.NoError(t, err)
			defer p.Close()
			srv, err := bridge.NewServer(p.Harness, cfg, bridge.WithTrustFlow(confirmFlow{svc: p.Trusted, fail: fail}))
			require.NoError(t, err)
			cli, err := mcpclient.NewInProcessClientWithOptions(srv.MCPServer(), mcpclient.WithElicitationHandler(acceptAll{}))
			require.NoError(t, err)
			defer cli.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, cli.Start(ctx))
			_, err = cli.Initialize(ctx, mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{ClientInfo: mcpgo.Implementation{Name: "unit", Version: "1"},
				Capabilities: mcpgo.ClientCapabilities{Elicitation: &mcpgo.ElicitationCapability{}}}})
			require.NoError(t, err)
			obs := patchCall(t, cli)
			got, _ := os.ReadFile(filepath.Join(root, "a.txt"))
			if fail {
				assert.Equal(t, action.CodeInternal, obs.Code, obs.Message)
				assert.Equal(t, "one\n", string(got), "ran without its confirmation's record")
				return
			}
			require.Equal(t, action.StatusOK, obs.Status, obs.Message)
			assert.Equal(t, "TWO\n", string(got))
			log, err := os.ReadFile(auditPath)
			require.NoError(t, err)
			var found bool
			for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
				var rec struct {
					Event trusted.ApprovalRecord `json:"event"`
				}
				require.NoError(t, json.Unmarshal([]byte(line), &rec))
				if rec.Event.Kind == "approval" {
					found = true
					assert.Equal(t, "approved", rec.Event.Event)
					assert.Equal(t, trusted.MethodMCP, rec.Event.Method)
					assert.Equal(t, "mcp:unit", rec.Event.Approver)
					assert.Equal(t, "workspace_apply_patch", rec.Event.Action)
					assert.NotEmpty(t, rec.Event.ActionHash)
					assert.Equal(t, obs.ActionID, rec.Event.ActionID, "the confirmation names the run it let through")
				}
			}
			assert.True(t, found, "no approval record for the confirmation")
		})
	}
}
