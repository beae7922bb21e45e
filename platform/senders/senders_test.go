package senders_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/httpx"
	"github.com/bizmsg/platform/platform/joboutbox"
	"github.com/bizmsg/platform/platform/migrate"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

var start = time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)

// flaky wraps the built-in network and fails the next Deliver calls with a
// transient error, as an unreachable external network would.
type flaky struct {
	*builtin.Network
	failDeliveries atomic.Int32
	deliveries     atomic.Int32
}

func (f *flaky) Deliver(ctx context.Context, msg network.Message) (network.Delivery, error) {
	f.deliveries.Add(1)
	if f.failDeliveries.Add(-1) >= 0 {
		return network.Delivery{}, errors.New("network: connection reset")
	}
	return f.Network.Deliver(ctx, msg)
}

// fixture is one test's service on a database of its own, with the built-in
// network and a fake clock.
type fixture struct {
	t     *testing.T
	db    *db.DB
	river *river.Client[pgx.Tx]
	net   *flaky
	clock *clock.Fake
	svc   *senders.Service
	mig   *migrate.Migrator
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	clk := clock.NewFake(start)
	net := &flaky{Network: networktest.Builtin(t, builtin.Config{DB: d, Clock: clk})}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	rc, err := queue.NewClient(queue.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	// The platform's jobs go through the job outbox, which also applies the
	// numbers' coordinator writes (senders.Central).
	central, err := senders.NewCentral()
	if err != nil {
		t.Fatal(err)
	}
	outbox, err := joboutbox.New(joboutbox.Config{DB: d, Prepared: dbtest.Prepared(t, db.PreparedConfig{DB: d}), River: rc,
		Appliers: map[string]joboutbox.Applier{senders.KindCentral: central.Apply}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(outbox.Close)
	svc, err := senders.New(senders.Config{
		DB: d, Jobs: outbox, Network: net, Clock: clk, Logger: quiet,
		Secret: []byte(strings.Repeat("s", 32)),
	})
	if err != nil {
		t.Fatal(err)
	}
	mig, err := migrate.New(migrate.Config{Pool: d.Pool, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, db: d, river: rc, net: net, clock: clk, svc: svc, mig: mig}
}

// org creates an organization with its tenant schema.
func (f *fixture) org(name string) db.Tenant {
	f.t.Helper()
	ctx := context.Background()
	var id int64
	if err := f.db.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ($1) RETURNING id`, name).Scan(&id); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.db.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, id, db.SchemaFor(id)); err != nil {
		f.t.Fatal(err)
	}
	tn, err := db.NewTenant(id, db.SchemaFor(id))
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.mig.Tenant(ctx, tn); err != nil {
		f.t.Fatal(err)
	}
	return tn
}

// account creates a network account; verified owner unless told otherwise.
func (f *fixture) account(p string, verified bool) {
	f.t.Helper()
	if _, err := f.net.AddAccount(context.Background(), builtin.AccountSpec{
		Phone: p, Verified: verified, PhoneVerified: true, ReceivingEnabled: true,
	}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) register(tn db.Tenant, p string) senders.Sender {
	f.t.Helper()
	s, err := f.svc.Register(context.Background(), tn, senders.RegisterInput{Phone: p})
	if err != nil {
		f.t.Fatalf("register %s: %v", p, err)
	}
	return s
}

// lastOTPJob returns the newest OTP job queued for the sender.
func (f *fixture) lastOTPJob(tn db.Tenant, id int64) queue.OTPArgs {
	f.t.Helper()
	var raw []byte
	err := f.db.Pool.QueryRow(context.Background(), `SELECT args FROM river.river_job
		WHERE kind = 'sender_otp' AND args->>'schema' = $1 AND (args->>'sender_id')::bigint = $2
		ORDER BY id DESC LIMIT 1`, tn.Schema, id).Scan(&raw)
	if err != nil {
		f.t.Fatalf("otp job: %v", err)
	}
	var args queue.OTPArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		f.t.Fatal(err)
	}
	return args
}

// deliver works the sender's newest OTP job as the worker would.
func (f *fixture) deliver(tn db.Tenant, id int64) error {
	f.t.Helper()
	return f.svc.DeliverOTP(context.Background(), f.lastOTPJob(tn, id))
}

var codeRE = regexp.MustCompile(`code is (\d{6})\.`)

// code delivers the newest OTP and reads it from the owner's inbox.
func (f *fixture) code(tn db.Tenant, s senders.Sender) string {
	f.t.Helper()
	if err := f.deliver(tn, s.ID); err != nil {
		f.t.Fatalf("deliver otp: %v", err)
	}
	msgs, err := f.net.InboxLast(context.Background(), s.Phone, 1)
	if err != nil || len(msgs) != 1 {
		f.t.Fatalf("inbox %s: %v %v", s.Phone, msgs, err)
	}
	m := codeRE.FindStringSubmatch(msgs[0].Content)
	if m == nil {
		f.t.Fatalf("no code in %q", msgs[0].Content)
	}
	return m[1]
}

func (f *fixture) get(tn db.Tenant, id int64) senders.Sender {
	f.t.Helper()
	s, err := f.svc.Get(context.Background(), tn, id)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// wantErr checks err's HTTP status and code.
func wantErr(t *testing.T, err error, status int, code string) {
	t.Helper()
	e, ok := apperr.As(err)
	if !ok {
		t.Fatalf("error %v: want %d %s", err, status, code)
	}
	if got := httpx.StatusOf(e.Kind); got != status || e.Code != code {
		t.Fatalf("error %d %s (%s): want %d %s", got, e.Code, e.Message, status, code)
	}
}

// appErr is wantErr that also returns the error for a closer look.
func appErr(t *testing.T, err error, status int, code string) *apperr.Error {
	t.Helper()
	wantErr(t, err, status, code)
	e, _ := apperr.As(err)
	return e
}

func ph(i int) string { return fmt.Sprintf("+1415555%04d", i) }

func wrong(code string) string {
	if code == "000000" {
		return "000001"
	}
	return "000000"
}

func TestRegisterValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	long := strings.Repeat("n", senders.MaxDisplayNameLength+1)
	ok := strings.Repeat("ن", senders.MaxDisplayNameLength)
	for _, tc := range []struct {
		name  string
		in    senders.RegisterInput
		field string
	}{
		{"missing phone", senders.RegisterInput{}, "phone"},
		{"not e164", senders.RegisterInput{Phone: "4155552671"}, "phone"},
		{"invalid number", senders.RegisterInput{Phone: "+1000"}, "phone"},
		{"letters", senders.RegisterInput{Phone: "+1415555abcd"}, "phone"},
		{"long name", senders.RegisterInput{Phone: ph(1), DisplayName: &long}, "display_name"},
		{"control char", senders.RegisterInput{Phone: ph(1), DisplayName: ptr("a\x00b")}, "display_name"},
	} {
		_, err := f.svc.Register(context.Background(), tn, tc.in)
		e := appErr(t, err, http.StatusUnprocessableEntity, "validation_failed")
		if len(e.Fields[tc.field]) == 0 {
			t.Errorf("%s: fields %v, want %s", tc.name, e.Fields, tc.field)
		}
	}
	s, err := f.svc.Register(context.Background(), tn, senders.RegisterInput{Phone: "+1 (415) 555-0001", DisplayName: &ok})
	if err != nil {
		t.Fatal(err)
	}
	if s.Phone != ph(1) || s.DisplayName != ok || s.Status != senders.StatusPendingVerification ||
		s.VerificationStatus != senders.VerificationPending || s.DailyLimitOverride != nil || s.VerifiedAt != nil {
		t.Fatalf("registered %+v", s)
	}
	// Nothing was written by the refused registrations.
	list, err := f.svc.List(context.Background(), tn)
	if err != nil || len(list) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
	// The stored hash is a 32-byte HMAC, not the code.
	var hash []byte
	if err := f.db.Pool.QueryRow(context.Background(), `SELECT otp_hash FROM `+tn.Table("sender_numbers")).Scan(&hash); err != nil || len(hash) != 32 {
		t.Fatalf("otp_hash %x %v", hash, err)
	}
}

func ptr[T any](v T) *T { return &v }

func TestRegisterDuplicate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.org("A"), f.org("B")
	f.register(a, ph(2))
	_, err := f.svc.Register(context.Background(), a, senders.RegisterInput{Phone: "+1 415 555 0002"})
	wantErr(t, err, http.StatusConflict, senders.CodeSenderExists)
	// Another organization may register the same phone.
	f.register(b, ph(2))
}

func TestVerifyOwnerVerifiedActivates(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	f.account(ph(3), true)
	s := f.register(tn, ph(3))
	code := f.code(tn, s)
	if got := f.get(tn, s.ID); got.OTPSentAt == nil {
		t.Fatalf("otp_sent_at not set: %+v", got)
	}
	f.clock.Advance(time.Minute)
	v, err := f.svc.Verify(context.Background(), tn, s.ID, code)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != senders.StatusActive || v.VerificationStatus != senders.VerificationVerified ||
		v.VerifiedAt == nil || !v.VerifiedAt.Equal(f.clock.Now()) || v.ActivatedAt == nil {
		t.Fatalf("verified %+v", v)
	}
	// The code is single use.
	_, err = f.svc.Verify(context.Background(), tn, s.ID, code)
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeNotPendingVerification)
	if err := senders.CheckSendable(v); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyOwnerUnverifiedThenSweep(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	f.account(ph(4), false)
	s := f.register(tn, ph(4))
	v, err := f.svc.Verify(context.Background(), tn, s.ID, f.code(tn, s))
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != senders.StatusPendingAccountVerification || v.VerificationStatus != senders.VerificationVerified || v.VerifiedAt == nil {
		t.Fatalf("verified %+v", v)
	}
	wantErr(t, senders.CheckSendable(v), http.StatusUnprocessableEntity, senders.CodeSenderOwnerUnverified)

	// The sweep leaves it while the owner is unverified.
	if n, err := f.svc.ActivateVerifiedOwners(context.Background()); err != nil || n != 0 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if _, err := f.net.VerifyAccount(context.Background(), ph(4)); err != nil {
		t.Fatal(err)
	}
	if n, err := f.svc.ActivateVerifiedOwners(context.Background()); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if got := f.get(tn, s.ID); got.Status != senders.StatusActive || got.ActivatedAt == nil {
		t.Fatalf("after sweep %+v", got)
	}
	if n, err := f.svc.ActivateVerifiedOwners(context.Background()); err != nil || n != 0 {
		t.Fatalf("second sweep: %d %v", n, err)
	}
}

func TestOTPRules(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	ctx := context.Background()
	f.account(ph(5), true)
	s := f.register(tn, ph(5))
	code := f.code(tn, s)

	for _, bad := range []string{"", "12345", "1234567", "12a456", "١٢٣٤٥٦"} {
		_, err := f.svc.Verify(ctx, tn, s.ID, bad)
		if e := appErr(t, err, http.StatusUnprocessableEntity, "validation_failed"); len(e.Fields["otp"]) == 0 {
			t.Fatalf("%q: %v", bad, e.Fields)
		}
	}
	for i := 1; i <= 5; i++ {
		_, err := f.svc.Verify(ctx, tn, s.ID, wrong(code))
		e := appErr(t, err, http.StatusUnprocessableEntity, senders.CodeOTPInvalid)
		if e.Details["attempts_remaining"] != 5-i {
			t.Fatalf("attempt %d: %v", i, e.Details)
		}
	}
	// Even the right code is refused now.
	_, err := f.svc.Verify(ctx, tn, s.ID, code)
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeOTPAttemptsExceeded)

	// Resend is limited to once a minute from the last issue.
	_, err = f.svc.ResendOTP(ctx, tn, s.ID)
	e := appErr(t, err, http.StatusTooManyRequests, senders.CodeOTPResendTooSoon)
	if e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Fatalf("retry after %s", e.RetryAfter)
	}
	f.clock.Advance(time.Minute)
	if _, err := f.svc.ResendOTP(ctx, tn, s.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.ResendOTP(ctx, tn, s.ID)
	wantErr(t, err, http.StatusTooManyRequests, senders.CodeOTPResendTooSoon)
	fresh := f.code(tn, s)
	// The old code no longer works (unless the new one happens to equal it).
	if fresh != code {
		_, err = f.svc.Verify(ctx, tn, s.ID, code)
		wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeOTPInvalid)
	}
	// The new code expires after ten minutes.
	f.clock.Advance(10 * time.Minute)
	_, err = f.svc.Verify(ctx, tn, s.ID, fresh)
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeOTPExpired)
	if _, err := f.svc.ResendOTP(ctx, tn, s.ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(10*time.Minute - time.Second)
	if v, err := f.svc.Verify(ctx, tn, s.ID, f.code(tn, s)); err != nil || v.Status != senders.StatusActive {
		t.Fatalf("verify just before expiry: %+v %v", v, err)
	}
	_, err = f.svc.ResendOTP(ctx, tn, s.ID)
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeNotPendingVerification)
	_, err = f.svc.Verify(ctx, tn, 999, code)
	wantErr(t, err, http.StatusNotFound, "not_found")
}

func TestActiveInOneOrganization(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b := f.org("A"), f.org("B")
	f.account(ph(6), true)
	sa, sb := f.register(a, ph(6)), f.register(b, ph(6))
	ca, cb := f.code(a, sa), f.code(b, sb)
	if _, err := f.svc.Verify(ctx, a, sa.ID, ca); err != nil {
		t.Fatal(err)
	}
	_, err := f.svc.Verify(ctx, b, sb.ID, cb)
	wantErr(t, err, http.StatusConflict, senders.CodePhoneActiveElsewhere)
	if got := f.get(b, sb.ID); got.Status != senders.StatusPendingVerification || got.VerificationStatus != senders.VerificationPending {
		t.Fatalf("b after 409: %+v", got)
	}
	// Suspending A keeps its claim; rejecting it releases the phone.
	if _, err := f.svc.Suspend(ctx, senders.AdminTarget{Phone: ph(6), OrgID: a.OrgID}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.Verify(ctx, b, sb.ID, cb)
	wantErr(t, err, http.StatusConflict, senders.CodePhoneActiveElsewhere)
	if _, err := f.svc.Reject(ctx, senders.AdminTarget{Phone: ph(6), OrgID: a.OrgID}); err != nil {
		t.Fatal(err)
	}
	if v, err := f.svc.Verify(ctx, b, sb.ID, cb); err != nil || v.Status != senders.StatusActive {
		t.Fatalf("b verify after release: %+v %v", v, err)
	}
}

func TestConcurrentVerifyActivatesOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	f.account(ph(7), true)
	s := f.register(tn, ph(7))
	code := f.code(tn, s)
	const n = 8
	var (
		wg   sync.WaitGroup
		oks  atomic.Int32
		errs = make(chan error, n)
	)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.svc.Verify(context.Background(), tn, s.ID, code); err != nil {
				errs <- err
				return
			}
			oks.Add(1)
		}()
	}
	wg.Wait()
	close(errs)
	if oks.Load() != 1 {
		t.Fatalf("%d verifications succeeded", oks.Load())
	}
	for err := range errs {
		wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeNotPendingVerification)
	}
}

func TestDeliverOTP(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("Acme Trading")

	// No network account: nothing is sent, otp_sent_at stays null.
	s := f.register(tn, ph(8))
	if err := f.deliver(tn, s.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.get(tn, s.ID); got.OTPSentAt != nil {
		t.Fatalf("otp_sent_at %v with no account", got.OTPSentAt)
	}
	// The account appears; a resend delivers, and the code works.
	f.account(ph(8), true)
	f.clock.Advance(time.Minute)
	if _, err := f.svc.ResendOTP(ctx, tn, s.ID); err != nil {
		t.Fatal(err)
	}
	old := f.lastOTPJob(tn, s.ID)
	// The sealed code in the job is not the code in clear.
	if raw, _ := json.Marshal(old); regexp.MustCompile(`"\d{6}"`).Match(raw) {
		t.Fatalf("plain code in job args %s", raw)
	}
	// A transient failure is returned for River to retry; the retry delivers once.
	f.net.failDeliveries.Store(1)
	if err := f.svc.DeliverOTP(ctx, old); err == nil || network.IsPermanent(err) {
		t.Fatalf("transient failure: %v", err)
	}
	code := f.code(tn, s)
	if err := f.svc.DeliverOTP(ctx, old); err != nil { // a duplicate run
		t.Fatal(err)
	}
	msgs, err := f.net.Inbox(ctx, ph(8))
	if err != nil || len(msgs) != 1 {
		t.Fatalf("inbox: %d messages, %v", len(msgs), err)
	}
	m := msgs[0]
	if m.FromPhone != builtin.ServicePhone || !strings.Contains(m.Content, "Acme Trading") ||
		!strings.Contains(m.Content, "sender number") || !strings.Contains(m.Content, "10 minutes") {
		t.Fatalf("otp message %+v", m)
	}
	if m.Reference != senders.OTPReference(tn, s.ID, old.Generation) {
		t.Fatalf("reference %q", m.Reference)
	}
	// A superseded code's job sends nothing.
	f.clock.Advance(time.Minute)
	if _, err := f.svc.ResendOTP(ctx, tn, s.ID); err != nil {
		t.Fatal(err)
	}
	before := f.net.deliveries.Load()
	if err := f.svc.DeliverOTP(ctx, old); err != nil || f.net.deliveries.Load() != before {
		t.Fatalf("stale job: %v, %d deliveries", err, f.net.deliveries.Load()-before)
	}
	if current := f.code(tn, s); current != code {
		_, err := f.svc.Verify(ctx, tn, s.ID, code)
		wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeOTPInvalid)
	}
	// A tampered sealed code is a permanent failure.
	bad := f.lastOTPJob(tn, s.ID)
	bad.SealedOTP[len(bad.SealedOTP)-1] ^= 1
	f.clock.Advance(time.Minute)
	if _, err := f.svc.ResendOTP(ctx, tn, s.ID); err != nil {
		t.Fatal(err)
	}
	bad.Generation = f.lastOTPJob(tn, s.ID).Generation
	if err := f.svc.DeliverOTP(ctx, bad); !network.IsPermanent(err) {
		t.Fatalf("tampered: %v", err)
	}
}

func TestAdmin(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b := f.org("A"), f.org("B")
	f.account(ph(9), false)
	sa := f.register(a, ph(9))
	f.register(b, ph(9))

	// Ambiguous without an organization; unknown phone.
	_, err := f.svc.Suspend(ctx, senders.AdminTarget{Phone: ph(9)})
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeAmbiguous)
	_, err = f.svc.Suspend(ctx, senders.AdminTarget{Phone: ph(10)})
	wantErr(t, err, http.StatusNotFound, "not_found")
	_, err = f.svc.Suspend(ctx, senders.AdminTarget{Phone: "nope"})
	wantErr(t, err, http.StatusUnprocessableEntity, "validation_failed")
	at := senders.AdminTarget{Phone: ph(9), OrgID: a.OrgID}

	// pending_verification → suspended → back to pending_verification.
	res, err := f.svc.Suspend(ctx, at)
	if err != nil || res.PreviousStatus != senders.StatusPendingVerification || res.Sender.Status != senders.StatusSuspended || res.OrganizationID != a.OrgID {
		t.Fatalf("suspend: %+v %v", res, err)
	}
	wantErr(t, senders.CheckSendable(res.Sender), http.StatusUnprocessableEntity, senders.CodeSenderNotActive)
	_, err = f.svc.Suspend(ctx, at)
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeAlreadySuspended)
	_, err = f.svc.Verify(ctx, a, sa.ID, "123456")
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeNotPendingVerification)
	if res, err = f.svc.Unsuspend(ctx, at); err != nil || res.Sender.Status != senders.StatusPendingVerification {
		t.Fatalf("unsuspend: %+v %v", res, err)
	}
	_, err = f.svc.Unsuspend(ctx, at)
	wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeNotSuspended)

	// OTP accepted, owner unverified: back to pending_account_verification.
	if _, err := f.svc.Verify(ctx, a, sa.ID, f.code(a, sa)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Suspend(ctx, at); err != nil {
		t.Fatal(err)
	}
	// The sweep does not activate a suspended number.
	if _, err := f.net.VerifyAccount(ctx, ph(9)); err != nil {
		t.Fatal(err)
	}
	if n, err := f.svc.ActivateVerifiedOwners(ctx); err != nil || n != 0 {
		t.Fatalf("sweep %d %v", n, err)
	}
	// Owner now verified: unsuspend gives active.
	if res, err = f.svc.Unsuspend(ctx, at); err != nil || res.Sender.Status != senders.StatusActive {
		t.Fatalf("unsuspend: %+v %v", res, err)
	}

	// Limits.
	if res, err = f.svc.SetLimit(ctx, at, ptr(250)); err != nil || *res.Sender.DailyLimitOverride != 250 || res.Sender.DailyLimit(1000) != 250 {
		t.Fatalf("set-limit: %+v %v", res, err)
	}
	_, err = f.svc.SetLimit(ctx, at, ptr(0))
	wantErr(t, err, http.StatusUnprocessableEntity, "validation_failed")
	if res, err = f.svc.SetLimit(ctx, at, nil); err != nil || res.Sender.DailyLimitOverride != nil || res.Sender.DailyLimit(1000) != 1000 {
		t.Fatalf("clear limit: %+v %v", res, err)
	}

	// Rejected is final.
	if res, err = f.svc.Reject(ctx, at); err != nil || res.PreviousStatus != senders.StatusActive || res.Sender.Status != senders.StatusRejected {
		t.Fatalf("reject: %+v %v", res, err)
	}
	for _, op := range []func(context.Context, senders.AdminTarget) (senders.AdminResult, error){f.svc.Suspend, f.svc.Unsuspend, f.svc.Reject} {
		_, err := op(ctx, at)
		wantErr(t, err, http.StatusUnprocessableEntity, senders.CodeRejectedFinal)
	}
	wantErr(t, senders.CheckSendable(f.get(a, sa.ID)), http.StatusUnprocessableEntity, senders.CodeSenderNotActive)

	// Every operator action is in the audit log.
	var n int
	if err := f.db.Pool.QueryRow(ctx, `SELECT count(*) FROM central.audit_log WHERE organization_id = $1 AND action LIKE 'sender.%'`, a.OrgID).Scan(&n); err != nil || n != 7 {
		t.Fatalf("audit rows %d %v", n, err)
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("Acme")
	s := f.register(tn, ph(11))

	_, err := f.svc.Update(ctx, tn, s.ID, senders.UpdateInput{SetDailyLimit: true, DailyLimit: ptr(5)}, false)
	wantErr(t, err, http.StatusForbidden, "insufficient_role")
	got, err := f.svc.Update(ctx, tn, s.ID, senders.UpdateInput{DisplayName: ptr("  Support  ")}, false)
	if err != nil || got.DisplayName != "Support" || got.DailyLimitOverride != nil {
		t.Fatalf("member rename: %+v %v", got, err)
	}
	for _, bad := range []int{0, -1, senders.MaxDailyLimitOverride + 1} {
		_, err := f.svc.Update(ctx, tn, s.ID, senders.UpdateInput{SetDailyLimit: true, DailyLimit: ptr(bad)}, true)
		wantErr(t, err, http.StatusUnprocessableEntity, "validation_failed")
	}
	if got, err = f.svc.Update(ctx, tn, s.ID, senders.UpdateInput{SetDailyLimit: true, DailyLimit: ptr(5)}, true); err != nil || *got.DailyLimitOverride != 5 {
		t.Fatalf("admin limit: %+v %v", got, err)
	}
	if got, err = f.svc.Update(ctx, tn, s.ID, senders.UpdateInput{SetDailyLimit: true}, true); err != nil || got.DailyLimitOverride != nil {
		t.Fatalf("admin clear: %+v %v", got, err)
	}
	_, err = f.svc.Update(ctx, tn, 12345, senders.UpdateInput{DisplayName: ptr("x")}, true)
	wantErr(t, err, http.StatusNotFound, "not_found")
	// Another organization's id is not found either.
	other := f.org("Other")
	_, err = f.svc.Get(ctx, other, s.ID)
	wantErr(t, err, http.StatusNotFound, "not_found")
}

func TestResolve(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tn := f.org("Acme")
	s := f.register(tn, ph(12))
	other := f.register(tn, ph(13))
	load := func(ref senders.SenderRef) (senders.Sender, error) { return f.svc.Resolve(ctx, tn, ref) }
	for _, ref := range []senders.SenderRef{{ID: s.ID}, {Phone: "+1 415 555 0012"}, {ID: s.ID, Phone: ph(12)}} {
		got, err := load(ref)
		if err != nil || got.ID != s.ID {
			t.Fatalf("%+v: %+v %v", ref, got, err)
		}
		e := appErr(t, senders.CheckSendable(got), http.StatusUnprocessableEntity, senders.CodeSenderNotActive)
		if !strings.Contains(e.Message, "not active") {
			t.Fatalf("message %q", e.Message)
		}
	}
	for _, tc := range []struct {
		ref         senders.SenderRef
		code, field string
	}{
		{senders.SenderRef{}, "validation_failed", "sender_number_id"},
		{senders.SenderRef{ID: 999}, senders.CodeSenderNotFound, "sender_number_id"},
		{senders.SenderRef{Phone: ph(14)}, senders.CodeSenderNotFound, "sender_phone"},
		{senders.SenderRef{Phone: "12"}, "validation_failed", "sender_phone"},
		{senders.SenderRef{ID: s.ID, Phone: other.Phone}, "validation_failed", "sender_phone"},
	} {
		_, err := load(tc.ref)
		e := appErr(t, err, http.StatusUnprocessableEntity, tc.code)
		if len(e.Fields[tc.field]) == 0 {
			t.Fatalf("%+v: fields %v", tc.ref, e.Fields)
		}
	}
	if e := senders.ErrOwnerUnverified(); e.Message != senders.MessageOwnerUnverified || e.Code != "sender_owner_unverified" {
		t.Fatalf("%+v", e)
	}
}

func TestSenderJSON(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 22, 14, 3, 5, 123456789, time.UTC)
	for _, tc := range []struct {
		in   senders.Sender
		want string
	}{
		{senders.Sender{ID: 1, Phone: ph(1), Status: senders.StatusPendingVerification, VerificationStatus: senders.VerificationPending, CreatedAt: at},
			`{"id":1,"phone":"+14155550001","display_name":"","status":"pending_verification","verification_status":"pending_verification","daily_limit_override":null,"verified_at":null,"otp_sent_at":null,"created_at":"2026-11-22T14:03:05Z"}`},
		{senders.Sender{ID: 2, Phone: ph(2), DisplayName: "x", Status: senders.StatusActive, VerificationStatus: senders.VerificationVerified, DailyLimitOverride: ptr(7), VerifiedAt: &at, OTPSentAt: &at, CreatedAt: at},
			`{"id":2,"phone":"+14155550002","display_name":"x","status":"active","verification_status":"verified","daily_limit_override":7,"verified_at":"2026-11-22T14:03:05Z","otp_sent_at":"2026-11-22T14:03:05Z","created_at":"2026-11-22T14:03:05Z"}`},
	} {
		got, err := json.Marshal(tc.in)
		if err != nil || string(got) != tc.want {
			t.Errorf("got %s %v\nwant %s", got, err, tc.want)
		}
	}
}
