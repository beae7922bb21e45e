package acceptance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/acceptance"
	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/idempotency"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
	"github.com/bizmsg/platform/platform/sendrequest"
)

// A sender this process has already sent from (its phone remembered, so the
// send goes straight to the lookup and the acceptance statement) gets the
// sender errors of docs/api.md like any other: a state that may not send is
// 422 sender_not_active (sender_owner_unverified, with its Arabic message, while
// the owner is unverified), before recipient_unreachable; a sender_phone
// naming another number than sender_number_id is refused on that field; and
// nothing is stored.
func TestSendSenderErrorsOnceKnown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status string
		code   string
	}{
		{"suspended", senders.CodeSenderNotActive},
		{"rejected", senders.CodeSenderNotActive},
		{"pending_verification", senders.CodeSenderNotActive},
		{"pending_account_verification", senders.CodeSenderOwnerUnverified},
	} {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			f := setup(t, 100, 100)
			tn := f.Org()
			sid := f.Sender(tn, ph(1))
			other := f.Sender(tn, ph(3))
			f.Account(ph(2))
			f.MustSend(tn, sid, ph(2), "first") // the process now knows the sender's phone

			mismatch := fmt.Sprintf(`{"sender_number_id":%d,"sender_phone":%q,"to_phone":%q,"type":"text","content":"x"}`, other, ph(1), ph(2))
			_, err := f.Send(tn, mismatch, "")
			if e, ok := apperr.As(err); !ok || e.Code != "validation_failed" || len(e.Fields["sender_phone"]) == 0 {
				t.Fatalf("id and phone of different numbers: %v, want validation_failed on sender_phone", err)
			}

			if _, err := f.DB.Pool.Exec(context.Background(),
				fmt.Sprintf(`UPDATE %s SET status = $1 WHERE id = $2`, tn.Table("sender_numbers")), tc.status, sid); err != nil {
				t.Fatal(err)
			}
			for _, to := range []string{ph(2), ph(99)} { // reachable, and not on the network
				_, err := f.Send(tn, fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"x"}`, sid, to), "")
				e, ok := apperr.As(err)
				if !ok || e.Code != tc.code || e.Kind != apperr.KindInvalid {
					t.Fatalf("send to %s: %v, want 422 %s", to, err, tc.code)
				}
				if tc.code == senders.CodeSenderOwnerUnverified && e.Message != senders.MessageOwnerUnverified {
					t.Fatalf("message %q", e.Message)
				}
			}
			var stored int
			if err := f.DB.Pool.QueryRow(context.Background(),
				fmt.Sprintf(`SELECT (SELECT count(*) FROM %s) + (SELECT used FROM %s WHERE sender_number_id = $1 AND side = 'accept')`,
					tn.Table("messages"), tn.Table("daily_usage")), sid).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if stored != 2 { // the first message, counted once
				t.Fatalf("messages + day's count = %d, want 2: a refused send stored something", stored)
			}
		})
	}
}

// Concurrent sends never pass the daily limit, and the limit is per UTC day.
func TestDailyLimitReservation(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	if _, err := f.DB.Pool.Exec(context.Background(), `UPDATE central.organizations SET default_daily_limit = 7 WHERE id = $1`, tn.OrgID); err != nil {
		t.Fatal(err)
	}
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	var ok, limited atomic.Int32
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			_, err := f.Send(tn, fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"x"}`, sid, ph(2)), "")
			switch e, isApp := apperr.As(err); {
			case err == nil:
				ok.Add(1)
			case isApp && e.Code == messages.CodeDailyLimitExceeded:
				limited.Add(1)
				if want := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC).Sub(start); e.RetryAfter != want {
					t.Errorf("RetryAfter %s, want %s", e.RetryAfter, want)
				}
			default:
				t.Errorf("send: %v", err)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 7 || limited.Load() != 23 {
		t.Fatalf("%d accepted, %d limited; want 7 and 23", ok.Load(), limited.Load())
	}
	f.Clock.Set(time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC))
	f.MustSend(tn, sid, ph(2), "tomorrow")
}

