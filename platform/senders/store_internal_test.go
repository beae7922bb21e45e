package senders

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/migrate"
)

// inUTC is r with its times in UTC, to compare rows read by pgx and bun.
func inUTC(r row) row {
	utc := func(p *time.Time) *time.Time {
		if p == nil {
			return nil
		}
		v := p.UTC()
		return &v
	}
	r.OTPExpiresAt, r.OTPSentAt, r.OTPIssuedAt = utc(r.OTPExpiresAt), utc(r.OTPSentAt), utc(r.OTPIssuedAt)
	r.VerifiedAt, r.ActivatedAt = utc(r.VerifiedAt), utc(r.ActivatedAt)
	r.CreatedAt, r.UpdatedAt = r.CreatedAt.UTC(), r.UpdatedAt.UTC()
	return r
}

// differing names the fields of row where a and b differ.
func differing(a, b row) []string {
	va, vb := reflect.ValueOf(inUTC(a)), reflect.ValueOf(inUTC(b))
	var out []string
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, va.Type().Field(i).Name)
		}
	}
	return out
}

// TestSaveRowWritesEveryColumn changes every column of a number but its
// id, phone and creation in one locked transaction and saves it with the
// one save_row statement: the row read back, by pgx (findRow) and by bun
// (getRow, listRows), is the row saved. A column save_row leaves out, or
// a field of row the change below does not touch, fails it.
func TestSaveRowWritesEveryColumn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := dbtest.Migrated(t)
	m, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tn := db.Tenant{OrgID: 1, Schema: db.SchemaFor(1)}
	if _, err := m.Tenant(ctx, tn); err != nil {
		t.Fatal(err)
	}
	q, err := loadNamed()
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)
	first := row{Phone: "+14155550100", DisplayName: "Support", Status: StatusPendingVerification,
		VerificationStatus: VerificationPending, CreatedAt: at, UpdatedAt: at}
	if err := db.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error { return q.insertRow(ctx, tx, tn, &first) }); err != nil {
		t.Fatal(err)
	}
	later := func(d time.Duration) *time.Time { v := at.Add(d); return &v }
	limit := 250
	var saved row
	err = db.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		r, err := q.lockRow(ctx, tx, tn, first.ID)
		if err != nil {
			return err
		}
		r.DisplayName, r.Status, r.VerificationStatus = "Sales", StatusActive, VerificationVerified
		r.DailyLimitOverride, r.OTPHash, r.OTPAttempts, r.OTPGeneration = &limit, []byte{1, 2, 3}, 2, 3
		r.OTPExpiresAt, r.OTPSentAt, r.OTPIssuedAt = later(time.Minute), later(2*time.Minute), later(3*time.Minute)
		r.VerifiedAt, r.ActivatedAt = later(4*time.Minute), later(5*time.Minute)
		if err := q.saveRow(ctx, tx, tn, r, at.Add(time.Hour)); err != nil {
			return err
		}
		saved = *r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every field but the three a save keeps differs from the first row.
	changed := differing(first, saved)
	if n := reflect.TypeFor[row]().NumField() - 4; len(changed) != n { // BaseModel, ID, Phone, CreatedAt
		t.Errorf("the change touched %d fields, %v, of the %d a save writes: change every one", len(changed), changed, n)
	}

	got, err := q.findRow(ctx, d.Pool, tn, first.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := differing(*got, saved); len(diff) > 0 {
		t.Errorf("read back by pgx, %v differ from the row saved", diff)
	}
	byPhone, err := q.findRow(ctx, d.Pool, tn, 0, first.Phone)
	if err != nil || byPhone.ID != first.ID {
		t.Errorf("by phone: %+v, %v", byPhone, err)
	}
	viaBun, err := getRow(ctx, d.Bun, tn, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := differing(*viaBun, saved); len(diff) > 0 {
		t.Errorf("read back by bun, %v differ from the row saved", diff)
	}
	list, err := listRows(ctx, d.Bun, tn)
	if err != nil || len(list) != 1 {
		t.Fatalf("listed %d rows, %v; want 1", len(list), err)
	}
	if diff := differing(list[0], saved); len(diff) > 0 {
		t.Errorf("listed by bun, %v differ from the row saved", diff)
	}
}
