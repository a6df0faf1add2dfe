// Package guardharness is Harness's guard as an AHP harness for other
// agents (`harness ahp serve`): an agent sends pre_action for each tool call
// it is about to make, and the guard answers it as it would answer the same
// action from Harness's own model. A shell-like tool is judged as
// workspace_run_shell (the tokenizer, the allowlist and the argument
// rules), file tools as the workspace actions on the configured root (its
// path rules and the configured rules), and the answer is allow, block
// (the refusal's code and message as the reason) or escalate (the guard
// asks a person). Nothing runs: the agent runs its tools itself.
//
// Every event received is recorded in the audit log, the decision beside
// it.
package guardharness

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/ahp"
	"github.com/harness-runtime/harness/audit"
	"github.com/harness-runtime/harness/runtime"
	"github.com/harness-runtime/harness/sanitize"
)

// Options configure a Handler.
type Options struct {
	// Harness decides (its guard and the workspace's plans); required.
	Harness *runtime.Harness
	// Root is the workspace root: absolute paths inside it are made
	// relative to it.
	Root string
	// AllowUnknownTools answers allow for a tool that maps onto no action;
	// false (the default) blocks it.
	AllowUnknownTools bool
	// Audit receives one record per event; nil records nothing beyond
	// what the Harness records of refusals.
	Audit audit.Appender
	// Sanitizer cleans the arguments written to the audit log; nil writes
	// none.
	Sanitizer *sanitize.Sanitizer
}

// Handler answers AHP events with the guard. It implements ahp.Handler
// and ahp.NotificationHandler.
type Handler struct {
	opts Options
}

// New returns a Handler.
func New(opts Options) (*Handler, error) {
	if opts.Harness == nil {
		return nil, fmt.Errorf("guardharness: a Harness is required")
	}
	if opts.Root != "" {
		if abs, err := filepath.Abs(opts.Root); err == nil {
			opts.Root = abs
		}
	}
	return &Handler{opts: opts}, nil
}

// Principal is who the guard sees asking: the agent, through AHP.
func principal(ev *ahp.WireEvent) string { return "ahp:" + ev.AgentID }

// HandleEvent answers a blocking event: pre_action through the guard,
// anything else (pre_prompt) allowed.
func (h *Handler) HandleEvent(ctx context.Context, ev *ahp.WireEvent) (ahp.Decision, error) {
	if ev.EventType != ahp.PreAction {
		d := ahp.Decision{Kind: ahp.Allow}
		h.record(ctx, ev, "", nil, d)
		return d, nil
	}
	call, args, err := readCall(ev.Payload)
	if err != nil {
		d := ahp.Decision{Kind: ahp.Block, Reason: "invalid_input: " + err.Error()}
		h.record(ctx, ev, "", nil, d)
		return d, nil
	}
	return h.judge(ctx, ev, call.Tool, args)
}

// judge decides a tool call and records the event with the decision.
func (h *Handler) judge(ctx context.Context, ev *ahp.WireEvent, tool string, args map[string]any) (ahp.Decision, error) {
	a, ok := h.actionFor(tool, args)
	if !ok {
		d := ahp.Decision{Kind: ahp.Block, Reason: fmt.Sprintf("unknown_action: Harness maps no action onto tool %q and unknown tools are denied (harness.ahp.serve.unknown-tools)", tool)}
		if h.opts.AllowUnknownTools {
			d = ahp.Decision{Kind: ahp.Allow}
		}
		h.record(ctx, ev, tool, nil, d)
		return d, nil
	}
	a.SessionID, a.AgentID = ev.SessionID, ev.AgentID
	ctx = runtime.WithPrincipal(ctx, principal(ev))
	_, _, refused := h.opts.Harness.Prepare(ctx, a)
	d := decisionOf(refused)
	h.record(ctx, ev, tool, &a, d)
	return d, nil
}

