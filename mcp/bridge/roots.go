package bridge

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/policy"
)

// MCP roots: a client that declares the roots capability says which
// directories it works in. Harness serves one workspace root, fixed when
// it starts; a client whose roots are not all inside it would act on files
// it did not mean, so its calls are refused, each with a message naming the
// root and what to do. Roots inside the workspace are fine (paths stay
// relative to the workspace root).
//
// The roots are asked for once per session, at the session's first tool
// call, through an input request (mcp-go plays it as a server-initiated
// roots/list for clients older than the multi round-trip pattern), and
// asked again after notifications/roots/list_changed.

// rootsInputID names the roots/list input request of a tool call; the
// request state marks the round that carries its answer.
const (
	rootsInputID = "harness_roots"
	rootsState   = "harness_roots"
)

// maxRootSessions bounds the sessions whose verdict is remembered; beyond
// it the oldest are forgotten (and asked again).
const maxRootSessions = 4096

// rootsGate holds each session's verdict on its roots: "" when they are
// inside the workspace, else the refusal's message.
type rootsGate struct {
	root string // the workspace root, symlinks resolved

	mu      sync.Mutex
	verdict map[string]string
	order   []string
}

func newRootsGate(root string) *rootsGate {
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	return &rootsGate{root: filepath.Clean(root), verdict: map[string]string{}}
}

func (g *rootsGate) get(session string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.verdict[session]
	return v, ok
}

func (g *rootsGate) set(session, v string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.verdict[session]; !ok {
		if len(g.order) >= maxRootSessions {
			delete(g.verdict, g.order[0])
			g.order = g.order[1:]
		}
		g.order = append(g.order, session)
	}
	g.verdict[session] = v
}

// forget drops a session's verdict: its roots changed.
func (g *rootsGate) forget(session string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.verdict, session)
}

// judge returns "" when every root is a directory inside the workspace,
// else why not.
func (g *rootsGate) judge(roots []mcpgo.Root) string {
	for _, r := range roots {
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || u.Path == "" {
			return fmt.Sprintf("the MCP client's root %q is not a file:// URI of a local directory; "+
				"Harness serves the workspace root %s only", r.URI, g.root)
		}
		p := filepath.Clean(filepath.FromSlash(u.Path))
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if !within(g.root, p) {
			return fmt.Sprintf("the MCP client's root %s is outside the workspace root %s that Harness was started with; "+
				"start harness mcp with --root %s (or a directory that contains it), or open a folder inside %s in the client",
				p, g.root, p, g.root)
		}
	}
	return ""
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// clientHasRoots reports whether the client declared the roots capability:
// per request in the stateless protocol, per session before it.
func clientHasRoots(ctx context.Context) bool {
	if info := mcpserver.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Roots != nil
	}
	if sess, ok := mcpserver.ClientSessionFromContext(ctx).(mcpserver.SessionWithClientInfo); ok {
		return sess.GetClientCapabilities().Roots != nil
	}
	return false
}

// checkRoots runs before a tool call: it returns the result to answer
// instead (a roots/list input request, or the refusal), or nil to go on.
// A call that carried the roots' answer has it removed from req, so that
// the call proceeds as a first round.
func (s *Server) checkRoots(ctx context.Context, name string, req *mcpgo.CallToolRequest) *mcpgo.CallToolResult {
	if s.roots == nil || !clientHasRoots(ctx) {
		return nil
	}
	// Without a session (the stateless protocol) nothing is remembered:
	// every call asks.
	var id string
	if sess := mcpserver.ClientSessionFromContext(ctx); sess != nil {
		id = sess.SessionID()
	}
	verdict, known := "", false
	if id != "" {
		verdict, known = s.roots.get(id)
	}
	if !known {
		if req.Params.RequestState != rootsState {
			return mcpserver.NewInputRequestBuilder(rootsState).Roots(rootsInputID).ToolResult()
		}
		answer := mcpserver.RootsResponse(req.Params.InputResponses, rootsInputID)
		if answer == nil {
			verdict = "the MCP client declared roots but did not list them; Harness cannot tell whether they are inside the workspace root " + s.roots.root
		} else {
			verdict = s.roots.judge(answer.Roots)
		}
		if id != "" {
			s.roots.set(id, verdict)
		}
	}
	if req.Params.RequestState == rootsState {
		req.Params.RequestState, req.Params.InputResponses = "", nil
	}
	if verdict == "" {
		return nil
	}
	if s.log != nil {
		s.log.Warn("mcp client roots refused", "session", id, "reason", verdict)
	}
	return toolResult(s.blocked(action.Action{Name: name}, policy.Decision{Code: action.CodePathOutsideRoot, Message: verdict}))
}

// onRootsChanged forgets the session's verdict: its next call asks again.
func (s *Server) onRootsChanged(ctx context.Context, _ mcpgo.JSONRPCNotification) {
	if sess := mcpserver.ClientSessionFromContext(ctx); sess != nil && s.roots != nil {
		s.roots.forget(sess.SessionID())
	}
}
