package config

import (
	"net/url"
	"os"
	"time"
)

// AHPConfig is harness.ahp: an external AHP harness that supervises
// Harness's actions, and `harness ahp serve`, Harness's guard as a harness
// for other agents.
type AHPConfig struct {
	// Supervisor is consulted by the guard before every action; its
	// transport not set: none.
	Supervisor AHPSupervisorConfig `yaml:"supervisor"`
	Serve      AHPServeConfig      `yaml:"serve"`
}

// AHPSupervisorConfig is harness.ahp.supervisor. Transport empty means no
// supervisor; else exactly one of Command (transport stdio), URL (http:
// http(s)://…, ws: ws(s)://…) and Socket (unix) is set, matching it.
type AHPSupervisorConfig struct {
	Transport string   `yaml:"transport" validate:"omitempty,oneof=stdio http ws unix"`
	Command   []string `yaml:"command" validate:"dive,required"`
	URL       string   `yaml:"url"`
	Socket    string   `yaml:"socket"`
	// APIKey is sent as X-API-Key (HTTP) or api_key= (WebSocket); ${NAME}
	// is taken from the environment.
	APIKey string `yaml:"api-key"`
	// TimeoutMS bounds each exchange (default 2000); an answer later than
	// that refuses the action.
	TimeoutMS int `yaml:"timeout-ms" validate:"gte=0,lte=600000"`
	// MaxDefers bounds how often one action is deferred (default 3).
	MaxDefers int `yaml:"max-defers" validate:"gte=0,lte=100"`
	// QueueSize bounds the telemetry (post_action, error) waiting to be
	// sent (default 1024); beyond it the oldest is dropped and counted.
	QueueSize int `yaml:"queue-size" validate:"gte=0,lte=1000000"`
}

// AHPServeConfig is harness.ahp.serve.
type AHPServeConfig struct {
	MaxDepth  int `yaml:"max-depth" validate:"gte=0,lte=1000"`
	BatchSize int `yaml:"batch-size" validate:"gte=0,lte=100000"`
	// UnknownTools is what a pre_action for a tool Harness cannot map
	// gets: deny (the default) or allow.
	UnknownTools string `yaml:"unknown-tools" validate:"omitempty,oneof=deny allow"`
}

// Defaults of harness.ahp.
const (
	DefaultAHPTimeoutMS = 2000
	DefaultAHPMaxDefers = 3
	DefaultAHPQueueSize = 1024
	DefaultAHPMaxDepth  = 10
	DefaultAHPBatchSize = 100
)

func (a *AHPConfig) resolve() {
	s := &a.Supervisor
	if s.TimeoutMS == 0 {
		s.TimeoutMS = DefaultAHPTimeoutMS
	}
	if s.MaxDefers == 0 {
		s.MaxDefers = DefaultAHPMaxDefers
	}
	if s.QueueSize == 0 {
		s.QueueSize = DefaultAHPQueueSize
	}
	if a.Serve.MaxDepth == 0 {
		a.Serve.MaxDepth = DefaultAHPMaxDepth
	}
	if a.Serve.BatchSize == 0 {
		a.Serve.BatchSize = DefaultAHPBatchSize
	}
	if a.Serve.UnknownTools == "" {
		a.Serve.UnknownTools = "deny"
	}
}

// Enabled reports whether a supervisor is configured.
func (s *AHPSupervisorConfig) Enabled() bool { return s.Transport != "" }

// Timeout is TimeoutMS as a duration.
func (s *AHPSupervisorConfig) Timeout() time.Duration {
	return time.Duration(s.TimeoutMS) * time.Millisecond
}

// Key is APIKey with ${NAME} references taken from the environment.
func (s *AHPSupervisorConfig) Key() string { return os.Expand(s.APIKey, os.Getenv) }

// checkAHP reports a supervisor whose address does not fit its transport.
func (h *HarnessConfig) checkAHP(at func(ns string) problem) []problem {
	s := &h.AHP.Supervisor
	const ns = "harness.ahp.supervisor"
	var out []problem
	bad := func(key, why string) {
		p := at(ns + "." + key)
		p.why = why
		out = append(out, p)
	}
	set := 0
	for _, v := range []bool{len(s.Command) > 0, s.URL != "", s.Socket != ""} {
		if v {
			set++
		}
	}
	if set > 1 {
		bad("transport", "set one of command (stdio), url (http, ws) and socket (unix), not several")
		return out
	}
	switch s.Transport {
	case "":
		if set > 0 {
			bad("transport", "set transport (stdio, http, ws or unix) for the supervisor's command, url or socket")
		}
	case "stdio":
		if len(s.Command) == 0 {
			bad("command", "transport stdio needs command: the harness program and its arguments, a list")
		}
	case "http", "ws":
		u, err := url.Parse(s.URL)
		want := map[string][2]string{"http": {"http", "https"}, "ws": {"ws", "wss"}}[s.Transport]
		switch {
		case s.URL == "":
			bad("url", "transport "+s.Transport+" needs url: "+want[0]+"://host:port/path")
		case err != nil || u.Host == "" || (u.Scheme != want[0] && u.Scheme != want[1]):
			bad("url", "want a "+want[0]+":// or "+want[1]+":// URL with a host for transport "+s.Transport)
		}
	case "unix":
		if s.Socket == "" {
			bad("socket", "transport unix needs socket: the path of the harness's Unix socket")
		}
	}
	return out
}
