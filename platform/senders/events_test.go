package senders_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/senders"
)

// pendingOwner registers p in tn and enters its OTP while the owner's
// network account is unverified: pending_account_verification.
func (f *fixture) pendingOwner(tn db.Tenant, p string) senders.Sender {
	f.t.Helper()
	s := f.register(tn, p)
	v, err := f.svc.Verify(context.Background(), tn, s.ID, f.code(tn, s))
	if err != nil {
		f.t.Fatalf("verify %s: %v", p, err)
	}
	if v.Status != senders.StatusPendingAccountVerification {
		f.t.Fatalf("verified %s is %s, want pending_account_verification", p, v.Status)
	}
	return v
}

// The account.verified event activates the owner's pending numbers at once,
// trusting the event: the network's account may still read unverified.
func TestActivateOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("Acme")
	f.account(ph(20), false)
	s := f.pendingOwner(tn, ph(20))
	before := f.net.deliveries.Load()

	n, err := f.svc.ActivateOwner(ctx, "+1 (415) 555-0020")
	if err != nil || n != 1 {
		t.Fatalf("activate: %d %v, want 1", n, err)
	}
	got := f.get(tn, s.ID)
	if got.Status != senders.StatusActive || got.ActivatedAt == nil || !got.ActivatedAt.Equal(f.clock.Now()) {
		t.Fatalf("after the event: %+v", got)
	}
	if err := senders.CheckSendable(got); err != nil {
		t.Fatalf("not sendable: %v", err)
	}
	// A repeated event changes nothing.
	if n, err := f.svc.ActivateOwner(ctx, ph(20)); err != nil || n != 0 {
		t.Fatalf("repeat: %d %v, want 0", n, err)
	}
	// The sweep finds nothing left to do either.
	if n, err := f.svc.ActivateVerifiedOwners(ctx); err != nil || n != 0 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if f.net.deliveries.Load() != before {
		t.Fatal("the event sent something over the network")
	}
}

// The same phone pending in two organizations: the first becomes active, the
// other stays pending, as a phone is active in one organization only.
func TestActivateOwnerActiveInOneOrganization(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.org("A"), f.org("B")
	f.account(ph(21), false)
	sa, sb := f.pendingOwner(a, ph(21)), f.pendingOwner(b, ph(21))
	if n, err := f.svc.ActivateOwner(context.Background(), ph(21)); err != nil || n != 1 {
		t.Fatalf("activate: %d %v, want 1", n, err)
	}
	if got := f.get(a, sa.ID); got.Status != senders.StatusActive {
		t.Fatalf("a: %s", got.Status)
	}
	if got := f.get(b, sb.ID); got.Status != senders.StatusPendingAccountVerification {
		t.Fatalf("b: %s, want pending_account_verification", got.Status)
	}
}

// Numbers not waiting for their owner's verification are left alone, and a
// phone that is not a number is a validation error on data.phone.
func TestActivateOwnerLeavesOthers(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("Acme")
	f.account(ph(30), false)
	f.account(ph(31), true)
	f.account(ph(32), false)
	f.account(ph(33), false)

	awaitingOTP := f.register(tn, ph(30))
	active := f.register(tn, ph(31))
	if _, err := f.svc.Verify(ctx, tn, active.ID, f.code(tn, active)); err != nil {
		t.Fatal(err)
	}
	suspended := f.pendingOwner(tn, ph(32))
	if _, err := f.svc.Suspend(ctx, senders.AdminTarget{Phone: ph(32), OrgID: tn.OrgID}); err != nil {
		t.Fatal(err)
	}
	rejected := f.pendingOwner(tn, ph(33))
	if _, err := f.svc.Reject(ctx, senders.AdminTarget{Phone: ph(33), OrgID: tn.OrgID}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		s    senders.Sender
		want senders.Status
	}{
		{"pending_verification", awaitingOTP, senders.StatusPendingVerification},
		{"active", active, senders.StatusActive},
		{"suspended", suspended, senders.StatusSuspended},
		{"rejected", rejected, senders.StatusRejected},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := *f
			f.t = t
			before := f.get(tn, tc.s.ID)
			f.clock.Advance(time.Minute)
			n, err := f.svc.ActivateOwner(ctx, tc.s.Phone)
			if err != nil || n != 0 {
				t.Fatalf("activate: %d %v, want 0", n, err)
			}
			got := f.get(tn, tc.s.ID)
			if got.Status != tc.want || !got.UpdatedAt.Equal(before.UpdatedAt) {
				t.Fatalf("%+v, want untouched %s", got, tc.want)
			}
		})
	}
	// A phone no organization registered.
	if n, err := f.svc.ActivateOwner(ctx, ph(34)); err != nil || n != 0 {
		t.Fatalf("unknown phone: %d %v", n, err)
	}
	for _, bad := range []string{"", "12", "+1000", "not a phone"} {
		n, err := f.svc.ActivateOwner(ctx, bad)
		e := appErr(t, err, http.StatusUnprocessableEntity, "validation_failed")
		if n != 0 || len(e.Fields["data.phone"]) == 0 {
			t.Fatalf("%q: %d, fields %v; want data.phone", bad, n, e.Fields)
		}
	}
}

// The network's activations are in the audit log, actor network, saying
// whether the account.verified event or the sweep brought them, in the
// organization of the number; the operator's changes have actor operator.
func TestActivationAudited(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("Acme")
	f.account(ph(40), false)
	f.account(ph(41), false)
	byEvent, bySweep := f.pendingOwner(tn, ph(40)), f.pendingOwner(tn, ph(41))
	if n, err := f.svc.ActivateOwner(ctx, ph(40)); err != nil || n != 1 {
		t.Fatalf("event: %d %v", n, err)
	}
	if _, err := f.net.VerifyAccount(ctx, ph(41)); err != nil {
		t.Fatal(err)
	}
	if n, err := f.svc.ActivateVerifiedOwners(ctx); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := f.svc.Suspend(ctx, senders.AdminTarget{Phone: ph(41)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sender senders.Sender
		action string
		actor  string
		via    string
		status senders.Status
	}{
		{byEvent, "sender.activate", "network", "account.verified event", senders.StatusActive},
		{bySweep, "sender.activate", "network", "sweep", senders.StatusActive},
		{bySweep, "sender.suspend", "operator", "", senders.StatusSuspended},
	}
	for _, tt := range tests {
		t.Run(tt.action+" "+tt.sender.Phone, func(t *testing.T) {
			t.Parallel()
			var (
				actor, via, status, phone string
				userID                    *int64
			)
			err := f.db.Pool.QueryRow(ctx, `SELECT actor_type, actor_user_id, coalesce(details->>'via', ''), details->>'status', details->>'phone'
				FROM central.audit_log WHERE organization_id = $1 AND action = $2 AND target = $3`,
				tn.OrgID, tt.action, "sender_number:"+strconv.FormatInt(tt.sender.ID, 10)).Scan(&actor, &userID, &via, &status, &phone)
			if err != nil {
				t.Fatalf("audit entry: %v", err)
			}
			if actor != tt.actor || userID != nil || via != tt.via || status != string(tt.status) || phone != tt.sender.Phone {
				t.Fatalf("entry: actor %s (user %v), via %q, status %s, phone %s", actor, userID, via, status, phone)
			}
		})
	}
}