// A send with an Idempotency-Key is accepted in a transaction, by the same
// statement as any other; its refusals are worded from that statement's row
// as a lone send's: 429 daily_limit_exceeded with Retry-After up to the next
// UTC midnight and the limit in the details (docs/api.md, §Sending),
// sender_not_active for a suspended sender, and nothing stored.
func TestKeyedSendRefusals(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	capped, suspended := f.Sender(tn, ph(1)), f.Sender(tn, ph(2))
	f.Account(ph(10))
	ctx := context.Background()
	if _, err := f.DB.Pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET daily_limit_override = 1 WHERE id = $1`,
		tn.Table("sender_numbers")), capped); err != nil {
		t.Fatal(err)
	}
	if _, err := f.DB.Pool.Exec(ctx, fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = $1`,
		tn.Table("sender_numbers")), suspended); err != nil {
		t.Fatal(err)
	}
	body := func(sid int64, content string) string {
		return fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":%q}`, sid, ph(10), content)
	}
	if _, err := f.Send(tn, body(capped, "first"), "k-first"); err != nil {
		t.Fatal(err)
	}

	midnight := time.Date(start.Year(), start.Month(), start.Day()+1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		sid  int64
		code string
		kind apperr.Kind // 429 and 422
	}{
		{"over the daily limit", capped, messages.CodeDailyLimitExceeded, apperr.KindRateLimited},
		{"suspended sender", suspended, "sender_not_active", apperr.KindInvalid},
	}
	for _, tt := range tests {
		_, err := f.Send(tn, body(tt.sid, tt.name), "k-"+tt.name)
		e, ok := apperr.As(err)
		if !ok || e.Code != tt.code || e.Kind != tt.kind {
			t.Fatalf("%s: %v, want %s %s", tt.name, err, tt.kind, tt.code)
		}
		if tt.code == messages.CodeDailyLimitExceeded && (e.RetryAfter != midnight.Sub(start) || e.Details["daily_limit"] != 1) {
			t.Errorf("%s: retry after %s, details %v; want %s and daily_limit 1", tt.name, e.RetryAfter, e.Details, midnight.Sub(start))
		}
	}
	var n int
	if err := f.DB.Pool.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s`, tn.Table("messages"))).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("%d messages stored, want 1 (refusals store nothing)", n)
	}
}

// Idempotency keys older than the TTL are purged, and a stale key that is
// still stored is taken over by a new send.
func TestIdempotencyKeyLifetime(t *testing.T) {
	t.Parallel()
	f := setup(t, 100, 100)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	body := fmt.Sprintf(`{"sender_number_id":%d,"to_phone":%q,"type":"text","content":"x"}`, sid, ph(2))
	first, err := f.Send(tn, body, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Send(tn, body, "k2"); err != nil {
		t.Fatal(err)
	}
	f.Clock.Advance(25 * time.Hour)
	again, err := f.Send(tn, body, "k1")
	if err != nil || again.Replayed || again.MessageID == first.MessageID {
		t.Fatalf("stale key: %+v %v", again, err)
	}
	n, err := idempotency.Purge(context.Background(), f.DB, tn, f.Clock.Now().Add(-24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("purged %d (%v), want 1 (k2; k1 was renewed)", n, err)
	}
	replay, err := f.Send(tn, body, "k1")
	if err != nil || !replay.Replayed || replay.MessageID != again.MessageID || string(replay.Resource) != string(again.Resource) {
		t.Fatalf("replay %+v %v", replay, err)
	}
}

// A refused acceptance is worded after its transaction: naming an unknown
// sender by phone on a one-connection pool answers sender_not_found, alone
// and with an Idempotency-Key, instead of waiting for the connection the
// refused transaction holds (the wording reads the sender) until the pool's
// acquire timeout turns it into a 503.
func TestRefusalWordedOutsideTheTransaction(t *testing.T) {
	t.Parallel()
	f := setup(t, 1000, 1000)
	tn := f.Org()
	f.Account(ph(2))
	ctx := context.Background()
	one, err := db.Open(ctx, db.Config{URL: f.DB.Pool.Config().ConnString(), MaxConns: 1, AcquireTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(one.Close)
	rc, err := queue.NewClient(queue.Config{Pool: one.Pool})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	snd, err := senders.New(senders.Config{DB: one, Jobs: rc, Network: f.Net, Clock: f.Clock, Logger: quiet,
		Secret: []byte(strings.Repeat("s", 32))})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := acceptance.New(acceptance.Config{Prepared: dbtest.Prepared(t, db.PreparedConfig{DB: one}), Jobs: rc,
		Senders: snd, Network: f.Net, Clock: f.Clock})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"", "refused-1"} {
		req := &sendrequest.SendRequest{}
		if err := json.Unmarshal([]byte(fmt.Sprintf(`{"sender_phone":%q,"to_phone":%q,"type":"text","content":"x"}`, ph(77), ph(2))), req); err != nil {
			t.Fatal(err)
		}
		req.IdempotencyKey = key
		_, err := svc.Send(ctx, tn, 1000, req)
		if e, ok := apperr.As(err); !ok || e.Code != senders.CodeSenderNotFound {
			t.Fatalf("key %q: %v, want %s", key, err, senders.CodeSenderNotFound)
		}
	}
}
