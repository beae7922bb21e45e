package keys_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/ratelimit"
)

// rateBundle is a keys fixture whose Service decides request rates (1/s,
// burst 3 by default) in its authentication statement.
type rateBundle struct {
	*fixture
	store *pace.Store
}

func setupRate(t testing.TB, opts ...func(*keys.Config)) *rateBundle {
	t.Helper()
	b := &rateBundle{}
	b.fixture = newFixture(t, false, append([]func(*keys.Config){func(c *keys.Config) {
		var err error
		if b.store, err = pace.New(pace.Config{Pool: c.DB.Pool}); err != nil {
			t.Fatal(err)
		}
		c.Pace, c.RequestRate = b.store, ratelimit.Limit{Rate: 1, Burst: 3}
	}}, opts...)...)
	return b
}

// The statement that finds a key decides its rate: a burst of 3 is allowed
// with 2, 1 and 0 left, the 4th refused with the time until a slot is due;
// a wrong secret, a revoked key and an expired key take no slot; a key of
// another organization with its own limit has that limit.
func TestAuthenticateDecidesRate(t *testing.T) {
	t.Parallel()
	b := setupRate(t)
	ctx := context.Background()
	k := b.create(t, keys.Actor{UserID: b.user}, 1, "*")
	for i, want := range []int{2, 1, 0} {
		a, err := b.svc.Authenticate(ctx, k.Plain)
		if err != nil {
			t.Fatal(err)
		}
		if a.Rate == nil || !a.Rate.Allowed || a.Rate.Remaining != want || a.Rate.Limit != (ratelimit.Limit{Rate: 1, Burst: 3}) {
			t.Fatalf("request %d: rate %+v, want allowed with %d left", i+1, a.Rate, want)
		}
		if a.Member == nil || a.Member.ID != b.user || a.Member.Role != "admin" {
			t.Fatalf("request %d: member %+v, want user %d (admin)", i+1, a.Member, b.user)
		}
	}
	a, err := b.svc.Authenticate(ctx, k.Plain)
	if err != nil || a.Rate == nil || a.Rate.Allowed || a.Rate.RetryAfter <= 0 || a.Rate.RetryAfter > time.Second {
		t.Fatalf("4th request: %+v, %v; want refused, retry within 1s", a, err)
	}

	// Refused keys take no slot: a well-formed key whose prefix names a
	// stored key with another secret, a revoked key, an expired key.
	victim := b.create(t, keys.Actor{}, 1, "*")
	forged, err := apikey.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.db.Pool.Exec(ctx, `UPDATE central.api_keys SET prefix = $2 WHERE id = $1`, victim.Key.ID, forged.Prefix); err != nil {
		t.Fatal(err)
	}
	revoked := b.create(t, keys.Actor{}, 1, "*")
	if err := b.svc.Revoke(ctx, b.org, keys.Actor{}, revoked.Key.ID); err != nil {
		t.Fatal(err)
	}
	expired := b.create(t, keys.Actor{}, 1, "*")
	if _, err := b.db.Pool.Exec(ctx, `UPDATE central.api_keys SET expires_at = $2 WHERE id = $1`, expired.Key.ID, b.clock.Now()); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		plain, code string
		id          int64
	}{{forged.Plain, keys.CodeInvalidKey, victim.Key.ID}, {revoked.Plain, keys.CodeRevokedKey, revoked.Key.ID}, {expired.Plain, keys.CodeExpiredKey, expired.Key.ID}} {
		if _, err := b.svc.Authenticate(ctx, r.plain); code(err) != r.code {
			t.Fatalf("key %d: %v, want %s", r.id, err, r.code)
		}
		var rows int
		if err := b.db.Pool.QueryRow(ctx, `SELECT count(*) FROM central.pace WHERE key = $1`, "key:"+strconv.FormatInt(r.id, 10)).Scan(&rows); err != nil || rows != 0 {
			t.Fatalf("refused key %d: %d bucket rows, %v; want none", r.id, rows, err)
		}
		if got := lastUsed(t, b.fixture, r.id)[0]; got != nil {
			t.Fatalf("refused key %d: last_used_at written (%v)", r.id, got)
		}
	}

	if _, err := b.db.Pool.Exec(ctx, `UPDATE central.organizations SET api_rate_limit = 100, api_rate_burst = 7 WHERE id = $1`, b.org); err != nil {
		t.Fatal(err)
	}
	other := b.create(t, keys.Actor{}, 1, "*")
	if a, err := b.svc.Authenticate(ctx, other.Plain); err != nil || a.Rate.Limit != (ratelimit.Limit{Rate: 100, Burst: 7}) || a.Rate.Remaining != 6 {
		t.Fatalf("organization's own limit: %+v, %v", a.Rate, err)
	}
}

// Concurrent authentications of one key, sharing statements or not, are
// allowed exactly the burst.
func TestConcurrentAuthenticationsTakeTheBurst(t *testing.T) {
	t.Parallel()
	b := setupRate(t, func(c *keys.Config) { c.RequestRate = ratelimit.Limit{Rate: 0.001, Burst: 10} })
	k := b.create(t, keys.Actor{}, 1, "*")
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range 40 {
		wg.Go(func() {
			a, err := b.svc.Authenticate(context.Background(), k.Plain)
			if err != nil {
				t.Error(err)
				return
			}
			if a.Rate.Allowed {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != 10 {
		t.Fatalf("%d of 40 allowed, want the burst of 10", allowed)
	}
}

// A limit that is not valid (here a default of zero) allows every request
// and touches no bucket.
func TestAuthenticateWithoutALimit(t *testing.T) {
	t.Parallel()
	b := setupRate(t, func(c *keys.Config) { c.RequestRate = ratelimit.Limit{} })
	k := b.create(t, keys.Actor{}, 1, "*")
	for range 5 {
		a, err := b.svc.Authenticate(context.Background(), k.Plain)
		if err != nil || a.Rate == nil || !a.Rate.Allowed || a.Rate.Limit.Valid() {
			t.Fatalf("%+v, %v; want allowed without a limit", a, err)
		}
	}
	if n, _, err := b.store.Len(context.Background()); err != nil || n != 0 {
		t.Fatalf("buckets = %d, %v; want none", n, err)
	}
}
