package trusted

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

func pendingForNotice() runtime.PendingApproval {
	a := action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": ".env", "content": "API_KEY=sk-live-secret\n"}, SessionID: "s1", Tenant: "t1"}
	h, _ := a.Hash()
	return runtime.PendingApproval{
		Action: a, ActionHash: h, Principal: "alice", Preview: map[string]any{"diff": "+API_KEY=sk-live-secret"},
		Decision: action.Decision{Step: "rules", Rule: "ask-env", Outcome: "ask"},
	}
}

// TestApprovalNoticeNamesTheApprovalNeverItsContent: a new approval is
// announced to the hook with its id, action, principal, rule and console
// link, and nothing of its input or preview.
func TestApprovalNoticeNamesTheApprovalNeverItsContent(t *testing.T) {
	got := make(chan []byte, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "POST", r.Method)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer hook.Close()
	n, err := NewNotifier(hook.URL+"/hooks/abc", "https://harness.example/console/", nil)
	require.NoError(t, err)
	defer n.Close()
	s := NotifyingApprovals(NewMemoryApprovals(0, 0), n)
	ap, err := s.Request(context.Background(), pendingForNotice())
	require.NoError(t, err)

	var body []byte
	select {
	case body = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("no notice")
	}
	var notice map[string]any
	require.NoError(t, json.Unmarshal(body, &notice))
	require.Equal(t, "approval_requested", notice["event"])
	require.Equal(t, ap.ID, notice["approval_id"])
	require.Equal(t, "workspace_apply_patch", notice["action"])
	require.Equal(t, "alice", notice["principal"])
	require.Equal(t, "ask-env", notice["rule"])
	require.Equal(t, "https://harness.example/console/#"+ap.ID, notice["console"])
	require.NotContains(t, string(body), "sk-live-secret")
	require.NotContains(t, string(body), "preview")
	require.NotContains(t, string(body), "token")
}

// TestApprovalNoticeNeverHoldsTheActionUp: a hook that does not answer
// delays no request, and a full queue drops notices instead of waiting.
func TestApprovalNoticeNeverHoldsTheActionUp(t *testing.T) {
	release := make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hook.Close()
	defer close(release)
	n, err := NewNotifier(hook.URL, "", nil)
	require.NoError(t, err)
	defer n.Close()
	s := NotifyingApprovals(NewMemoryApprovals(0, 0), n)
	start := time.Now()
	for range notifyQueue + 50 {
		_, err := s.Request(context.Background(), pendingForNotice())
		require.NoError(t, err)
	}
	require.Less(t, time.Since(start), 3*time.Second)
	list, err := s.List(context.Background(), ApprovalPending)
	require.NoError(t, err)
	require.Len(t, list, notifyQueue+50, "every approval is stored whatever the hook does")
}

func TestNewNotifierRefusesWhatIsNotAnHTTPURL(t *testing.T) {
	for _, u := range []string{"", "ftp://x/y", "hooks.example/x", "http://"} {
		_, err := NewNotifier(u, "", nil)
		require.Error(t, err, u)
		require.False(t, strings.Contains(err.Error(), "secret"))
	}
}
