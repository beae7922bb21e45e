package messages_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/delivery"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/messages/messagestest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/pace"
	"github.com/bizmsg/platform/platform/queue"
	"github.com/bizmsg/platform/platform/senders"
)

// receipt applies r, failing the test on error.
func (f *fixture) receipt(r messages.Receipt) messages.ReceiptOutcome {
	f.T.Helper()
	out, err := f.Svc.ApplyReceipt(context.Background(), r)
	if err != nil {
		f.T.Fatalf("apply receipt %+v: %v", r, err)
	}
	return out
}

// A step brings a freshly accepted (queued) message into the state a case
// starts from.
type step func(f *fixture, tn db.Tenant, sid, id int64)

// prepAt is when the steps' receipts happened; at is the cases' receipts.
var (
	prepAt = start.Add(30 * time.Second)
	at     = start.Add(2 * time.Minute)
)

var (
	// toSent delivers the message (worker run, first attempt).
	toSent step = func(f *fixture, tn db.Tenant, _, id int64) {
		f.T.Helper()
		if _, err := f.Deliver(tn, id, id, 1); err != nil {
			f.T.Fatalf("deliver: %v", err)
		}
	}
	// toDelivered applies a delivered receipt at prepAt.
	toDelivered step = func(f *fixture, tn db.Tenant, _, id int64) {
		f.T.Helper()
		f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusDelivered, At: prepAt})
	}
	// toRead applies a read receipt at prepAt.
	toRead step = func(f *fixture, tn db.Tenant, _, id int64) {
		f.T.Helper()
		f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusRead, At: prepAt})
	}
	// toFailed applies a failed receipt (default code) at prepAt.
	toFailed step = func(f *fixture, tn db.Tenant, _, id int64) {
		f.T.Helper()
		f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusFailed, At: prepAt})
	}
	// toNetworkError fails the message as the worker's last attempt does when
	// the network cannot be reached.
	toNetworkError step = func(f *fixture, tn db.Tenant, _, id int64) {
		f.T.Helper()
		f.Net.Failing.Store(true)
		defer f.Net.Failing.Store(false)
		if _, err := f.Deliver(tn, id, id, 5); !network.IsTransient(err) {
			f.T.Fatalf("last attempt: %v, want the network's transient error (the job ends discarded)", err)
		}
	}
	// toSenderNotActive fails the message undelivered: its sender was
	// suspended before the worker ran.
	toSenderNotActive step = func(f *fixture, tn db.Tenant, sid, id int64) {
		f.T.Helper()
		if _, err := f.DB.Pool.Exec(context.Background(), fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = $1`,
			tn.Table("sender_numbers")), sid); err != nil {
			f.T.Fatal(err)
		}
		if _, err := f.Deliver(tn, id, id, 1); err != nil {
			f.T.Fatalf("deliver: %v", err)
		}
	}
)

// ApplyReceipt's transitions, with the day's counters moving with the
// message: forward only along queued → sent → delivered → read, failed from
// queued, sent or delivered; a late delivered receipt of a read message
// only fills its delivered_at; repeats change nothing. The cases share one
// database (each with a sender of its own, so that counters do not mix)
// and run one after the other: toNetworkError switches the shared network
// off for a moment.
func TestApplyReceipt(t *testing.T) {
	t.Parallel()
	f := setup(t, 1000, 1000)
	tn := f.Org()
	f.Account(ph(999))
	generic := "The messaging network could not deliver the message."
	long := strings.Repeat("é", 600) // 1200 bytes
	for i, tc := range []struct {
		name    string
		prepare []step
		status  string // the receipt's status
		zeroAt  bool   // the receipt carries no time
		code    string // the receipt's error code and text
		text    string
		want    messages.ReceiptOutcome
		// The message afterwards: status, its times (zero = null), error
		// code and text ("" = null, "*" = any), counters.
		wantStatus                          string
		wantDelivered, wantRead, wantFailed time.Time
		wantCode, wantText                  string
		wantUsage                           messagestest.Usage
	}{
		{name: "queued to delivered", status: messages.StatusDelivered, want: messages.ReceiptApplied,
			wantStatus: messages.StatusDelivered, wantDelivered: at, wantUsage: messagestest.Usage{Used: 1, Delivered: 1}},
		{name: "sent to delivered", prepare: []step{toSent}, status: messages.StatusDelivered, want: messages.ReceiptApplied,
			wantStatus: messages.StatusDelivered, wantDelivered: at, wantUsage: messagestest.Usage{Used: 1, Delivered: 1}},
		{name: "sent to delivered without a time: now", prepare: []step{toSent}, status: messages.StatusDelivered, zeroAt: true,
			want: messages.ReceiptApplied, wantStatus: messages.StatusDelivered, wantDelivered: start, wantUsage: messagestest.Usage{Used: 1, Delivered: 1}},
		{name: "delivered to read", prepare: []step{toSent, toDelivered}, status: messages.StatusRead, want: messages.ReceiptApplied,
			wantStatus: messages.StatusRead, wantDelivered: prepAt, wantRead: at, wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "sent to read: delivered_at stays null", prepare: []step{toSent}, status: messages.StatusRead, want: messages.ReceiptApplied,
			wantStatus: messages.StatusRead, wantRead: at, wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "queued to read", status: messages.StatusRead, want: messages.ReceiptApplied,
			wantStatus: messages.StatusRead, wantRead: at, wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "delivered after read (reordered): stays read, delivered_at filled", prepare: []step{toSent, toRead},
			status: messages.StatusDelivered, want: messages.ReceiptApplied,
			wantStatus: messages.StatusRead, wantDelivered: at, wantRead: prepAt, wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "delivered after delivered and read: unchanged", prepare: []step{toSent, toDelivered, toRead},
			status: messages.StatusDelivered, want: messages.ReceiptUnchanged,
			wantStatus: messages.StatusRead, wantDelivered: prepAt, wantRead: prepAt, wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "read again: unchanged", prepare: []step{toSent, toRead}, status: messages.StatusRead, want: messages.ReceiptUnchanged,
			wantStatus: messages.StatusRead, wantRead: prepAt, wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "sent to failed with the default code", prepare: []step{toSent}, status: messages.StatusFailed, want: messages.ReceiptApplied,
			wantStatus: messages.StatusFailed, wantFailed: at, wantCode: messages.CodeDeliveryFailed, wantText: generic,
			wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "queued to failed with the network's code", status: messages.StatusFailed, code: " recipient_deleted ", text: "Gone.",
			want: messages.ReceiptApplied, wantStatus: messages.StatusFailed, wantFailed: at, wantCode: "recipient_deleted", wantText: "Gone.",
			wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "failed with an overlong code and text: clipped", prepare: []step{toSent}, status: messages.StatusFailed,
			code: strings.Repeat("c", 80), text: long, want: messages.ReceiptApplied, wantStatus: messages.StatusFailed, wantFailed: at,
			wantCode: strings.Repeat("c", 64), wantText: long[:1024], wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "delivered again: unchanged", prepare: []step{toSent, toDelivered}, status: messages.StatusDelivered,
			want: messages.ReceiptUnchanged, wantStatus: messages.StatusDelivered, wantDelivered: prepAt, wantUsage: messagestest.Usage{Used: 1, Delivered: 1}},
		{name: "failed again: unchanged", prepare: []step{toSent, toFailed}, status: messages.StatusFailed, code: "other",
			want: messages.ReceiptUnchanged, wantStatus: messages.StatusFailed, wantFailed: prepAt,
			wantCode: messages.CodeDeliveryFailed, wantText: generic, wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "failed after delivered: failed, delivered_at kept", prepare: []step{toSent, toDelivered}, status: messages.StatusFailed,
			want: messages.ReceiptApplied, wantStatus: messages.StatusFailed, wantDelivered: prepAt, wantFailed: at,
			wantCode: messages.CodeDeliveryFailed, wantText: generic, wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "failed after read: unchanged", prepare: []step{toSent, toDelivered, toRead}, status: messages.StatusFailed,
			want: messages.ReceiptUnchanged, wantStatus: messages.StatusRead, wantDelivered: prepAt, wantRead: prepAt,
			wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "delivered after failed: unchanged", prepare: []step{toSent, toFailed}, status: messages.StatusDelivered,
			want: messages.ReceiptUnchanged, wantStatus: messages.StatusFailed, wantFailed: prepAt,
			wantCode: messages.CodeDeliveryFailed, wantText: generic, wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "read after failed: unchanged", prepare: []step{toSent, toFailed}, status: messages.StatusRead,
			want: messages.ReceiptUnchanged, wantStatus: messages.StatusFailed, wantFailed: prepAt,
			wantCode: messages.CodeDeliveryFailed, wantText: generic, wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "delivered after failed undelivered (sender not active): unchanged", prepare: []step{toSenderNotActive},
			status: messages.StatusDelivered, want: messages.ReceiptUnchanged, wantStatus: messages.StatusFailed, wantFailed: start,
			wantCode: messages.CodeSenderNotActive, wantText: "*", wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
		{name: "delivered after network_error: delivered after all", prepare: []step{toNetworkError}, status: messages.StatusDelivered,
			want: messages.ReceiptApplied, wantStatus: messages.StatusDelivered, wantDelivered: at, wantUsage: messagestest.Usage{Used: 1, Delivered: 1}},
		{name: "read after network_error: read after all", prepare: []step{toNetworkError}, status: messages.StatusRead,
			want: messages.ReceiptApplied, wantStatus: messages.StatusRead, wantRead: at, wantUsage: messagestest.Usage{Used: 1, Read: 1}},
		{name: "failed after network_error: unchanged", prepare: []step{toNetworkError}, status: messages.StatusFailed,
			want: messages.ReceiptUnchanged, wantStatus: messages.StatusFailed, wantFailed: start,
			wantCode: messages.CodeNetworkError, wantText: "*", wantUsage: messagestest.Usage{Used: 1, Failed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := *f.Fixture
			fx.T = t
			f := &fixture{&fx}
			sid := f.Sender(tn, ph(i+1))
			id := f.MustSend(tn, sid, ph(999), tc.name)
			for _, s := range tc.prepare {
				s(f, tn, sid, id)
			}
			r := messages.Receipt{Reference: messages.Reference(tn, id), Status: tc.status, At: at,
				ErrorCode: tc.code, ErrorMessage: tc.text}
			if tc.zeroAt {
				r.At = time.Time{}
			}
			if got := f.receipt(r); got != tc.want {
				t.Errorf("outcome %s, want %s", got, tc.want)
			}
			m := f.Get(tn, id)
			if m.Status != tc.wantStatus {
				t.Fatalf("status %s, want %s", m.Status, tc.wantStatus)
			}
			for _, ts := range []struct {
				name string
				got  *time.Time
				want time.Time
			}{{"delivered_at", m.DeliveredAt, tc.wantDelivered}, {"read_at", m.ReadAt, tc.wantRead}, {"failed_at", m.FailedAt, tc.wantFailed}} {
				if ts.want.IsZero() && ts.got != nil || !ts.want.IsZero() && (ts.got == nil || !ts.got.Equal(ts.want)) {
					t.Errorf("%s %v, want %v (zero: null)", ts.name, ts.got, ts.want)
				}
			}
			if got := str(m.ErrorCode); got != tc.wantCode {
				t.Errorf("error_code %q, want %q", got, tc.wantCode)
			}
			if got := str(m.ErrorMessage); tc.wantText == "*" && got == "" || tc.wantText != "*" && got != tc.wantText {
				t.Errorf("error_message %q, want %q", got, tc.wantText)
			}
			if got := f.Usage(tn, sid); got != tc.wantUsage {
				t.Errorf("usage %+v, want %+v", got, tc.wantUsage)
			}
		})
	}
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// References that name no message of any organization are ignored without
// error and touch nothing; a receipt of another status is an error.
func TestApplyReceiptIgnored(t *testing.T) {
	t.Parallel()
	f := setup(t, 1000, 1000)
	ctx := context.Background()
	tn, other := f.Org(), f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(2))
	id := f.MustSend(tn, sid, ph(2), "x")
	if _, err := f.Deliver(tn, id, 1, 1); err != nil {
		t.Fatal(err)
	}
	// An organization without a schema yet, and one whose stored schema is
	// not its own (a corrupted row): neither may route a receipt.
	var bare, corrupt int64
	if err := f.DB.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('bare') RETURNING id`).Scan(&bare); err != nil {
		t.Fatal(err)
	}
	if err := f.DB.Pool.QueryRow(ctx, `INSERT INTO central.organizations (name) VALUES ('corrupt') RETURNING id`).Scan(&corrupt); err != nil {
		t.Fatal(err)
	}
	if _, err := f.DB.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = $2 WHERE id = $1`, corrupt, tn.Schema); err == nil {
		t.Fatal("two organizations share a schema name")
	}
	if _, err := f.DB.Pool.Exec(ctx, `UPDATE central.organizations SET schema_name = 'public' WHERE id = $1`, corrupt); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, ref string }{
		{"empty", ""},
		{"no separator", "garbage"},
		{"not a tenant", "acme:" + itoa(id)},
		{"an otp", senders.OTPReference(tn, sid, 1)},
		{"organization not a number", "tenant_x:" + itoa(id)},
		{"message not a number", tn.Schema + ":abc"},
		{"message zero", tn.Schema + ":0"},
		{"message negative", tn.Schema + ":-1"},
		{"organization zero", "tenant_0:1"},
		{"unknown organization", "tenant_999999:1"},
		{"unknown message", tn.Schema + ":999999"},
		{"another organization's id", other.Schema + ":" + itoa(id)},
		{"schema spelled otherwise than stored", "tenant_0" + itoa(tn.OrgID) + ":" + itoa(id)},
		{"organization without a schema", db.SchemaFor(bare) + ":1"},
		{"stored schema not the organization's", db.SchemaFor(corrupt) + ":1"},
		{"trailing garbage", messages.Reference(tn, id) + ":1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, status := range []string{messages.StatusDelivered, messages.StatusRead, messages.StatusFailed} {
				got, err := f.Svc.ApplyReceipt(ctx, messages.Receipt{Reference: tc.ref, Status: status, At: at})
				if err != nil || got != messages.ReceiptIgnored {
					t.Errorf("%s %q: %s %v, want ignored", status, tc.ref, got, err)
				}
			}
		})
	}
	if _, err := f.Svc.ApplyReceipt(ctx, messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusSent}); err == nil {
		t.Error("a receipt of status sent was accepted")
	}
	if m := f.Get(tn, id); m.Status != messages.StatusSent || m.DeliveredAt != nil || m.FailedAt != nil {
		t.Fatalf("the message moved: %+v", m)
	}
	if got := f.Usage(tn, sid); got != (messagestest.Usage{Used: 1, Sent: 1}) {
		t.Fatalf("usage %+v", got)
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }

// overtaking delivers through the built-in network and then, before the
// worker records the delivery, runs the network's receipt.
type overtaking struct {
	*messagestest.CountingNetwork
	receipt func()
}

func (n *overtaking) Deliver(ctx context.Context, m network.Message) (network.Delivery, error) {
	d, err := n.CountingNetwork.Deliver(ctx, m)
	if err == nil {
		n.receipt()
	}
	return d, err
}

// DeliverBatch runs the receipt after each delivery of the batch.
func (n *overtaking) DeliverBatch(ctx context.Context, ms []network.Message) []network.Result {
	rs := n.CountingNetwork.DeliverBatch(ctx, ms)
	for _, r := range rs {
		if r.Err == nil {
			n.receipt()
		}
	}
	return rs
}

// A receipt that overtakes the worker's record of the delivery: the message
// keeps the receipt's status, gets the network's ids, and is counted once.
func TestReceiptOvertakesDeliveryRecord(t *testing.T) {
	t.Parallel()
	f := setup(t, 1000, 1000)
	tn := f.Org()
	f.Account(ph(999))
	net := &overtaking{CountingNetwork: f.Net}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, nil))
	ins, err := queue.NewClient(queue.Config{Pool: f.DB.Pool})
	if err != nil {
		t.Fatal(err)
	}
	worker, err := delivery.New(delivery.Config{DB: f.DB, Prepared: dbtest.Prepared(t, db.PreparedConfig{DB: f.DB}), Jobs: ins, Network: net, Clock: f.Clock, Logger: quiet,
		Throttle: pace.NewLocal(pace.LocalConfig{Now: f.Wall.Now}), SenderRate: 1000, SenderBurst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		status string
		want   messagestest.Usage
	}{
		{messages.StatusDelivered, messagestest.Usage{Used: 1, Delivered: 1}},
		{messages.StatusRead, messagestest.Usage{Used: 1, Read: 1}},
		{messages.StatusFailed, messagestest.Usage{Used: 1, Failed: 1}},
	} {
		t.Run(tc.status, func(t *testing.T) {
			fx := *f.Fixture
			fx.T = t
			f := &fixture{&fx}
			sid := f.Sender(tn, ph(i+1))
			id := f.MustSend(tn, sid, ph(999), "x")
			net.receipt = func() {
				f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: tc.status, At: at})
			}
			if _, err := worker.DeliverMessage(context.Background(), queue.DeliverArgs{TenantRef: queue.RefOf(tn), MessageID: id},
				queue.DeliveryAttempt{JobID: id, Attempt: 1, MaxAttempts: 5}); err != nil {
				t.Fatal(err)
			}
			m := f.Get(tn, id)
			if m.Status != tc.status || m.NetworkMessageID == nil || m.ConversationID == nil || m.SentAt == nil {
				t.Fatalf("message %+v: want %s with the network's ids", m, tc.status)
			}
			if got := f.Usage(tn, sid); got != tc.want {
				t.Fatalf("usage %+v, want %+v", got, tc.want)
			}
		})
	}
}
