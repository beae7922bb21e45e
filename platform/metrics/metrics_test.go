package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bizmsg/platform/platform/metrics"
)

func TestObserveHTTP(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		method     string
		route      string
		status     int
		wantMethod string
		wantRoute  string
		wantStatus string
	}{
		{"matched", http.MethodGet, "/api/v1/messages/:id", 200, "GET", "/api/v1/messages/:id", "200"},
		{"unmatched", http.MethodPost, "", 404, "POST", metrics.UnmatchedRoute, "404"},
		{"odd method", "PROPFIND", "", 405, "OTHER", metrics.UnmatchedRoute, "405"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := metrics.New()
			m.ObserveHTTP(tt.method, tt.route, tt.status, 25*time.Millisecond)

			c := m.HTTPRequests.WithLabelValues(tt.wantMethod, tt.wantRoute, tt.wantStatus)
			if got := testutil.ToFloat64(c); got != 1 {
				t.Errorf("counter = %v, want 1", got)
			}
			if got := testutil.CollectAndCount(m.HTTPRequests); got != 1 {
				t.Errorf("counter series = %d, want 1", got)
			}
			if got := testutil.CollectAndCount(m.HTTPDuration); got != 1 {
				t.Errorf("histogram series = %d, want 1", got)
			}
		})
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()

	m := metrics.New()
	m.ObserveHTTP(http.MethodGet, "/healthz", 200, time.Millisecond)
	extra := prometheus.NewCounter(prometheus.CounterOpts{Name: "jobs_done_total", Help: "Jobs done."})
	m.Registry().MustRegister(extra)
	extra.Inc()

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d", rec.Code)
	}
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`http_requests_total{method="GET",route="/healthz",status="200"} 1`,
		`http_request_duration_seconds_bucket{method="GET",route="/healthz",status="200",le="0.005"} 1`,
		"jobs_done_total 1",
		"go_goroutines",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics output lacks %q", want)
		}
	}
}

func TestNewIsIndependent(t *testing.T) {
	t.Parallel()

	a, b := metrics.New(), metrics.New()
	a.ObserveHTTP(http.MethodGet, "/x", 200, 0)
	if got := testutil.CollectAndCount(b.HTTPRequests); got != 0 {
		t.Errorf("second Metrics sees %d series from the first", got)
	}
}
