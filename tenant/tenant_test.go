package tenant

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/keys"
)

func engine() *gin.Engine {
	return httpx.NewEngine(httpx.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
}

func serve(e *gin.Engine, header map[string]string) (*httptest.ResponseRecorder, map[string]any) {
	return serveAt(e, "/x", header)
}

// serveAt serves a GET of path with header on e and returns the response
// and its JSON body.
func serveAt(e *gin.Engine, path string, header map[string]string) (*httptest.ResponseRecorder, map[string]any) {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	return rec, m
}

func TestRequireScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		have   []string
		need   []string
		want   int
		naming []any
	}{
		{"exact", []string{"messages.send"}, []string{"messages.send"}, http.StatusOK, nil},
		{"star", []string{"*"}, []string{"usage.read"}, http.StatusOK, nil},
		{"one of several", []string{"messages.read"}, []string{"messages.send", "messages.read"}, http.StatusOK, nil},
		{"missing", []string{"messages.read"}, []string{"messages.send"}, http.StatusForbidden, []any{"messages.send"}},
		{"missing any", []string{"usage.read"}, []string{"messages.send", "messages.read"}, http.StatusForbidden, []any{"messages.send", "messages.read"}},
		{"no scopes", nil, []string{"contacts.lookup"}, http.StatusForbidden, []any{"contacts.lookup"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := engine()
			e.GET("/x", func(c *gin.Context) { principal.Set(c, &Principal{Scopes: tt.have}) },
				RequireAnyScope(tt.need...), func(c *gin.Context) { c.Status(http.StatusOK) })
			rec, m := serve(e, nil)
			if rec.Code != tt.want {
				t.Fatalf("status = %d %s", rec.Code, rec.Body)
			}
			if tt.want == http.StatusForbidden {
				if m["code"] != CodeInsufficientScope || !slices.Equal(m["required_scopes"].([]any), tt.naming) {
					t.Fatalf("body = %v", m)
				}
			}
		})
	}
	// Without the API-key middleware the route fails closed.
	e := engine()
	e.GET("/x", RequireScope(apikey.ScopeUsageRead), func(c *gin.Context) { c.Status(http.StatusOK) })
	if rec, _ := serve(e, nil); rec.Code != http.StatusInternalServerError {
		t.Fatalf("scope check without a principal = %d", rec.Code)
	}
}

// The middleware refuses missing and malformed keys before any database
// work: the pool here points at nothing and is never used.
func TestAuthenticateWithoutDatabase(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	h, err := apikey.NewHasher(bytes.Repeat([]byte("p"), 32))
	if err != nil {
		t.Fatal(err)
	}
	svc, err := keys.New(keys.Config{DB: db.FromPool(pool), Hasher: h})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Config{Keys: svc})
	if err != nil {
		t.Fatal(err)
	}
	k, err := apikey.Generate()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		header map[string]string
		code   string
	}{
		{"missing", nil, "missing_api_key"},
		{"bearer instead", map[string]string{"Authorization": "Bearer x"}, "missing_api_key"},
		{"wrong checksum", map[string]string{APIKeyHeader: k.Plain[:apikey.Length-1] + "!"}, keys.CodeInvalidKey},
		{"garbage", map[string]string{APIKeyHeader: "secret"}, keys.CodeInvalidKey},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := engine()
			e.GET("/x", a.Authenticate, func(c *gin.Context) { c.Status(http.StatusOK) })
			rec, m := serve(e, tt.header)
			if rec.Code != http.StatusUnauthorized || m["code"] != tt.code {
				t.Fatalf("= %d %v, want 401 %s", rec.Code, m, tt.code)
			}
		})
	}
	if st := pool.Stat(); st.TotalConns() != 0 || st.AcquireCount() != 0 {
		t.Fatalf("the pool was used: %d acquires", st.AcquireCount())
	}
	// Control: a well-formed key does need the database, which is not there.
	e := engine()
	e.GET("/x", a.Authenticate, func(c *gin.Context) { c.Status(http.StatusOK) })
	if rec, _ := serve(e, map[string]string{APIKeyHeader: k.Plain}); rec.Code < http.StatusInternalServerError {
		t.Fatalf("well-formed key without a database = %d %s", rec.Code, rec.Body)
	}
}
