package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/harness-runtime/harness/action"
	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/pipeline"
	"github.com/harness-runtime/harness/trusted"
)

// httpDriver is the HTTP service, served in-process on a loopback port as
// harness serve serves it (trusted.NewServer over the pipeline's trusted
// service), and asked over real HTTP: POST /v1/actions, or for trusted
// scenarios POST /v1/actions/preview then /v1/actions/execute/{token}.
type httpDriver struct {
	key     string
	ps      pipelines
	servers map[Variant]*httpSite
	client  http.Client
}

type httpSite struct {
	base string
	srv  *http.Server
}

func (d *httpDriver) site(ctx context.Context, v Variant, s site) (*httpSite, error) {
	if hs := d.servers[v]; hs != nil {
		return hs, nil
	}
	p, err := d.ps.get(ctx, v, s)
	if err != nil {
		return nil, err
	}
	hs, err := serveHTTP(p)
	if err != nil {
		return nil, err
	}
	if d.servers == nil {
		d.servers = map[Variant]*httpSite{}
	}
	d.servers[v] = hs
	return hs, nil
}

// serveHTTP serves p's API on a loopback port.
func serveHTTP(p *pipeline.Pipeline) (*httpSite, error) {
	keys, err := trusted.NewKeys(p.Config.Harness.Auth.Keys)
	if err != nil {
		return nil, err
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api, err := trusted.NewServer(trusted.ServerOptions{
		Service: p.Trusted, Keys: keys, Metrics: p.Metrics, Logger: quiet,
		MaxBodyBytes: p.Config.Harness.HTTP.MaxBodyBytes,
	})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return &httpSite{base: "http://" + ln.Addr().String(), srv: srv}, nil
}

func (d *httpDriver) run(ctx context.Context, sc Scenario, s site) (answer, error) {
	hs, err := d.site(ctx, sc.Variant, s)
	if err != nil {
		return answer{}, err
	}
	body, err := json.Marshal(map[string]any{"name": sc.Action, "input": json.RawMessage(sc.Input), "tenant": sc.Tenant})
	if err != nil {
		return answer{}, err
	}
	if !sc.Trusted {
		return d.observation(ctx, hs.base+"/v1/actions", body, direct, "")
	}
	status, raw, err := d.post(ctx, hs.base+"/v1/actions/preview", body)
	if err != nil {
		return answer{}, err
	}
	if status != http.StatusOK {
		return errorAnswer(status, raw, previewRefused, ""), nil
	}
	var pr struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &pr); err != nil || pr.Token == "" {
		return answer{}, fmt.Errorf("preview answer without a token: %s", raw)
	}
	if sc.Stale {
		if err := s.makeStale(); err != nil {
			return answer{}, err
		}
	}
	return d.observation(ctx, hs.base+"/v1/actions/execute/"+pr.Token, nil, tokenFlow, tokenActionID(pr.Token))
}

// observation posts to a route that answers 200 with an observation, or
// with an error object.
func (d *httpDriver) observation(ctx context.Context, url string, body []byte, f flow, id string) (answer, error) {
	status, raw, err := d.post(ctx, url, body)
	if err != nil {
		return answer{}, err
	}
	if status != http.StatusOK {
		return errorAnswer(status, raw, f, id), nil
	}
	o, err := decode(raw)
	if err != nil {
		return answer{}, fmt.Errorf("answer is not an observation: %w", err)
	}
	a := observed(o, f)
	if id != "" && a.ActionID != id {
		a.Problems = append(a.Problems, fmt.Sprintf("the run's action_id is %q, the token's records name %q", a.ActionID, id))
	}
	return a, nil
}

// errorAnswer reads an error object; its HTTP status must be the code
// table's.
func errorAnswer(status int, raw []byte, f flow, id string) answer {
	var e struct {
		Error struct {
			Code     string           `json:"code"`
			Message  string           `json:"message"`
			ActionID string           `json:"action_id"`
			Decision *action.Decision `json:"decision"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	c := action.Code(e.Error.Code)
	if id == "" {
		id = e.Error.ActionID // a refused preview names the action its records carry
	}
	a := answer{Outcome: Outcome{Status: c.Status(), Code: c}, Message: e.Error.Message, Flow: f, ActionID: id}
	if e.Error.Decision != nil && e.Error.Decision.Outcome != "allow" {
		a.Step = e.Error.Decision.Step
	}
	if want := c.HTTPStatus(); status != want {
		a.Problems = append(a.Problems, fmt.Sprintf("HTTP %d for %s, the code table says %d", status, c, want))
	}
	return a
}

func (d *httpDriver) post(ctx context.Context, url string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+d.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, config.DefaultMaxBodyBytes))
	return resp.StatusCode, raw, err
}

func (d *httpDriver) close() error {
	for _, hs := range d.servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		hs.srv.Shutdown(ctx)
		cancel()
	}
	d.client.CloseIdleConnections()
	return d.ps.close()
}
