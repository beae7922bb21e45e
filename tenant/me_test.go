package tenant

import (
	"bytes"
	"context"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/ratelimit"
)

// meBundle is the Tenant API over a migrated database, on a pool whose
// statements are counted, with one organization, its member and a key the
// member created, and the request-rate limit decided by the keys service
// (as the service is wired).
type meBundle struct {
	engine *gin.Engine
	count  *dbtest.Statements
	plain  string
	user   int64
}

func setupMe(t *testing.T, limit ratelimit.Limit) *meBundle {
	t.Helper()
	_, u := dbtest.Migrated(t)
	ctx := context.Background()
	b := &meBundle{}
	pool, count := dbtest.CountedPool(t, u)
	b.count = count
	var org int64
	if err := pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('o') RETURNING id`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, org, db.SchemaFor(org)); err != nil {
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `INSERT INTO central.users (email, name, password_hash) VALUES ('u@example.com', 'U', 'x') RETURNING id`).Scan(&b.user); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO central.memberships (organization_id, user_id, role) VALUES ($1, $2, 'owner')`, org, b.user); err != nil {
		t.Fatal(err)
	}
	h, err := apikey.NewHasher(bytes.Repeat([]byte("p"), 32))
	if err != nil {
		t.Fatal(err)
	}
	store, err := pace.New(pace.Config{Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := keys.New(keys.Config{DB: db.FromPool(pool), Hasher: h, Pace: store, RequestRate: limit})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Create(ctx, org, keys.Actor{UserID: b.user}, keys.Spec{Name: "k", Scopes: []string{"usage.read"}, ExpiresInDays: 1})
	if err != nil {
		t.Fatal(err)
	}
	b.plain = c.Plain
	a, err := New(Config{Keys: svc})
	if err != nil {
		t.Fatal(err)
	}
	b.engine = engine()
	a.Mount(b.engine)
	return b
}

// get serves GET /api/v1/me and returns the response with the number of
// statements it ran.
func (b *meBundle) get(t *testing.T) (int, http.Header, map[string]any, int64) {
	t.Helper()
	before := b.count.Count()
	rec, m := serveAt(b.engine, BasePath+"/me", map[string]string{APIKeyHeader: b.plain})
	return rec.Code, rec.Header(), m, b.count.Count() - before
}

// One GET /me is one statement: the key, its organization and member, its
// rate decision and its last_used_at, whether the key is stale (its first
// request: last_used_at written), fresh, or over its limit (429).
func TestMeIsOneStatement(t *testing.T) {
	t.Parallel()
	b := setupMe(t, ratelimit.Limit{Rate: 0.5, Burst: 2})
	for i, want := range []int{http.StatusOK, http.StatusOK, http.StatusTooManyRequests} {
		code, h, m, n := b.get(t)
		if code != want {
			t.Fatalf("request %d = %d %v, want %d", i+1, code, m, want)
		}
		if n != 1 {
			t.Errorf("request %d (%d) ran %d statements, want 1", i+1, code, n)
		}
		if h.Get("RateLimit-Limit") != "2" {
			t.Errorf("request %d: RateLimit-Limit = %q, want 2", i+1, h.Get("RateLimit-Limit"))
		}
		if code == http.StatusTooManyRequests {
			if m["code"] != CodeRateLimited || h.Get("Retry-After") != "2" {
				t.Errorf("429: code %v, Retry-After %q; want %s, 2", m["code"], h.Get("Retry-After"), CodeRateLimited)
			}
			continue
		}
		data, _ := m["data"].(map[string]any)
		user, _ := data["user"].(map[string]any)
		key, _ := data["api_key"].(map[string]any)
		if user == nil || user["id"] != float64(b.user) || user["role"] != "owner" || key == nil || key["last_used_at"] == nil {
			t.Errorf("request %d: data = %v", i+1, data)
		}
	}
}