// HandleQuery answers a query about a tool call (a payload with
// tool_name or tool and arguments): "yes" when the guard would allow it,
// "no" with the refusal as the reason, "ask" when a person must approve.
// Any other question is answered "unknown", with what Harness can answer.
func (h *Handler) HandleQuery(ctx context.Context, q *ahp.QueryRequest) (*ahp.QueryResponse, error) {
	ev := &ahp.WireEvent{EventType: ahp.QueryEvent, SessionID: q.SessionID, AgentID: q.AgentID, Payload: q.Payload}
	call, args, err := readCall(q.Payload)
	if err != nil {
		return &ahp.QueryResponse{Answer: json.RawMessage(`"unknown"`),
			Reason: "Harness answers queries about a tool call: a payload with tool_name (or tool) and arguments"}, nil
	}
	d, err := h.judge(ctx, ev, call.Tool, args)
	if err != nil {
		return nil, err
	}
	switch d.Kind {
	case ahp.Allow:
		return &ahp.QueryResponse{Answer: json.RawMessage(`"yes"`)}, nil
	case ahp.Escalate:
		return &ahp.QueryResponse{Answer: json.RawMessage(`"ask"`), Reason: d.Reason}, nil
	}
	return &ahp.QueryResponse{Answer: json.RawMessage(`"no"`), Reason: d.Reason}, nil
}

// HandleNotification records a notification.
func (h *Handler) HandleNotification(ctx context.Context, ev *ahp.WireEvent) error {
	h.record(ctx, ev, "", nil, ahp.Decision{})
	return nil
}

// decisionOf maps the guard's answer onto AHP: no refusal allows, a
// person's approval escalates, any other refusal blocks with its code and
// message.
func decisionOf(refused *action.Observation) ahp.Decision {
	if refused == nil {
		return ahp.Decision{Kind: ahp.Allow}
	}
	reason := string(refused.Code) + ": " + refused.Message
	if refused.Status == action.StatusNeedsConfirmation {
		d := ahp.Decision{Kind: ahp.Escalate, Reason: reason}
		if refused.Approval != nil {
			d.EscalationTarget = "approval:" + refused.Approval.ID
		}
		return d
	}
	return ahp.Decision{Kind: ahp.Block, Reason: reason}
}

