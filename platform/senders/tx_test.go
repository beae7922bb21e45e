package senders_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// failAfterInsert is a queue.Inserter that inserts through the real River
// client and then fails the calls failOn says, so the service's transaction
// rolls back after the job was written in it.
type failAfterInsert struct {
	queue.Inserter
	failOn func(call int) bool

	mu       sync.Mutex
	calls    int
	inserted []int64
}

var errQueue = errors.New("queue refused")

func (f *failAfterInsert) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	res, err := f.Inserter.InsertTx(ctx, tx, args, opts)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.inserted = append(f.inserted, res.Job.ID)
	if f.failOn(f.calls) {
		return nil, errQueue
	}
	return res, nil
}

// withInserter returns a service like f's whose jobs go through ins.
func (f *fixture) withInserter(ins queue.Inserter) *senders.Service {
	f.t.Helper()
	svc, err := senders.New(senders.Config{
		DB: f.db, Jobs: ins, Network: f.net, Clock: f.clock,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Secret: []byte(strings.Repeat("s", 32)),
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return svc
}

// otpJobs lists the OTP jobs River holds for the tenant.
func (f *fixture) otpJobs(tn db.Tenant) []queue.OTPArgs {
	f.t.Helper()
	res, err := f.river.JobList(context.Background(), river.NewJobListParams().Kinds(queue.OTPArgs{}.Kind()).First(100))
	if err != nil {
		f.t.Fatalf("list jobs: %v", err)
	}
	var out []queue.OTPArgs
	for _, j := range res.Jobs {
		var a queue.OTPArgs
		if err := json.Unmarshal(j.EncodedArgs, &a); err != nil {
			f.t.Fatal(err)
		}
		if a.Schema == tn.Schema {
			out = append(out, a)
		}
	}
	return out
}

func (f *fixture) count(query string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		f.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// The OTP job is inserted through River in the registration's pgx
// transaction: River sees it once the registration commits, and a refused
// registration (duplicate phone) queues nothing.
func TestRegisterQueuesOTPJobInTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	s := f.register(tn, ph(1))
	got := f.otpJobs(tn)
	if len(got) != 1 || got[0].SenderID != s.ID || got[0].OrgID != tn.OrgID || got[0].Generation != 1 || len(got[0].SealedOTP) == 0 {
		t.Fatalf("otp jobs after register: %+v", got)
	}
	if _, err := f.svc.Register(context.Background(), tn, senders.RegisterInput{Phone: ph(1)}); err == nil {
		t.Fatal("duplicate registration accepted")
	}
	if got := f.otpJobs(tn); len(got) != 1 {
		t.Fatalf("otp jobs after refused duplicate: %d, want 1", len(got))
	}
}

// A registration whose transaction fails after the job was inserted leaves
// no number, no directory entry and no job.
func TestRegisterRollbackLeavesNoJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	ins := &failAfterInsert{Inserter: f.river, failOn: func(int) bool { return true }}
	svc := f.withInserter(ins)
	_, err := svc.Register(context.Background(), tn, senders.RegisterInput{Phone: ph(1)})
	if !errors.Is(err, errQueue) {
		t.Fatalf("register: %v, want the queue's error", err)
	}
	if len(ins.inserted) != 1 {
		t.Fatalf("inserted %d jobs, want 1 (then rolled back)", len(ins.inserted))
	}
	if _, err := f.river.JobGet(context.Background(), ins.inserted[0]); !errors.Is(err, rivertype.ErrNotFound) {
		t.Fatalf("rolled-back job %d: %v, want not found", ins.inserted[0], err)
	}
	if n := len(f.otpJobs(tn)); n != 0 {
		t.Fatalf("%d otp jobs after rollback", n)
	}
	if n := f.count(`SELECT count(*) FROM ` + tn.Table("sender_numbers")); n != 0 {
		t.Fatalf("%d sender numbers after rollback", n)
	}
	if n := f.count(`SELECT count(*) FROM central.sender_number_directory WHERE organization_id = $1`, tn.OrgID); n != 0 {
		t.Fatalf("%d directory entries after rollback", n)
	}
	// The phone is free: a registration that commits takes it.
	f.register(tn, ph(1))
	if n := len(f.otpJobs(tn)); n != 1 {
		t.Fatalf("%d otp jobs after a committed registration, want 1", n)
	}
}

// A resend whose transaction fails keeps the previous code current and
// queues nothing.
func TestResendRollbackKeepsCode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tn := f.org("Acme")
	ins := &failAfterInsert{Inserter: f.river, failOn: func(call int) bool { return call > 1 }}
	svc := f.withInserter(ins)
	s, err := svc.Register(context.Background(), tn, senders.RegisterInput{Phone: ph(1)})
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute) // past the resend cooldown
	if _, err := svc.ResendOTP(context.Background(), tn, s.ID); !errors.Is(err, errQueue) {
		t.Fatalf("resend: %v, want the queue's error", err)
	}
	got := f.otpJobs(tn)
	if len(got) != 1 || got[0].Generation != 1 {
		t.Fatalf("otp jobs after failed resend: %+v", got)
	}
	// The first code still works: the failed resend changed nothing.
	f.account(ph(1), true)
	if _, err := f.svc.Verify(context.Background(), tn, s.ID, f.code(tn, s)); err != nil {
		t.Fatalf("verify with the first code: %v", err)
	}
}
