package httpx_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/httpx"
)

// The client address is the socket peer unless that peer is a trusted
// proxy; only then is X-Forwarded-For read, and only up to the first
// address that is not itself a trusted proxy. The access log carries the
// same address.
func TestClientIPTrustedProxies(t *testing.T) {
	t.Parallel()
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	tests := []struct {
		name    string
		trusted []netip.Prefix
		peer    string
		headers map[string]string
		want    string
	}{
		{"no proxies: forwarded header ignored", nil, "10.1.2.3:5000",
			map[string]string{"X-Forwarded-For": "203.0.113.7"}, "10.1.2.3"},
		{"no proxies: no header", nil, "198.51.100.9:5000", nil, "198.51.100.9"},
		{"trusted peer: forwarded address", proxies, "10.1.2.3:5000",
			map[string]string{"X-Forwarded-For": "203.0.113.7"}, "203.0.113.7"},
		{"untrusted peer: header ignored", proxies, "198.51.100.9:5000",
			map[string]string{"X-Forwarded-For": "203.0.113.7"}, "198.51.100.9"},
		{"trusted chain: first untrusted from the right", proxies, "10.1.2.3:5000",
			map[string]string{"X-Forwarded-For": "192.0.2.1, 203.0.113.7, 10.9.9.9"}, "203.0.113.7"},
		{"trusted IPv6 peer", proxies, "[fd00::5]:5000",
			map[string]string{"X-Forwarded-For": "2001:db8::7"}, "2001:db8::7"},
		{"trusted peer without the header", proxies, "10.1.2.3:5000", nil, "10.1.2.3"},
		{"trusted peer, garbage header", proxies, "10.1.2.3:5000",
			map[string]string{"X-Forwarded-For": "not-an-address"}, "10.1.2.3"},
		{"other headers never read", proxies, "10.1.2.3:5000",
			map[string]string{"X-Real-IP": "203.0.113.7", "CF-Connecting-IP": "203.0.113.8"}, "10.1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs logBuffer
			e := httpx.NewEngine(httpx.Config{
				Logger:         slog.New(slog.NewJSONHandler(&logs, nil)),
				TrustedProxies: tt.trusted,
			})
			e.GET("/ip", func(c *gin.Context) { c.String(http.StatusOK, c.ClientIP()) })
			req := httptest.NewRequest(http.MethodGet, "/ip", nil)
			req.RemoteAddr = tt.peer
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if got := string(body); got != tt.want {
				t.Fatalf("ClientIP = %q, want %q", got, tt.want)
			}
			if !strings.Contains(logs.String(), `"client_ip":"`+tt.want+`"`) {
				t.Fatalf("access log lacks client_ip %s: %s", tt.want, logs.String())
			}
		})
	}
}
