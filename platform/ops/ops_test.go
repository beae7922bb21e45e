package ops

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The console is never served without both credentials.
func TestHandlerNeedsCredentials(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {User: "operator"}, {Password: "correct horse battery"}} {
		if h, err := Handler(context.Background(), nil, cfg); err == nil || h != nil {
			t.Fatalf("Handler(%+v) = %v, %v; want an error", cfg, h, err)
		}
	}
}

// basicAuth passes only the exact pair, and challenges everything else.
func TestBasicAuth(t *testing.T) {
	t.Parallel()
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	h := basicAuth(ok, "operator", "correct horse battery")
	for _, tc := range []struct {
		user, password string
		set            bool
		want           int
	}{
		{"operator", "correct horse battery", true, http.StatusTeapot},
		{"operator", "correct horse batter", true, http.StatusUnauthorized},
		{"operator ", "correct horse battery", true, http.StatusUnauthorized},
		{"", "", true, http.StatusUnauthorized},
		{"", "", false, http.StatusUnauthorized},
	} {
		req := httptest.NewRequest(http.MethodGet, "/ops/", nil)
		if tc.set {
			req.SetBasicAuth(tc.user, tc.password)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Fatalf("%q/%q: %d, want %d", tc.user, tc.password, rec.Code, tc.want)
		}
		if tc.want == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
			t.Fatal("a refusal must carry a Basic challenge")
		}
	}
}
