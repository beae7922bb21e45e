package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/bizmsg/platform/platform/apikey"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/keys"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/phone"
)

// benchTenant is one organization of the benchmark: its schema, an API key
// with every scope, and its active sender numbers.
type benchTenant struct {
	Tenant  db.Tenant
	APIKey  string
	Senders []int64
}

// fixtureConfig shapes the benchmark's data.
type fixtureConfig struct {
	Tenants     int
	Senders     int
	Recipients  int
	Concurrency int
	// Pepper keys the API-key hashes; the service under test gets the same.
	Pepper []byte
	// DailyLimit is every organization's default_daily_limit, high enough
	// never to bind.
	DailyLimit int
}

// fixtures builds the benchmark's organizations through the fast path: the
// organization row and its schema (the migrator, as provisioning does), an
// API key through keys.Service.Create, and sender numbers inserted as active
// together with their directory rows and network accounts; plus recipients
// on the built-in network. Nothing goes through HTTP or password hashing.
type fixtures struct {
	d    *db.DB
	m    *migrate.Migrator
	keys *keys.Service
	cfg  fixtureConfig
}

// newFixtures returns the fixtures of cfg on d, their API keys hashed with
// pepper (the service's). With base, it first migrates the base schemas
// (central, network, river) of a scratch database.
func newFixtures(ctx context.Context, d *db.DB, pepper string, cfg fixtureConfig, base bool) (*fixtures, error) {
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Concurrency: max(cfg.Concurrency, 1), Logger: quietLogger()})
	if err != nil {
		return nil, fmt.Errorf("migrator: %w", err)
	}
	if base {
		if _, err := m.Base(ctx); err != nil {
			return nil, fmt.Errorf("migrate base schemas: %w", err)
		}
	}
	hasher, err := apikey.NewHasher([]byte(pepper))
	if err != nil {
		return nil, fmt.Errorf("api key hasher: %w", err)
	}
	ks, err := keys.New(keys.Config{DB: d, Hasher: hasher, Logger: quietLogger()})
	if err != nil {
		return nil, fmt.Errorf("key service: %w", err)
	}
	return &fixtures{d: d, m: m, keys: ks, cfg: cfg}, nil
}

// senderPhone and recipientPhone are valid, distinct E.164 numbers (San
// Francisco and New York exchanges 200 and up).
func senderPhone(tenant, sender int) string {
	return fmt.Sprintf("+1415%07d", 2000000+tenant*100+sender)
}

func recipientPhone(i int) string { return fmt.Sprintf("+1212%07d", 2000000+i) }

// build creates everything and returns the tenants in creation order.
// progress, when not nil, is told how many tenants are done.
func (f *fixtures) build(ctx context.Context, progress func(done int)) ([]benchTenant, error) {
	if f.cfg.Senders > 100 {
		return nil, fmt.Errorf("at most 100 senders per tenant")
	}
	for _, p := range []string{senderPhone(f.cfg.Tenants, f.cfg.Senders), recipientPhone(f.cfg.Recipients)} {
		if _, err := phone.Normalize(p); err != nil {
			return nil, fmt.Errorf("fixture phone %s: %w", p, err)
		}
	}
	rows := make([][]any, 0, f.cfg.Recipients)
	for i := range f.cfg.Recipients {
		rows = append(rows, []any{recipientPhone(i), time.Now()})
	}
	if _, err := f.d.Pool.CopyFrom(ctx, pgx.Identifier{"network", "accounts"},
		[]string{"phone", "verified_at"}, pgx.CopyFromRows(rows)); err != nil {
		return nil, fmt.Errorf("recipients: %w", err)
	}
	out := make([]benchTenant, f.cfg.Tenants)
	var done atomic.Int64
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(f.cfg.Concurrency, 1))
	for i := range f.cfg.Tenants {
		g.Go(func() error {
			bt, err := f.tenant(gctx, i)
			if err != nil {
				return fmt.Errorf("tenant %d: %w", i, err)
			}
			mu.Lock()
			out[i] = bt
			mu.Unlock()
			if n := done.Add(1); progress != nil {
				progress(int(n))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// tenant provisions the i-th organization.
func (f *fixtures) tenant(ctx context.Context, i int) (benchTenant, error) {
	var id int64
	if err := f.d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name, subscription_status, default_daily_limit)
		VALUES ($1, 'active', $2) RETURNING id`, fmt.Sprintf("bench %d", i), f.cfg.DailyLimit).Scan(&id); err != nil {
		return benchTenant{}, fmt.Errorf("create organization: %w", err)
	}
	t := db.Tenant{OrgID: id, Schema: db.SchemaFor(id)}
	if _, err := f.d.Pool.Exec(ctx, "UPDATE central.organizations SET schema_name = $2 WHERE id = $1", id, t.Schema); err != nil {
		return benchTenant{}, fmt.Errorf("name schema: %w", err)
	}
	if _, err := f.m.Tenant(ctx, t); err != nil {
		return benchTenant{}, err
	}
	created, err := f.keys.Create(ctx, id, keys.Actor{}, keys.Spec{Name: "bench", Scopes: []string{apikey.ScopeAll}, ExpiresInDays: 30})
	if err != nil {
		return benchTenant{}, err
	}
	bt := benchTenant{Tenant: t, APIKey: created.Plain}
	err = pgx.BeginFunc(ctx, f.d.Pool, func(tx pgx.Tx) error {
		for s := range f.cfg.Senders {
			p := senderPhone(i, s)
			var sid int64
			if err := tx.QueryRow(ctx, `INSERT INTO `+t.Table("sender_numbers")+`
				(phone, display_name, status, verification_status, verified_at, activated_at)
				VALUES ($1, 'bench', 'active', 'verified', now(), now()) RETURNING id`, p).Scan(&sid); err != nil {
				return fmt.Errorf("sender: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO central.sender_number_directory (organization_id, sender_id, phone, status)
				VALUES ($1, $2, $3, 'active')`, id, sid, p); err != nil {
				return fmt.Errorf("sender directory: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO central.active_sender_phones (phone, organization_id, sender_id)
				VALUES ($1, $2, $3)`, p, id, sid); err != nil {
				return fmt.Errorf("active sender phone: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO network.accounts (phone, verified_at, phone_verified_at)
				VALUES ($1, now(), now())`, p); err != nil {
				return fmt.Errorf("sender account: %w", err)
			}
			bt.Senders = append(bt.Senders, sid)
		}
		return nil
	})
	return bt, err
}
