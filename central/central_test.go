package central

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/accounts"
	"github.com/bizmsg/platform/platform/httpx"
)

func TestRequireRole(t *testing.T) {
	t.Parallel()
	tests := []struct {
		role string
		want int
	}{
		{accounts.RoleOwner, http.StatusOK},
		{accounts.RoleAdmin, http.StatusOK},
		{accounts.RoleMember, http.StatusForbidden},
		{"", http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.role, func(t *testing.T) {
			t.Parallel()
			e := httpx.NewEngine(httpx.Config{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
			e.GET("/x", func(c *gin.Context) {
				if tt.role != "" {
					principal.Set(c, &accounts.Principal{UserID: 1, OrgID: 1, Role: tt.role})
				}
			}, RequireRole(accounts.RoleOwner, accounts.RoleAdmin), func(c *gin.Context) { c.Status(http.StatusOK) })
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
			if rec.Code != tt.want {
				t.Fatalf("status = %d %s, want %d", rec.Code, rec.Body, tt.want)
			}
			if tt.want == http.StatusForbidden && !strings.Contains(rec.Body.String(), `"insufficient_role"`) {
				t.Fatalf("body = %s", rec.Body)
			}
		})
	}
}