// Tool families, by the names agents give their tools (lower-cased,
// separators dropped). A tool not listed maps onto nothing.
var (
	shellTools = set("bash", "shell", "exec", "execute", "runcommand", "run", "terminal", "command", "cmd", "sh",
		"runshell", "executecommand", "runterminalcmd", "localshell", "shellcommand")
	readTools   = set("read", "readfile", "view", "cat", "openfile", "readtextfile", "viewfile")
	writeTools  = set("write", "writefile", "createfile", "create", "savefile", "writetextfile")
	editTools   = set("edit", "editfile", "strreplace", "strreplacebasededittool", "replace", "multiedit", "applypatch", "patch")
	listTools   = set("ls", "list", "listfiles", "listdirectory", "listdir", "glob", "dir")
	searchTools = set("grep", "search", "searchtext", "rg", "ripgrep", "find", "searchfiles")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// normalTool lower-cases name and drops separators and a namespace
// ("mcp__fs__read_file" is read_file; "Bash" is bash).
func normalTool(name string) string {
	if i := strings.LastIndex(name, "__"); i >= 0 {
		name = name[i+2:]
	}
	if i := strings.LastIndexAny(name, "./:"); i >= 0 {
		name = name[i+1:]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r != '_' && r != '-' && r != ' ' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// actionFor maps a tool call onto the action that judges it.
func (h *Handler) actionFor(tool string, args map[string]any) (action.Action, bool) {
	t := normalTool(tool)
	str := func(keys ...string) (string, bool) {
		for _, k := range keys {
			if v, ok := args[k].(string); ok {
				return v, true
			}
		}
		return "", false
	}
	switch {
	case shellTools[t]:
		cmd, ok := str("command", "cmd", "script", "commandLine", "command_line")
		if !ok {
			if argv, isList := args["argv"].([]any); isList {
				words := make([]string, 0, len(argv))
				for _, w := range argv {
					s, isStr := w.(string)
					if !isStr {
						return action.Action{}, false
					}
					words = append(words, s)
				}
				cmd, ok = strings.Join(words, " "), len(words) > 0
			}
		}
		if !ok {
			return action.Action{}, false
		}
		return action.Action{Name: "workspace_run_shell", Input: map[string]any{"command": cmd}}, true
	case readTools[t]:
		p, ok := str("path", "file_path", "filePath", "file", "filename")
		if !ok {
			return action.Action{}, false
		}
		return action.Action{Name: "workspace_read_file", Input: map[string]any{"path": h.rel(p)}}, true
	case writeTools[t], editTools[t]:
		p, ok := str("path", "file_path", "filePath", "file", "filename")
		if !ok {
			return action.Action{}, false
		}
		content, _ := str("content", "new_string", "new_str", "text", "contents")
		return action.Action{Name: "workspace_apply_patch", Input: map[string]any{"path": h.rel(p), "content": content}}, true
	case listTools[t]:
		p, _ := str("path", "dir", "directory")
		in := map[string]any{}
		if p != "" {
			in["path"] = h.rel(p)
		}
		return action.Action{Name: "workspace_list_files", Input: in}, true
	case searchTools[t]:
		q, ok := str("query", "pattern", "regex", "text")
		if !ok || q == "" {
			return action.Action{}, false
		}
		in := map[string]any{"query": q}
		if p, ok := str("path", "dir", "directory"); ok && p != "" {
			in["path"] = h.rel(p)
		}
		return action.Action{Name: "workspace_search_text", Input: in}, true
	}
	return action.Action{}, false
}

// rel makes an absolute path inside the root relative to it; any other
// path is left as it is (the workspace refuses what leads out).
func (h *Handler) rel(p string) string {
	if h.opts.Root == "" || !filepath.IsAbs(p) {
		return p
	}
	clean := filepath.Clean(p)
	if clean == h.opts.Root {
		return "."
	}
	if r, err := filepath.Rel(h.opts.Root, clean); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return r
	}
	return p
}

// record appends one audit record for ev: what it was, the action it was
// judged as, and the answer.
func (h *Handler) record(ctx context.Context, ev *ahp.WireEvent, tool string, a *action.Action, d ahp.Decision) {
	if h.opts.Audit == nil {
		return
	}
	rec := map[string]any{
		"kind":       "ahp_event",
		"event_type": string(ev.EventType),
		"session_id": ev.SessionID,
		"agent_id":   ev.AgentID,
		"depth":      int64(ev.Depth),
		"received":   time.Now().UTC().Format(time.RFC3339Nano),
	}
	if tool != "" {
		rec["tool"] = tool
	}
	if a != nil {
		rec["action"] = a.Name
		if h.opts.Sanitizer != nil {
			rec["input"] = h.opts.Sanitizer.Value(a.Input, nil)
		}
	}
	if d.Kind != "" {
		dm := map[string]any{"decision": string(d.Kind)}
		if d.Reason != "" {
			dm["reason"] = d.Reason
		}
		rec["decision"] = dm
	}
	if ev.EventType != ahp.PreAction && h.opts.Sanitizer != nil && len(ev.Payload) > 0 && len(ev.Payload) <= 1<<16 {
		var payload any
		if json.Unmarshal(ev.Payload, &payload) == nil {
			rec["payload"] = h.opts.Sanitizer.Value(payload, nil)
		}
	}
	_, _ = h.opts.Audit.Append(ctx, rec, false)
}

// readCall reads a pre_action payload; its arguments must be an object
// (or absent).
func readCall(payload json.RawMessage) (*ahp.PreActionPayload, map[string]any, error) {
	call, err := ahp.ReadPreAction(payload)
	if err != nil {
		return nil, nil, err
	}
	args := map[string]any{}
	if len(call.Arguments) > 0 {
		if err := json.Unmarshal(call.Arguments, &args); err != nil || args == nil {
			return nil, nil, fmt.Errorf("pre_action arguments must be an object")
		}
	}
	return call, args, nil
}
