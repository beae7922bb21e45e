package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/tenant"
)

// notesProbe mounts test routes that write and read tenant data through the
// request's Principal.Tenant (the sender_numbers table, used as a plain
// labelled table), the way every tenant handler reaches its schema.
func notesProbe(a *app.App) {
	pool := a.DB.Pool
	a.TenantRoutes.POST("/test/notes", func(c *gin.Context) {
		p := tenant.MustPrincipal(c)
		var body struct {
			Label string `json:"label"`
		}
		if err := httpx.BindJSON(c, &body); err != nil {
			httpx.Fail(c, err)
			return
		}
		var id int64
		if err := pool.QueryRow(c, `INSERT INTO `+p.Tenant.Table("sender_numbers")+` (phone, display_name) VALUES ($1, $1) RETURNING id`,
			body.Label).Scan(&id); err != nil {
			httpx.Fail(c, err)
			return
		}
		c.JSON(http.StatusCreated, gin.H{"id": id, "label": body.Label})
	})
	a.TenantRoutes.GET("/test/notes/:id", func(c *gin.Context) {
		p := tenant.MustPrincipal(c)
		var label string
		err := pool.QueryRow(c, `SELECT display_name FROM `+p.Tenant.Table("sender_numbers")+` WHERE id = $1`, c.Param("id")).Scan(&label)
		if errors.Is(err, pgx.ErrNoRows) {
			httpx.Fail(c, apperr.NotFound("note"))
			return
		}
		if err != nil {
			httpx.Fail(c, err)
			return
		}
		c.JSON(http.StatusOK, gin.H{"label": label})
	})
}

// Two organizations: each key sees and changes only its own organization's
// keys and data; the other's ids answer 404; also with both tenants hammering
// a two-connection pool at once.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Env: map[string]string{"DB_MAX_CONNS": "2"}, Setup: notesProbe})
	orgs := []*Org{e.Register(t), e.Register(t)}
	a, b := orgs[0], orgs[1]
	tag := func(o *Org) string { return "org" + strconv.FormatInt(o.ID, 10) + "-" }

	// Sequential: lists hold only own keys; the other's ids are 404 and
	// stay working.
	bKey := mustCreateKey(t, e, b.APIKey, "messages.read")
	for _, id := range []int64{b.APIKeyID, bKey.ID} {
		if r := e.Do(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + strconv.FormatInt(id, 10), Header: a.Key()}); r.Status != http.StatusNotFound {
			t.Fatalf("A revokes B's key %d = %d %s", id, r.Status, r.Body)
		}
	}
	if r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: KeyHeader(*bKey.PlainTextKey)}); r.Status != http.StatusOK {
		t.Fatalf("B's key after A's attempts = %d %s", r.Status, r.Body)
	}
	for _, k := range listKeys(t, e, a.APIKey) {
		if k.ID == b.APIKeyID || k.ID == bKey.ID {
			t.Fatalf("A lists B's key %d", k.ID)
		}
	}

	// Concurrent: both organizations create and read data and keys, revoke
	// their own keys and try the other's, at the same time.
	var (
		owner    sync.Map // key id → org id
		mu       sync.Mutex
		problems []string
		listed   = map[int64][]int64{} // org id → key ids seen in its lists
	)
	problem := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	owner.Store(a.APIKeyID, a.ID)
	owner.Store(b.APIKeyID, b.ID)
	owner.Store(bKey.ID, b.ID)
	const workers, rounds = 4, 15
	var wg sync.WaitGroup
	for oi, o := range orgs {
		other := orgs[1-oi]
		for w := range workers {
			wg.Go(func() {
				for i := range rounds {
					label := fmt.Sprintf("%sw%d-%d", tag(o), w, i)
					r, err := e.Send(Request{Method: http.MethodPost, Path: "/api/v1/test/notes", Header: o.Key(), Body: map[string]any{"label": label}})
					if err != nil || r.Status != http.StatusCreated {
						problem("create note: %s", describe(r, err))
						return
					}
					var note struct {
						ID int64 `json:"id"`
					}
					_ = json.Unmarshal(r.Body, &note)
					// Read own note back, and a random id (which may be the
					// other's): only own labels ever come back.
					for _, id := range []int64{note.ID, 1 + rand.Int64N(workers*rounds*2)} {
						r, err := e.Send(Request{Method: http.MethodGet, Path: "/api/v1/test/notes/" + strconv.FormatInt(id, 10), Header: o.Key()})
						switch {
						case err != nil:
							problem("read note: %v", err)
						case r.Status == http.StatusNotFound && id != note.ID:
						case r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"label":"`+tag(o)):
							problem("org %d read note %d: %d %s", o.ID, id, r.Status, r.Body)
						}
					}
					// Create and revoke an own key; the other's key is 404.
					r, err = e.Send(Request{Method: http.MethodPost, Path: tenantKeys, Header: o.Key(), Body: map[string]any{"name": label, "scopes": []string{"usage.read"}}})
					if err != nil || r.Status != http.StatusCreated {
						problem("create key: %s", describe(r, err))
						return
					}
					var k keyResource
					_ = json.Unmarshal(r.Body, &k)
					owner.Store(k.ID, o.ID)
					if r, err := e.Send(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + strconv.FormatInt(k.ID, 10), Header: o.Key()}); err != nil || r.Status != http.StatusNoContent {
						problem("revoke own key: %s", describe(r, err))
					}
					if r, err := e.Send(Request{Method: http.MethodDelete, Path: tenantKeys + "/" + strconv.FormatInt(other.APIKeyID, 10), Header: o.Key()}); err != nil || r.Status != http.StatusNotFound {
						problem("org %d revoke other's key: %s", o.ID, describe(r, err))
					}
					r, err = e.Send(Request{Method: http.MethodGet, Path: tenantKeys + "?limit=100", Header: o.Key()})
					if err != nil || r.Status != http.StatusOK {
						problem("list keys: %s", describe(r, err))
						continue
					}
					var page struct {
						Data []keyResource `json:"data"`
					}
					_ = json.Unmarshal(r.Body, &page)
					mu.Lock()
					for _, k := range page.Data {
						listed[o.ID] = append(listed[o.ID], k.ID)
					}
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	for orgID, ids := range listed {
		for _, id := range ids {
			if got, ok := owner.Load(id); !ok || got.(int64) != orgID {
				t.Fatalf("org %d listed key %d of org %v", orgID, id, got)
			}
		}
	}
	// Each schema holds exactly its own organization's data, and both
	// organizations' other keys survived.
	for _, o := range orgs {
		var own, foreign int
		if err := e.App.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE display_name LIKE $1 || '%'), count(*) FILTER (WHERE display_name NOT LIKE $1 || '%') FROM `+
			o.Tenant.Table("sender_numbers"), tag(o)).Scan(&own, &foreign); err != nil {
			t.Fatal(err)
		}
		if own != workers*rounds || foreign != 0 {
			t.Fatalf("schema of org %d: %d own rows, %d foreign; want %d and 0", o.ID, own, foreign, workers*rounds)
		}
		if r := e.Do(Request{Method: http.MethodGet, Path: tenantMe, Header: o.Key()}); r.Status != http.StatusOK {
			t.Fatalf("org %d key after the run = %d", o.ID, r.Status)
		}
	}
}

// describe summarises an exchange made with Send for a failure message.
func describe(r *Response, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%d %s", r.Status, r.Body)
}
