// Package metrics holds the service's Prometheus metrics. Each Metrics value
// owns its own registry instead of using the client library's global one, so
// tests and several servers in one process never collide.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// UnmatchedRoute is the route label for requests that matched no route. Using
// the route pattern rather than the raw path keeps label cardinality bounded.
const UnmatchedRoute = "unmatched"

// otherMethod is the method label for request methods outside the standard
// set, so a client cannot create label values at will.
const otherMethod = "OTHER"

// Metrics is a registry with the HTTP metrics pre-registered.
type Metrics struct {
	// HTTPRequests counts finished HTTP requests by method, route and status.
	HTTPRequests *prometheus.CounterVec
	// HTTPDuration observes HTTP request durations in seconds by method,
	// route and status.
	HTTPDuration *prometheus.HistogramVec
	// BatchSize observes the items of each batch run, by kind ("accept",
	// "deliver", "auth", "lookup", "network"): 1 means no batching
	// happened.
	BatchSize *prometheus.HistogramVec
	// MaxFiles is the database server's max_files_per_process, and
	// TenantFiles the tables and indexes of all tenant schemas: a backend
	// serving every tenant needs MaxFiles above TenantFiles (db.FileBudget).
	// Both are read at start-up and by each readiness check.
	MaxFiles, TenantFiles prometheus.Gauge

	registry *prometheus.Registry
	handler  http.Handler
}

// New returns Metrics with a fresh registry holding the Go runtime and
// process collectors and the HTTP metrics. It takes no Config and returns
// no error: there is nothing to configure and nothing to fail on.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		HTTPRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "http_requests_total",
			Help: "HTTP requests handled, by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "HTTP request duration in seconds, by method, route pattern and status code.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route", "status"}),
		BatchSize: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "batch_size",
			Help:    "Items per shared statement run, by kind: accept and deliver (per tenant), auth (API keys), lookup and network (built-in network's lookups and deliveries).",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64},
		}, []string{"kind"}),
		MaxFiles: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "postgres_max_files_per_process",
			Help: "The database server's max_files_per_process: the files one backend keeps open.",
		}),
		TenantFiles: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tenant_relation_files",
			Help: "Tables and indexes of all tenant schemas: what a backend serving every tenant keeps open.",
		}),
		registry: reg,
	}
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.HTTPRequests,
		m.HTTPDuration,
		m.BatchSize,
		m.MaxFiles,
		m.TenantFiles,
	)
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

// CountWebhookYields registers webhook_yields_total, read from yields:
// the webhook attempts that waited because the API and the send path
// were busy (yield.Gate.Yields).
func (m *Metrics) CountWebhookYields(yields func() int64) {
	m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "webhook_yields_total",
		Help: "Webhook attempts that waited for the send path: the API's and the send path's statements were in flight over 90% of the time.",
	}, func() float64 { return float64(yields()) }))
}

// CountWebhookOutbox registers webhook_outbox_rows_expanded_total and
// webhook_outbox_expansion_failures_total, read from expanded and failed:
// the outbox rows (one transaction's events each) this process turned into
// deliveries, and its expansions that failed (their rows wait for the
// next wake or the sweep).
func (m *Metrics) CountWebhookOutbox(expanded, failed func() int64) {
	m.registry.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "webhook_outbox_rows_expanded_total",
			Help: "Webhook outbox rows (one transaction's events each) turned into deliveries by this process.",
		}, func() float64 { return float64(expanded()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "webhook_outbox_expansion_failures_total",
			Help: "Webhook outbox expansions that failed; their rows wait for the next commit's wake or the worker's sweep.",
		}, func() float64 { return float64(failed()) }),
	)
}

// Registry returns the registry so other packages can register their own
// collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler { return m.handler }

// ObserveHTTP records one finished request. route is the matched route
// pattern (e.g. gin's FullPath, "/api/v1/messages/:id"); an empty route is
// recorded as UnmatchedRoute. Non-standard methods are recorded as "OTHER".
func (m *Metrics) ObserveHTTP(method, route string, status int, d time.Duration) {
	if route == "" {
		route = UnmatchedRoute
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
	default:
		method = otherMethod
	}
	code := strconv.Itoa(status)
	m.HTTPRequests.WithLabelValues(method, route, code).Inc()
	m.HTTPDuration.WithLabelValues(method, route, code).Observe(d.Seconds())
}
