package senders_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
)

// claims counts the claims on phone p, and those of organization tn's
// number id.
func (f *fixture) claims(p string, tn db.Tenant, id int64) (all, its int) {
	f.t.Helper()
	all = f.count(`SELECT count(*) FROM central.active_sender_phones WHERE phone = $1`, p)
	its = f.count(`SELECT count(*) FROM central.active_sender_phones WHERE phone = $1 AND organization_id = $2 AND sender_id = $3`,
		p, tn.OrgID, id)
	return all, its
}

// An activation claims the phone before its tenant transaction; a wrong
// code (the transaction commits the attempt, not the activation) releases
// the claim, so another organization can activate the phone at once.
func TestClaimReleasedWithoutActivation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b := f.org("A"), f.org("B")
	f.account(ph(40), true)
	sa, sb := f.register(a, ph(40)), f.register(b, ph(40))
	_, err := f.svc.Verify(ctx, a, sa.ID, wrong(f.code(a, sa)))
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeOTPInvalid)
	if all, _ := f.claims(ph(40), a, sa.ID); all != 0 {
		t.Fatalf("%d claims on the phone after a wrong code, want none", all)
	}
	if v, err := f.svc.Verify(ctx, b, sb.ID, f.code(b, sb)); err != nil || v.Status != senders.StatusActive {
		t.Fatalf("b's verification: %+v %v, want active", v, err)
	}
	if _, its := f.claims(ph(40), b, sb.ID); its != 1 {
		t.Fatalf("b's number holds %d claims, want 1", its)
	}
}

// A claim that no tenant row holds (a process died between the claim and
// its activation's commit) is released by the periodic sweep once it is
// older than any activation; a held claim and a young one stay.
func TestSweepReleasesStaleClaims(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("A")
	f.account(ph(41), false)
	f.account(ph(42), false)
	stale := f.pendingOwner(tn, ph(41))
	young := f.pendingOwner(tn, ph(42))
	f.account(ph(43), true)
	held := f.register(tn, ph(43))
	if v, err := f.svc.Verify(ctx, tn, held.ID, f.code(tn, held)); err != nil || v.Status != senders.StatusActive {
		t.Fatalf("verify: %+v %v", v, err)
	}
	old := f.clock.Now().Add(-2 * time.Minute)
	for _, c := range []struct {
		s  senders.Sender
		at time.Time
	}{{stale, old}, {young, f.clock.Now()}} {
		if _, err := f.db.Pool.Exec(ctx, `INSERT INTO central.active_sender_phones (phone, organization_id, sender_id, claimed_at)
			VALUES ($1, $2, $3, $4)`, c.s.Phone, tn.OrgID, c.s.ID, c.at); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.db.Pool.Exec(ctx, `UPDATE central.active_sender_phones SET claimed_at = $1 WHERE phone = $2`, old, ph(43)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.ActivateVerifiedOwners(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s    senders.Sender
		want int
	}{{stale, 0}, {young, 1}, {held, 1}} {
		if _, its := f.claims(c.s.Phone, tn, c.s.ID); its != c.want {
			t.Fatalf("%s (%s) holds %d claims after the sweep, want %d", c.s.Phone, f.get(tn, c.s.ID).Status, its, c.want)
		}
	}
}
