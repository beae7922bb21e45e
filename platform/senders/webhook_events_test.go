package senders_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/webhooks"
)

// tableEmitter records each event as a row of a table of the test database,
// in the transaction it is given: a rolled-back change leaves no event.
type tableEmitter struct{ fail bool }

func (e tableEmitter) Emit(ctx context.Context, tx pgx.Tx, t db.Tenant, evs ...webhooks.Event) error {
	if e.fail {
		return errors.New("emitter refuses")
	}
	for _, ev := range evs {
		data, err := json.Marshal(ev.Data)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO public.test_events (schema, type, key, data) VALUES ($1, $2, $3, $4)`,
			t.Schema, ev.Type, ev.Key, data); err != nil {
			return err
		}
	}
	return nil
}

// withEvents returns a service like f's that records events with e.
func (f *fixture) withEvents(e webhooks.Emitter) *senders.Service {
	f.t.Helper()
	if _, err := f.db.Pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS public.test_events
		(id bigserial PRIMARY KEY, schema text, type text, key text, data jsonb)`); err != nil {
		f.t.Fatal(err)
	}
	svc, err := senders.New(senders.Config{
		DB: f.db, Jobs: f.river, Network: f.net, Clock: f.clock, Events: e,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Secret: []byte(strings.Repeat("s", 32)),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return svc
}

// statuses returns the statuses carried by the tenant's recorded events, in
// order, checking each event's type and key.
func (f *fixture) statuses(tn db.Tenant, id int64) []string {
	f.t.Helper()
	rows, err := f.db.Pool.Query(context.Background(),
		`SELECT type, key, data->>'status' FROM public.test_events WHERE schema = $1 ORDER BY id`, tn.Schema)
	if err != nil {
		f.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, key, status string
		if err := rows.Scan(&typ, &key, &status); err != nil {
			f.t.Fatal(err)
		}
		if typ != webhooks.EventSenderStatusChanged || key != "sender_number:"+strconv.FormatInt(id, 10) {
			f.t.Fatalf("event %s %s", typ, key)
		}
		out = append(out, status)
	}
	return out
}

func TestStatusChangedEvents(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	svc := f.withEvents(tableEmitter{})
	tn := f.org("Acme")
	f.account(ph(41), false)
	s, err := svc.Register(ctx, tn, senders.RegisterInput{Phone: ph(41)})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.statuses(tn, s.ID); len(got) != 0 {
		t.Fatalf("registration reported %v: it is no change", got)
	}
	if _, err := svc.Verify(ctx, tn, s.ID, f.code(tn, s)); err != nil {
		t.Fatal(err)
	}
	// The network's automatic activation is a change like any other.
	if _, err := f.net.VerifyAccount(ctx, ph(41)); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.ActivateVerifiedOwners(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	at := senders.AdminTarget{Phone: ph(41), OrgID: tn.OrgID}
	if _, err := svc.Suspend(ctx, at); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Unsuspend(ctx, at); err != nil {
		t.Fatal(err)
	}
	want := []string{
		string(senders.StatusPendingAccountVerification), string(senders.StatusActive),
		string(senders.StatusSuspended), string(senders.StatusActive),
	}
	if got := f.statuses(tn, s.ID); !slices.Equal(got, want) {
		t.Fatalf("events carried %v, want %v", got, want)
	}

	// No change without its event: an emitter that fails rolls the change back.
	failing := f.withEvents(tableEmitter{fail: true})
	if _, err := failing.Suspend(ctx, at); err == nil {
		t.Fatal("suspend succeeded though its event could not be recorded")
	}
	if got := f.get(tn, s.ID); got.Status != senders.StatusActive {
		t.Fatalf("status %s after a failed event, want active", got.Status)
	}
}
