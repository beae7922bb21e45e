package keys_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/page"
	"github.com/bizmsg/platform/platform/ratelimit"
)

func TestCreateRequestSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		want       keys.Spec
		wantFields []string
	}{
		{"minimal", `{"name":"k","scopes":["usage.read"]}`, keys.Spec{Name: "k", Scopes: []string{"usage.read"}, ExpiresInDays: 90}, nil},
		{"trimmed name, sorted scopes", `{"name":"  k  ","scopes":["messages.send","contacts.lookup","messages.send"],"expires_in_days":7}`,
			keys.Spec{Name: "k", Scopes: []string{"contacts.lookup", "messages.send"}, ExpiresInDays: 7}, nil},
		{"star absorbs", `{"name":"k","scopes":["usage.read","*"],"expires_in_days":365}`, keys.Spec{Name: "k", Scopes: []string{"*"}, ExpiresInDays: 365}, nil},
		{"null days default", `{"name":"k","scopes":["*"],"expires_in_days":null}`, keys.Spec{Name: "k", Scopes: []string{"*"}, ExpiresInDays: 90}, nil},
		{"days 1", `{"name":"k","scopes":["*"],"expires_in_days":1}`, keys.Spec{Name: "k", Scopes: []string{"*"}, ExpiresInDays: 1}, nil},
		{"days 0", `{"name":"k","scopes":["*"],"expires_in_days":0}`, keys.Spec{}, []string{"expires_in_days"}},
		{"days 366", `{"name":"k","scopes":["*"],"expires_in_days":366}`, keys.Spec{}, []string{"expires_in_days"}},
		{"days fraction", `{"name":"k","scopes":["*"],"expires_in_days":2.5}`, keys.Spec{}, []string{"expires_in_days"}},
		{"days string", `{"name":"k","scopes":["*"],"expires_in_days":"2"}`, keys.Spec{}, []string{"expires_in_days"}},
		{"days exponent", `{"name":"k","scopes":["*"],"expires_in_days":2e0}`, keys.Spec{}, []string{"expires_in_days"}},
		{"name control character", `{"name":"a\u0000b","scopes":["*"]}`, keys.Spec{}, []string{"name"}},
		{"name 100 characters", `{"name":"` + strings.Repeat("é", 100) + `","scopes":["*"]}`, keys.Spec{Name: strings.Repeat("é", 100), Scopes: []string{"*"}, ExpiresInDays: 90}, nil},
		{"name 101 characters", `{"name":"` + strings.Repeat("é", 101) + `","scopes":["*"]}`, keys.Spec{}, []string{"name"}},
		{"scopes object", `{"name":"k","scopes":{"a":1}}`, keys.Spec{}, []string{"scopes"}},
		{"all wrong", `{"name":[],"scopes":["nope"],"expires_in_days":-1}`, keys.Spec{}, []string{"name", "scopes", "expires_in_days"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var req keys.CreateRequest
			if err := json.Unmarshal([]byte(tt.body), &req); err != nil {
				t.Fatal(err)
			}
			got, err := req.Spec()
			if tt.wantFields == nil {
				if err != nil || got.Name != tt.want.Name || got.ExpiresInDays != tt.want.ExpiresInDays || !slices.Equal(got.Scopes, tt.want.Scopes) {
					t.Fatalf("Spec = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			e, ok := apperr.As(err)
			if !ok || e.Kind != apperr.KindInvalid || len(e.Fields) != len(tt.wantFields) {
				t.Fatalf("Spec error = %v; want fields %v", err, tt.wantFields)
			}
			for _, f := range tt.wantFields {
				if len(e.Fields[f]) == 0 {
					t.Errorf("no error for %s: %v", f, e.Fields)
				}
			}
		})
	}
}

func TestKeyStatus(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)
	past := now.Add(-time.Second)
	tests := []struct {
		name string
		k    keys.Key
		want string
	}{
		{"active", keys.Key{ExpiresAt: now.Add(time.Second)}, keys.StatusActive},
		{"expires exactly now", keys.Key{ExpiresAt: now}, keys.StatusExpired},
		{"expired", keys.Key{ExpiresAt: past}, keys.StatusExpired},
		{"revoked", keys.Key{ExpiresAt: now.Add(time.Hour), RevokedAt: &past}, keys.StatusRevoked},
		{"revoked and expired", keys.Key{ExpiresAt: past, RevokedAt: &past}, keys.StatusRevoked},
	}
	for _, tt := range tests {
		if got := tt.k.Status(now); got != tt.want {
			t.Errorf("%s: Status = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// fixture is a migrated database with one organization and a Service.
type fixture struct {
	db    *db.DB
	svc   *keys.Service
	clock *clock.Fake
	org   int64
	user  int64
	cfg   keys.Config // the Service's
}

func newFixture(t testing.TB, sealed bool, opts ...func(*keys.Config)) *fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	ctx := context.Background()
	f := &fixture{db: d, clock: clock.NewFake(time.Date(2026, 11, 22, 14, 0, 0, 0, time.UTC))}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('o') RETURNING id`).Scan(&f.org); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, f.org, db.SchemaFor(f.org)); err != nil {
		t.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.users (email, name, password_hash) VALUES ('u@example.com', 'U', 'x') RETURNING id`).Scan(&f.user); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `INSERT INTO central.memberships (organization_id, user_id, role) VALUES ($1, $2, 'admin')`, f.org, f.user); err != nil {
		t.Fatal(err)
	}
	h, err := apikey.NewHasher(bytes.Repeat([]byte("p"), 32))
	if err != nil {
		t.Fatal(err)
	}
	cfg := keys.Config{DB: d, Hasher: h, Clock: f.clock}
	if sealed {
		if cfg.Sealer, err = apikey.NewSealer(bytes.Repeat([]byte("s"), 32)); err != nil {
			t.Fatal(err)
		}
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	if f.svc, err = keys.New(cfg); err != nil {
		t.Fatal(err)
	}
	f.cfg = cfg
	return f
}

func (f *fixture) create(t testing.TB, actor keys.Actor, days int, scopes ...string) *keys.Created {
	t.Helper()
	c, err := f.svc.Create(context.Background(), f.org, actor, keys.Spec{Name: "k", Scopes: scopes, ExpiresInDays: days})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return c
}

func code(err error) string {
	if e, ok := apperr.As(err); ok {
		return e.Code
	}
	return ""
}

func TestServiceLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	ctx := context.Background()
	c := f.create(t, keys.Actor{UserID: f.user}, 2, "messages.send")
	if c.Key.CreatedBy != f.user || !c.Key.Sealed || c.Key.Status(f.clock.Now()) != keys.StatusActive {
		t.Fatalf("created = %+v", c.Key)
	}
	a, err := f.svc.Authenticate(ctx, c.Plain)
	if err != nil || a.Key.ID != c.Key.ID || a.Org.ID != f.org || a.Org.Tenant.Schema != db.SchemaFor(f.org) || a.Key.LastUsedAt == nil {
		t.Fatalf("Authenticate = %+v, %v", a, err)
	}
	if u, err := f.svc.Member(ctx, f.org, a.Key.CreatedBy); err != nil || u == nil || u.Role != "admin" {
		t.Fatalf("Member = %+v, %v", u, err)
	}

	// Reveal gives back the plain key and writes an audit row.
	r, err := f.svc.Reveal(ctx, f.org, f.user, c.Key.ID)
	if err != nil || r.Plain != c.Plain {
		t.Fatalf("Reveal = %v, %v", r, err)
	}
	var audits int
	if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM central.audit_log WHERE action = 'api_key.reveal'`).Scan(&audits); err != nil || audits != 1 {
		t.Fatalf("reveal audits = %d, %v", audits, err)
	}
	if _, err := f.svc.Reveal(ctx, f.org+1, f.user, c.Key.ID); code(err) != "not_found" {
		t.Fatalf("Reveal other org = %v", err)
	}

	// Restricted actors: subset rules for create and revoke.
	restricted := keys.Actor{KeyID: c.Key.ID, Scopes: []string{"messages.send"}}
	if _, err := f.svc.Create(ctx, f.org, restricted, keys.Spec{Name: "x", Scopes: []string{"*"}, ExpiresInDays: 1}); code(err) != "insufficient_scope" {
		t.Fatalf("restricted create * = %v", err)
	}
	wide := f.create(t, keys.Actor{}, 1, "*")
	if err := f.svc.Revoke(ctx, f.org, restricted, wide.Key.ID); code(err) != "insufficient_scope" {
		t.Fatalf("restricted revoke * = %v", err)
	}
	if err := f.svc.Revoke(ctx, f.org+1, keys.Actor{}, wide.Key.ID); code(err) != "not_found" {
		t.Fatalf("revoke other org = %v", err)
	}

	// Revoked and expired keys fail with their own codes.
	if err := f.svc.Revoke(ctx, f.org, keys.Actor{}, wide.Key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, wide.Plain); code(err) != keys.CodeRevokedKey {
		t.Fatalf("revoked = %v", err)
	}
	f.clock.Advance(48 * time.Hour)
	if _, err := f.svc.Authenticate(ctx, c.Plain); code(err) != keys.CodeExpiredKey {
		t.Fatalf("expired = %v", err)
	}
	if _, err := f.svc.Reveal(ctx, f.org, f.user, c.Key.ID); code(err) != "api_key_not_active" {
		t.Fatalf("reveal expired = %v", err)
	}
	if _, err := f.svc.Authenticate(ctx, "bmk_nope"); code(err) != keys.CodeInvalidKey {
		t.Fatalf("malformed = %v", err)
	}

	// Listing pages through every key, newest first.
	pg, err := page.Parse("1", "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for {
		list, next, err := f.svc.List(ctx, f.org, pg)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range list {
			ids = append(ids, k.ID)
		}
		if next == "" {
			break
		}
		if pg, err = page.Parse("1", next); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(ids, []int64{wide.Key.ID, c.Key.ID}) {
		t.Fatalf("listed %v", ids)
	}
}

func TestRevealWithoutSealer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	c := f.create(t, keys.Actor{UserID: f.user}, 1, "*")
	if c.Key.Sealed || f.svc.CanReveal() {
		t.Fatal("sealed without a sealer")
	}
	if _, err := f.svc.Reveal(context.Background(), f.org, f.user, c.Key.ID); code(err) != "reveal_unavailable" {
		t.Fatalf("Reveal = %v", err)
	}
}

// Concurrent authentications of one key write last_used_at once per
// interval.
func TestTouchOncePerInterval(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	c := f.create(t, keys.Actor{}, 1, "*")
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 200 {
		wg.Go(func() {
			if _, err := f.svc.Authenticate(context.Background(), c.Plain); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := f.svc.LastUsedWrites(); n != 1 {
		t.Fatalf("writes = %d, want 1", n)
	}
	f.clock.Advance(keys.DefaultTouchInterval)
	if _, err := f.svc.Authenticate(context.Background(), c.Plain); err != nil {
		t.Fatal(err)
	}
	if n := f.svc.LastUsedWrites(); n != 2 {
		t.Fatalf("writes after the interval = %d, want 2", n)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	h, err := apikey.NewHasher(bytes.Repeat([]byte("p"), 32))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  keys.Config
		want string
	}{
		{"no database", keys.Config{Hasher: h}, "Config.DB is required"},
		{"no hasher", keys.Config{DB: db.FromPool(new(pgxpool.Pool))}, "Config.Hasher is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := keys.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// Authentications that arrive while the process's key read is busy share
// the next read, and each still gets its own key's answer: a valid key
// (twice), a revoked one, a wrong secret and an unknown prefix. The first
// read is held by a lock on the table until the others have queued. With
// rates decided (Config.Pace), the valid key's two requests of the run
// take the bucket's next two slots and the refused ones none.
func TestAuthenticationsShareReads(t *testing.T) {
	t.Parallel()
	for _, paced := range []bool{false, true} {
		t.Run(fmt.Sprintf("paced=%v", paced), func(t *testing.T) {
			t.Parallel()
			testAuthenticationsShareReads(t, paced)
		})
	}
}

func testAuthenticationsShareReads(t *testing.T, paced bool) {
	var f *fixture
	if paced {
		f = setupRate(t, func(c *keys.Config) { c.RequestRate = ratelimit.Limit{Rate: 0.001, Burst: 10} }).fixture
	} else {
		f = newFixture(t, false)
	}
	ctx := context.Background()
	good := f.create(t, keys.Actor{}, 1, "messages.send")
	other := f.create(t, keys.Actor{}, 1, "usage.read")
	revoked := f.create(t, keys.Actor{}, 1, "*")
	if err := f.svc.Revoke(ctx, f.org, keys.Actor{}, revoked.Key.ID); err != nil {
		t.Fatal(err)
	}
	// A well-formed key whose prefix names a stored key with another secret.
	forged, err := apikey.Generate()
	if err != nil {
		t.Fatal(err)
	}
	victim := f.create(t, keys.Actor{}, 1, "*")
	if _, err := f.db.Pool.Exec(ctx, `UPDATE central.api_keys SET prefix = $2 WHERE id = $1`, victim.Key.ID, forged.Prefix); err != nil {
		t.Fatal(err)
	}
	unknown := f.create(t, keys.Actor{}, 1, "*")
	if _, err := f.db.Pool.Exec(ctx, `DELETE FROM central.api_keys WHERE id = $1`, unknown.Key.ID); err != nil {
		t.Fatal(err)
	}

	type outcome struct {
		a   *keys.Auth
		err error
	}
	tests := []struct {
		name, plain, wantCode string
		wantKey               int64
	}{
		{"valid", good.Plain, "", good.Key.ID},
		{"valid again", good.Plain, "", good.Key.ID},
		{"revoked", revoked.Plain, keys.CodeRevokedKey, 0},
		{"wrong secret", forged.Plain, keys.CodeInvalidKey, 0},
		{"unknown prefix", unknown.Plain, keys.CodeInvalidKey, 0},
	}
	var svc *keys.Service
	got := make([]outcome, len(tests))
	runs := dbtest.SharedRuns(t, f.db, "central.api_keys", func(b batch.Config) func() error {
		cfg := f.cfg
		cfg.Batch = b
		var err error
		if svc, err = keys.New(cfg); err != nil {
			t.Fatal(err)
		}
		return func() error {
			a, err := svc.Authenticate(ctx, other.Plain)
			if err == nil && a.Key.ID != other.Key.ID {
				err = fmt.Errorf("authenticated key %d, want %d", a.Key.ID, other.Key.ID)
			}
			return err
		}
	}, func() {
		var wg sync.WaitGroup
		for i, tt := range tests {
			wg.Go(func() {
				a, err := svc.Authenticate(ctx, tt.plain)
				got[i] = outcome{a, err}
			})
		}
		wg.Wait()
	}, len(tests))
	for i, tt := range tests {
		o := got[i]
		if tt.wantCode != "" {
			if code(o.err) != tt.wantCode {
				t.Errorf("%s: error %v, want %s", tt.name, o.err, tt.wantCode)
			}
			continue
		}
		if o.err != nil || o.a.Key.ID != tt.wantKey || o.a.Org.ID != f.org || !slices.Equal(o.a.Key.Scopes, []string{"messages.send"}) {
			t.Errorf("%s: %+v, %v", tt.name, o.a, o.err)
		}
	}
	if got[0].a != nil && got[1].a != nil && &got[0].a.Key.Scopes[0] == &got[1].a.Key.Scopes[0] {
		t.Error("two callers of one key share its scopes slice")
	}
	if paced && got[0].a != nil && got[1].a != nil {
		left := []int{got[0].a.Rate.Remaining, got[1].a.Rate.Remaining}
		slices.Sort(left)
		if !got[0].a.Rate.Allowed || !got[1].a.Rate.Allowed || !slices.Equal(left, []int{8, 9}) {
			t.Errorf("the valid key's two requests: %+v, %+v; want allowed with 9 and 8 left", got[0].a.Rate, got[1].a.Rate)
		}
	}
	if len(runs) != 2 || runs[0] != 1 || runs[1] != len(tests) {
		t.Fatalf("runs = %v, want [1 %d]: the queued authentications did not share a read", runs, len(tests))
	}
}

// One authentication statement for several keys writes each stale key
// once (a key twice in the run, too), leaves fresh ones alone, and skips a
// row another transaction holds instead of waiting for it.
func TestTouchKeysTogether(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	ctx := context.Background()
	a, b, c := f.create(t, keys.Actor{}, 1, "*"), f.create(t, keys.Actor{}, 1, "*"), f.create(t, keys.Actor{}, 1, "*")
	now := f.clock.Now()
	got, err := f.svc.AuthRun(ctx, []string{a.Plain, b.Plain, a.Plain, c.Plain})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []bool{true, true, true, true}) {
		t.Fatalf("run of 4: written %v, want all", got)
	}
	if n := f.svc.LastUsedWrites(); n != 3 {
		t.Fatalf("writes = %d, want 3 (one per key)", n)
	}
	got, err = f.svc.AuthRun(ctx, []string{a.Plain, b.Plain})
	if err != nil || got[0] || got[1] || f.svc.LastUsedWrites() != 3 {
		t.Fatalf("fresh keys: %v, %v, %d writes; want nothing written", got, err, f.svc.LastUsedWrites())
	}

	f.clock.Advance(keys.DefaultTouchInterval)
	tx, err := f.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT 1 FROM central.api_keys WHERE id = $1 FOR UPDATE`, b.Key.ID); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	// b alone, then with a: neither waits for b's row.
	if got, err = f.svc.AuthRun(short, []string{b.Plain}); err != nil || got[0] {
		t.Fatalf("b alone with its row held: %v, %v; want b skipped", got, err)
	}
	got, err = f.svc.AuthRun(short, []string{a.Plain, b.Plain})
	if err != nil || !got[0] || got[1] {
		t.Fatalf("with b's row held: %v, %v; want a written and b skipped", got, err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err = f.svc.AuthRun(ctx, []string{b.Plain}); err != nil || !got[0] {
		t.Fatalf("b once free: %v, %v; want written", got, err)
	}
	stored := lastUsed(t, f, a.Key.ID, b.Key.ID, c.Key.ID)
	later := now.Add(keys.DefaultTouchInterval)
	if stored[0] == nil || !stored[0].Equal(later) || stored[1] == nil || !stored[1].Equal(later) ||
		stored[2] == nil || !stored[2].Equal(now) {
		t.Fatalf("stored last_used_at %v, want a and b at %v, c at %v", stored, later, now)
	}
}

// lastUsed reads the stored last_used_at of ids, in order (nil: never
// written).
func lastUsed(t *testing.T, f *fixture, ids ...int64) []*time.Time {
	t.Helper()
	out := make([]*time.Time, len(ids))
	for i, id := range ids {
		if err := f.db.Pool.QueryRow(context.Background(), `SELECT last_used_at FROM central.api_keys WHERE id = $1`, id).Scan(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// Many concurrent authentications of stale keys each write their key's
// last_used_at once, and each caller sees its key's new value.
func TestConcurrentTouchesOfManyKeys(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	const n = 40
	created := make([]*keys.Created, n)
	for i := range created {
		created[i] = f.create(t, keys.Actor{}, 1, "*")
	}
	for round := range 2 {
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for _, c := range created {
			wg.Go(func() {
				a, err := f.svc.Authenticate(context.Background(), c.Plain)
				if err == nil && (a.Key.LastUsedAt == nil || !a.Key.LastUsedAt.Equal(f.clock.Now())) {
					err = fmt.Errorf("key %d: last_used_at %v, want %v", c.Key.ID, a.Key.LastUsedAt, f.clock.Now())
				}
				errs <- err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if w := f.svc.LastUsedWrites(); w != int64(n*(round+1)) {
			t.Fatalf("round %d: %d writes, want %d", round, w, n*(round+1))
		}
		f.clock.Advance(keys.DefaultTouchInterval)
	}
}
