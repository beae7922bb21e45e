package messages

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/senders"
)

// unusedSenders and unusedNetwork satisfy Config; the batch never calls them.
type unusedSenders struct{}

func (unusedSenders) Resolve(context.Context, db.Tenant, senders.SenderRef) (senders.Sender, error) {
	return senders.Sender{}, errors.New("not used")
}

type unusedNetwork struct{ network.Network }

// A batch whose statement the database refuses for one message's data (a
// duration out of the integer range, which validation keeps out of sends
// but a batch must not count on) falls back to accepting each message on its own: only that one
// fails, the others are stored.
func TestAcceptBatchDataErrorFallsBack(t *testing.T) {
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	ctx := context.Background()
	var org int64
	if err := d.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('org') RETURNING id`).Scan(&org); err != nil {
		t.Fatal(err)
	}
	tn, err := db.NewTenant(org, db.SchemaFor(org))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, org, tn.Schema); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	mig, err := migrate.New(d.Pool, migrate.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mig.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	var sid int64
	if err := d.Pool.QueryRow(ctx, fmt.Sprintf(`INSERT INTO %s (phone, status, verification_status, verified_at, activated_at)
		VALUES ('+14155550001', 'active', 'verified', now(), now()) RETURNING id`, tn.Table("sender_numbers"))).Scan(&sid); err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{DB: d.Bun, Senders: unusedSenders{}, Network: unusedNetwork{}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	item := func(duration int) acceptance {
		return acceptance{ref: senders.SenderRef{ID: sid}, r: &row{ToPhone: "+14155550002", Type: TypeVoice,
			Content: "https://x.example/v.ogg", Duration: &duration, Status: StatusQueued, CreatedAt: now, UpdatedAt: now}}
	}
	items := []acceptance{item(1), item(1 << 40), item(3)}
	out, err := s.acceptBatch(ctx, tn, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range out {
		if (o.err != nil) != (i == 1) {
			t.Errorf("message %d: %v", i, o.err)
		}
	}
	var n int
	if err := d.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, tn.Table("messages"))).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d messages stored, want 2", n)
	}
}
