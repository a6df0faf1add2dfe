package bridge

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	mcpclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/action"
)

// rootsFunc answers roots/list with fixed URIs and counts the questions.
type rootsFunc struct {
	uris  []string
	asked atomic.Int32
}

func (f *rootsFunc) ListRoots(context.Context, mcpgo.ListRootsRequest) (*mcpgo.ListRootsResult, error) {
	f.asked.Add(1)
	res := &mcpgo.ListRootsResult{Roots: []mcpgo.Root{}}
	for _, u := range f.uris {
		res.Roots = append(res.Roots, mcpgo.Root{URI: u, Name: "r"})
	}
	return res, nil
}

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String() }

// rootsClient serves a bridge over a fresh workspace to an in-process
// client that declares roots (answered by roots) and speaks protocol
// version (the stateless one, or one with sessions).
func rootsClient(t *testing.T, roots *rootsFunc, version string) (*mcpclient.Client, string) {
	t.Helper()
	root := workspaceRoot(t)
	cfg := testConfig(t, "")
	cfg.Harness.Workspace.Root = root
	h, closeFn, err := buildHarness(cfg, &events{})
	require.NoError(t, err)
	t.Cleanup(closeFn)
	srv, err := NewServer(h, cfg, WithLogger(quietLogger()))
	require.NoError(t, err)
	var opts []mcpclient.ClientOption
	if roots != nil {
		opts = append(opts, mcpclient.WithRootsHandler(roots))
	}
	cli, err := mcpclient.NewInProcessClientWithOptions(srv.MCPServer(), opts...)
	require.NoError(t, err)
	t.Cleanup(func() { cli.Close() })
	ctx := testContext(t, 30*time.Second)
	require.NoError(t, cli.Start(ctx))
	params := mcpgo.InitializeParams{ProtocolVersion: version, ClientInfo: mcpgo.Implementation{Name: "unit", Version: "1"}}
	if roots != nil {
		params.Capabilities.Roots = &struct {
			ListChanged bool `json:"listChanged,omitempty"`
		}{ListChanged: true}
	}
	_, err = cli.Initialize(ctx, mcpgo.InitializeRequest{Params: params})
	require.NoError(t, err)
	return cli, root
}

func readA(t *testing.T, cli *mcpclient.Client) action.Observation {
	t.Helper()
	res, err := cli.CallTool(testContext(t, 30*time.Second), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{
		Name: "workspace_read_file", Arguments: map[string]any{"path": "a.txt"}}})
	require.NoError(t, err)
	return structured(t, res)
}

// TestBridgeHonoursClientRoots: a client whose roots are all inside the
// workspace root is served; one with a root outside it (a sibling, the
// parent, a name that only starts like the root, a symlink inside that
// leads out, another scheme) is refused on every call, with a message that
// names the root and says what to do. Both protocol generations.
func TestBridgeHonoursClientRoots(t *testing.T) {
	for _, version := range []string{mcpgo.ProtocolVersion20260728, "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			// Each case needs the workspace root's path, known once the
			// bridge is built: roots are filled in afterwards.
			cases := []struct {
				name  string
				uris  func(root string) []string
				allow bool
			}{
				{"the root itself", func(r string) []string { return []string{fileURI(r)} }, true},
				{"a directory inside", func(r string) []string { return []string{fileURI(filepath.Join(r, "sub"))} }, true},
				{"no roots", func(string) []string { return nil }, true},
				{"the parent", func(r string) []string { return []string{fileURI(filepath.Dir(r))} }, false},
				{"a sibling", func(r string) []string { return []string{fileURI(filepath.Join(filepath.Dir(r), "other"))} }, false},
				{"a name that starts like the root", func(r string) []string { return []string{fileURI(r + "-evil")} }, false},
				{"one inside and one outside", func(r string) []string { return []string{fileURI(r), "file:///etc"} }, false},
				{"dot-dot out", func(r string) []string { return []string{fileURI(r) + "/sub/../../x"} }, false},
				{"a symlink inside that leads out", func(r string) []string {
					link := filepath.Join(r, "out")
					require.NoError(t, os.Symlink(t.TempDir(), link))
					return []string{fileURI(link)}
				}, false},
				{"another scheme", func(string) []string { return []string{"https://example.com/repo"} }, false},
				{"a remote host", func(r string) []string { return []string{"file://server" + filepath.ToSlash(r)} }, false},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					roots := &rootsFunc{}
					cli, root := rootsClient(t, roots, version)
					require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
					mustWrite(t, filepath.Join(root, "a.txt"), "hello\n")
					roots.uris = tc.uris(root)
					for i := 0; i < 2; i++ {
						obs := readA(t, cli)
						if tc.allow {
							assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
							continue
						}
						assert.Equal(t, action.CodePathOutsideRoot, obs.Code, obsString(obs))
						assert.Contains(t, obs.Message, "workspace root")
						assert.Contains(t, obs.Message, "MCP client's root")
					}
					assert.GreaterOrEqual(t, roots.asked.Load(), int32(1), "the client was asked for its roots")
					if version != mcpgo.ProtocolVersion20260728 {
						assert.Equal(t, int32(1), roots.asked.Load(), "a session's roots are asked for once")
					}
				})
			}
		})
	}
}

// TestBridgeWithoutRootsCapabilityServes: a client that does not declare
// roots is never asked.
func TestBridgeWithoutRootsCapabilityServes(t *testing.T) {
	cli, root := rootsClient(t, nil, mcpgo.ProtocolVersion20260728)
	mustWrite(t, filepath.Join(root, "a.txt"), "hello\n")
	obs := readA(t, cli)
	assert.Equal(t, action.StatusOK, obs.Status, obs.Message)
}

func TestRootsGateForgetsOnChange(t *testing.T) {
	g := newRootsGate(t.TempDir())
	g.set("s1", "")
	_, ok := g.get("s1")
	require.True(t, ok)
	g.forget("s1")
	_, ok = g.get("s1")
	assert.False(t, ok)
	for i := 0; i < maxRootSessions+10; i++ {
		g.set(string(rune('a'+i%26))+time.Duration(i).String(), "")
	}
	assert.LessOrEqual(t, len(g.verdict), maxRootSessions, "bounded")
}
