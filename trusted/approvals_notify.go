package trusted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/runtime"
)

// Bounds of approval notices.
const (
	// notifyQueue bounds the notices waiting to be sent; beyond it a new
	// notice is dropped (and logged), never waited for.
	notifyQueue = 256
	// notifyTimeout bounds one delivery.
	notifyTimeout = 5 * time.Second
)

// ApprovalNotice is what a notification hook receives when an approval
// is created. It never holds the action's input, its preview or a token:
// a person follows Console to see and decide it.
type ApprovalNotice struct {
	Event      string    `json:"event"` // always "approval_requested"
	ApprovalID string    `json:"approval_id"`
	Action     string    `json:"action"`
	Principal  string    `json:"principal"`
	Tenant     string    `json:"tenant,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	Rule       string    `json:"rule,omitempty"`
	Step       string    `json:"step,omitempty"`
	ExpiresAt  time.Time `json:"expires_at"`
	Console    string    `json:"console,omitempty"`
}

// Notifier POSTs an ApprovalNotice to a hook for every approval requested
// through the store NotifyingApprovals wraps, from one goroutine, in
// order, best effort: a full queue drops the notice, a failed delivery is
// logged, and neither holds the action up. Close stops it.
type Notifier struct {
	url     string
	console string
	client  *http.Client
	log     *slog.Logger
	queue   chan ApprovalNotice
	ctx     context.Context // ended by Close: deliveries stop
	stop    context.CancelFunc
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex // guards closed against a send on the closed queue
	closed  bool
}

// NewNotifier starts a notifier posting to hook, linking to console (the
// console's base URL; empty: no link). A nil logger discards.
func NewNotifier(hook, console string, log *slog.Logger) (*Notifier, error) {
	u, err := url.Parse(hook)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("approval notices: %q is not an http(s) URL", redactURL(hook))
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	n := &Notifier{
		url: hook, console: console, client: &http.Client{Timeout: notifyTimeout}, log: log,
		queue: make(chan ApprovalNotice, notifyQueue), done: make(chan struct{}),
	}
	n.ctx, n.stop = context.WithCancel(context.Background())
	go n.run()
	return n, nil
}

func (n *Notifier) run() {
	defer close(n.done)
	for notice := range n.queue {
		if n.ctx.Err() != nil {
			continue // closing: what is queued is dropped
		}
		if err := n.deliver(notice); err != nil && n.ctx.Err() == nil {
			n.log.Warn("approvals: notice not delivered", "approval", notice.ApprovalID, "err", err)
		}
	}
}

func (n *Notifier) deliver(notice ApprovalNotice) error {
	body, err := json.Marshal(notice)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(n.ctx, notifyTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", n.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return fmt.Errorf("post: %w", stripURL(err))
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the hook answered %d", resp.StatusCode)
	}
	return nil
}

// stripURL keeps the hook's URL (which may hold its secret) out of logs.
func stripURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// notify queues a notice for st, or drops it when the queue is full.
func (n *Notifier) notify(p runtime.PendingApproval, ap action.Approval) {
	exp, _ := time.Parse(time.RFC3339Nano, ap.ExpiresAt)
	notice := ApprovalNotice{
		Event: "approval_requested", ApprovalID: ap.ID, Action: p.Action.Name, Principal: p.Principal,
		Tenant: p.Action.Tenant, SessionID: p.Action.SessionID, Rule: p.Decision.Rule, Step: p.Decision.Step, ExpiresAt: exp,
	}
	if n.console != "" {
		notice.Console = strings.TrimSuffix(n.console, "/") + "/#" + url.PathEscape(ap.ID)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	select {
	case n.queue <- notice:
	default:
		n.log.Warn("approvals: notice queue full; notice dropped", "approval", ap.ID)
	}
}

// Close stops the notifier: the delivery under way is cut short and the
// queued notices are dropped. Nothing is queued after Close.
func (n *Notifier) Close() error {
	n.once.Do(func() {
		n.mu.Lock()
		n.closed = true
		close(n.queue)
		n.mu.Unlock()
		n.stop()
	})
	<-n.done
	return nil
}

// NotifyingApprovals wraps store so that every approval requested
// through it is also announced by n.
func NotifyingApprovals(store ApprovalStore, n *Notifier) ApprovalStore {
	if n == nil {
		return store
	}
	return &notifyingApprovals{ApprovalStore: store, n: n}
}

type notifyingApprovals struct {
	ApprovalStore
	n *Notifier
}

func (a *notifyingApprovals) Request(ctx context.Context, p runtime.PendingApproval) (action.Approval, error) {
	ap, err := a.ApprovalStore.Request(ctx, p)
	if err == nil {
		a.n.notify(p, ap)
	}
	return ap, err
}
