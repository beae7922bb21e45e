package delivery_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/messages"
)

// Requeue puts a message that failed for lack of network back in the queue
// and takes it out of its day's failed count; a queued message stays queued;
// a refused or sent message, or none, is left alone.
func TestRequeue(t *testing.T) {
	t.Parallel()
	f := setup(t, 1000, 1000)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	ctx := context.Background()
	requeue := func(id int64) bool {
		t.Helper()
		var ok bool
		err := pgx.BeginFunc(ctx, f.DB.Pool, func(tx pgx.Tx) error {
			var err error
			ok, err = f.Svc.Requeue(ctx, tx, tn, id)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	failed := f.MustSend(tn, sid, ph(2), "network down")
	f.Net.Failing.Store(true)
	_, _ = f.Deliver(tn, failed, failed, 5)
	f.Net.Failing.Store(false)
	if m := f.Get(tn, failed); m.Status != messages.StatusFailed {
		t.Fatalf("after the last attempt: %s", m.Status)
	}
	if u := f.Usage(tn, sid); u.Failed != 1 {
		t.Fatalf("usage before requeue: %+v", u)
	}
	if !requeue(failed) {
		t.Fatal("a network_error message was not requeued")
	}
	m := f.Get(tn, failed)
	if m.Status != messages.StatusQueued || m.ErrorCode != nil || m.FailedAt != nil {
		t.Fatalf("after requeue: %+v", m)
	}
	if u := f.Usage(tn, sid); u.Failed != 0 {
		t.Fatalf("usage after requeue: %+v", u)
	}
	if _, err := f.Deliver(tn, failed, failed, 1); err != nil {
		t.Fatalf("delivery after requeue: %v", err)
	}
	if m := f.Get(tn, failed); m.Status != messages.StatusSent {
		t.Fatalf("after the retried delivery: %s", m.Status)
	}
	if requeue(failed) {
		t.Fatal("a sent message was requeued")
	}
	queued := f.MustSend(tn, sid, ph(2), "still queued")
	if !requeue(queued) || f.Get(tn, queued).Status != messages.StatusQueued {
		t.Fatal("a queued message must stay queued and count as requeueable")
	}
	if requeue(999_999) {
		t.Fatal("no message, yet requeued")
	}
	refused := f.MustSend(tn, sid, ph(2), "refused by the network")
	if _, err := f.DB.Pool.Exec(ctx, `UPDATE `+tn.Table("messages")+`
		SET status = 'failed', error_code = 'blocked_sender', failed_at = now() WHERE id = $1`, refused); err != nil {
		t.Fatal(err)
	}
	if requeue(refused) {
		t.Fatal("a message the network refused was requeued")
	}
	if m := f.Get(tn, refused); m.Status != messages.StatusFailed || m.ErrorCode == nil || *m.ErrorCode != "blocked_sender" {
		t.Fatalf("refused message after requeue: %+v", m)
	}
}
