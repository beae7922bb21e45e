package httpx_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
)

type caller struct{ Name string }

const who httpx.PrincipalKey[caller] = "test.caller"

func TestPrincipalKeyGate(t *testing.T) {
	t.Parallel()
	onlyAnn := who.Gate(func(p *caller) error {
		if p.Name == "ann" {
			return nil
		}
		return apperr.Forbidden("not_ann", "Only Ann may.")
	})
	tests := []struct {
		name   string
		caller *caller // nil: no authentication on the route
		want   int
	}{
		{"allowed", &caller{"ann"}, http.StatusOK},
		{"refused", &caller{"bob"}, http.StatusForbidden},
		{"no authentication", nil, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newEngine(t, nil)
			e.GET("/gated", func(c *gin.Context) {
				if tt.caller != nil {
					who.Set(c, tt.caller)
				}
			}, onlyAnn, func(c *gin.Context) {
				c.String(http.StatusOK, who.Must(c).Name)
			})
			w := httptest.NewRecorder()
			e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/gated", nil))
			if w.Code != tt.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tt.want, w.Body)
			}
		})
	}
}

func TestPrincipalKeyFromAndMust(t *testing.T) {
	t.Parallel()
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	if _, ok := who.From(c); ok {
		t.Fatal("From found a caller on a fresh request")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Must did not panic without a caller")
			}
		}()
		who.Must(c)
	}()
	// Another API's key of another type never reads this caller.
	const other httpx.PrincipalKey[struct{ ID int }] = "test.caller"
	who.Set(c, &caller{"ann"})
	if p, ok := who.From(c); !ok || p.Name != "ann" {
		t.Fatalf("From = %v, %v", p, ok)
	}
	if _, ok := other.From(c); ok {
		t.Fatal("a key of another type read the caller")
	}
}
