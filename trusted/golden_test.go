package trusted

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// exchange is one recorded request and its answer.
type exchange struct {
	Name    string `json:"name"`
	Request struct {
		Method string          `json:"method"`
		Path   string          `json:"path"`
		Key    string          `json:"key,omitempty"`
		Body   json.RawMessage `json:"body,omitempty"`
	} `json:"request"`
	Response struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"response"`
}

// varying are the fields whose values differ from run to run; they are
// recorded as placeholders.
var varying = regexp.MustCompile(`"(action_id|latency_ms|expires_at|token|duration_ms)":\s*("[^"]*"|[0-9.e+-]+)`)

// TestHTTPExchangesGolden replays the requests of testdata/exchanges.json
// and compares every status and body with the recorded ones. The token of
// the last preview replaces "{token}" in later paths. Run with -update to
// record them again.
func TestHTTPExchangesGolden(t *testing.T) {
	f := newFixture(t, fixtureOpts{maxBody: 512})
	keys := map[string]string{"alice": keyAlice, "bob": keyBob, "wrong": "wrong-key"}
	golden := filepath.Join("testdata", "exchanges.json")
	raw, err := os.ReadFile(golden)
	require.NoError(t, err)
	var want []exchange
	require.NoError(t, json.Unmarshal(raw, &want))
	require.NotEmpty(t, want)

	var got []exchange
	token := ""
	for _, ex := range want {
		path := strings.ReplaceAll(ex.Request.Path, "{token}", token)
		var body io.Reader
		if len(ex.Request.Body) > 0 {
			var s string
			if json.Unmarshal(ex.Request.Body, &s) == nil {
				body = strings.NewReader(s) // a raw (possibly malformed) body
			} else {
				body = bytes.NewReader(ex.Request.Body)
			}
		}
		req, err := http.NewRequest(ex.Request.Method, f.URL+path, body)
		require.NoError(t, err)
		if k := keys[ex.Request.Key]; k != "" {
			req.Header.Set("Authorization", "Bearer "+k)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var pv struct {
			Token string `json:"token"`
		}
		if json.Unmarshal(data, &pv) == nil && pv.Token != "" {
			token = pv.Token
		}
		norm := varying.ReplaceAll(data, []byte(`"$1": "<$1>"`))
		var pretty bytes.Buffer
		require.NoError(t, json.Indent(&pretty, bytes.TrimSpace(norm), "      ", "  "), "%s: %s", ex.Name, data)
		rec := ex
		rec.Response.Status = resp.StatusCode
		rec.Response.Body = json.RawMessage(pretty.Bytes())
		got = append(got, rec)
	}
	if *update {
		var out bytes.Buffer
		enc := json.NewEncoder(&out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		require.NoError(t, enc.Encode(got))
		require.NoError(t, os.WriteFile(golden, out.Bytes(), 0o644))
		return
	}
	for i := range want {
		require.Equal(t, want[i].Response.Status, got[i].Response.Status, want[i].Name)
		require.JSONEq(t, string(want[i].Response.Body), string(got[i].Response.Body), want[i].Name)
	}
}
