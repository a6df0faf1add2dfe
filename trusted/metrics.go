package trusted

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the Prometheus series of the HTTP service. Label values are
// bounded: routes are the served patterns, actions are registered names
// (anything else is "unregistered"), statuses are codes and observation
// statuses.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
}

// NewMetrics registers the series on a new registry, together with the Go
// runtime and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_http_requests_total",
			Help: "HTTP requests by route pattern and response status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "harness_action_duration_seconds",
			Help:    "Time to run an action through the Harness, by action and observation status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"action", "status"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "harness_trusted_tokens_total",
			Help: "Confirmation tokens by event: minted, redeemed, expired (found expired at redeem, or swept unredeemed from the memory store; Redis expiries are not seen), refused, stale.",
		}, []string{"event"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.tokens,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, e := range []TokenEvent{TokenMinted, TokenRedeemed, TokenExpired, TokenRefused, TokenStale} {
		m.tokens.WithLabelValues(string(e))
	}
	return m
}

// Registry returns the registry the series live on.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Token counts one token event; it fits Options.Events.
func (m *Metrics) Token(e TokenEvent) { m.tokens.WithLabelValues(string(e)).Inc() }

// Expired counts n tokens that expired unredeemed; it fits
// MemoryStore.OnExpire.
func (m *Metrics) Expired(n int) { m.tokens.WithLabelValues(string(TokenExpired)).Add(float64(n)) }

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
