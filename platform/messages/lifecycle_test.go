package messages_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/apperr"
	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/messages"
	"github.com/bizmsg/platform/platform/messages/messagestest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/webhooks"
)

// recorder is the test's webhooks.Emitter: it writes each event into
// the table test_events in the transaction it is given, with that
// transaction's id and the number of its Emit call, so that an event is
// there exactly when its change committed. While fail is set, Emit writes
// its events and then fails, which must roll back the events and the
// change together.
type recorder struct {
	mu    sync.Mutex
	calls int
	fail  bool
}

// recordedEvent is a row of test_events.
type recordedEvent struct {
	Call        int
	TxID        int64
	Schema      string
	Type, Key   string
	Status      string // the status in the event's message resource
	DeliveredAt *string
	At          time.Time
}

func (r *recorder) Emit(ctx context.Context, tx pgx.Tx, t db.Tenant, events ...webhooks.Event) error {
	r.mu.Lock()
	r.calls++
	call, fail := r.calls, r.fail
	r.mu.Unlock()
	for _, e := range events {
		body, err := json.Marshal(e.Data)
		if err != nil {
			return err
		}
		var res struct {
			Status      string  `json:"status"`
			DeliveredAt *string `json:"delivered_at"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO public.test_events (call, txid, schema_name, type, key, status, delivered_at, at)
			VALUES ($1, txid_current(), $2, $3, $4, $5, $6, $7)`, call, t.Schema, e.Type, e.Key, res.Status, res.DeliveredAt, e.At); err != nil {
			return err
		}
	}
	if fail {
		return errors.New("recorder: refused")
	}
	return nil
}

// newRecorded is a fixture whose service records events with a recorder;
// confirms makes its network's deliveries confirmed deliveries to the
// recipient, as the built-in network's are.
func newRecorded(t *testing.T, confirms bool, edit func(*messagestest.Config)) (*fixture, *recorder) {
	t.Helper()
	rec := &recorder{}
	f := setupWith(t, 1000, 1000, func(c *messagestest.Config) {
		c.SetEvents(rec)
		if edit != nil {
			edit(c)
		}
	})
	if _, err := f.DB.Pool.Exec(context.Background(), `CREATE TABLE public.test_events (
		seq bigserial PRIMARY KEY, call int NOT NULL, txid bigint NOT NULL, schema_name text NOT NULL,
		type text NOT NULL, key text NOT NULL, status text NOT NULL, delivered_at text, at timestamptz NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	f.Net.Confirms.Store(confirms)
	return f, rec
}

// events returns the recorded events of key, in the order they were
// written.
func (f *fixture) events(key string) []recordedEvent {
	f.T.Helper()
	rows, err := f.DB.Pool.Query(context.Background(), `SELECT call, txid, schema_name, type, key, status, delivered_at, at
		FROM public.test_events WHERE key = $1 ORDER BY seq`, key)
	if err != nil {
		f.T.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (recordedEvent, error) {
		var e recordedEvent
		err := r.Scan(&e.Call, &e.TxID, &e.Schema, &e.Type, &e.Key, &e.Status, &e.DeliveredAt, &e.At)
		return e, err
	})
	if err != nil {
		f.T.Fatal(err)
	}
	return out
}

func key(id int64) string { return fmt.Sprintf("message:%d", id) }

// eventTypes lists events' types.
func eventTypes(evs []recordedEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Type
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A message's events come in the order of its lifecycle, each recorded in
// the transaction of its change: sent by the worker, delivered and read by
// receipts; a network that confirms the delivery makes the worker's record
// sent and delivered at once, with both events in its one transaction (the
// sent event shows the message as sent). Failures record message.failed
// from every path: a refusal by the network, a sender suspended before
// delivery, a failed receipt.
func TestLifecycleEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		confirms bool
		run      func(f *fixture, tn db.Tenant, sid, id int64)
		want     []string
		status   string
		sameTx   bool // every event in one transaction
	}{
		{name: "sent, delivered, read", run: func(f *fixture, tn db.Tenant, _, id int64) {
			mustDeliver(f, tn, id)
			f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusDelivered, At: prepAt})
			f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusRead, At: at})
			// Repeats and a late delivered receipt record nothing.
			f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusRead, At: at})
			f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusDelivered, At: at})
		}, want: []string{webhooks.EventMessageSent, webhooks.EventMessageDelivered, webhooks.EventMessageRead}, status: messages.StatusRead},
		{name: "delivered by a confirming network: sent then delivered in one transaction", confirms: true,
			run: func(f *fixture, tn db.Tenant, _, id int64) {
				mustDeliver(f, tn, id)
				f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusRead, At: at})
			}, want: []string{webhooks.EventMessageSent, webhooks.EventMessageDelivered, webhooks.EventMessageRead}, status: messages.StatusRead},
		{name: "failed by a receipt after delivered", run: func(f *fixture, tn db.Tenant, _, id int64) {
			mustDeliver(f, tn, id)
			f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusDelivered, At: prepAt})
			f.receipt(messages.Receipt{Reference: messages.Reference(tn, id), Status: messages.StatusFailed, At: at})
		}, want: []string{webhooks.EventMessageSent, webhooks.EventMessageDelivered, webhooks.EventMessageFailed}, status: messages.StatusFailed},
		{name: "failed by the sender's suspension", run: func(f *fixture, tn db.Tenant, sid, id int64) {
			f.Exec(fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = %d`, tn.Table("sender_numbers"), sid))
			mustDeliver(f, tn, id)
		}, want: []string{webhooks.EventMessageFailed}, status: messages.StatusFailed},
		{name: "failed by the network's refusal", run: func(f *fixture, tn db.Tenant, sid, id int64) {
			if err := f.Net.Block(context.Background(), ph(999), f.phoneOf(tn, sid)); err != nil {
				f.T.Fatal(err)
			}
			mustDeliver(f, tn, id)
		}, want: []string{webhooks.EventMessageFailed}, status: messages.StatusFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, _ := newRecorded(t, tc.confirms, nil)
			tn := f.Org()
			sid := f.Sender(tn, ph(1))
			f.Account(ph(999))
			id := f.MustSend(tn, sid, ph(999), "hello")
			tc.run(f, tn, sid, id)
			evs := f.events(key(id))
			if got := eventTypes(evs); !sameStrings(got, tc.want) {
				t.Fatalf("events %v, want %v", got, tc.want)
			}
			m := f.Get(tn, id)
			if m.Status != tc.status {
				t.Fatalf("status %s, want %s", m.Status, tc.status)
			}
			last := evs[len(evs)-1]
			if last.Status != m.Status || last.Schema != tn.Schema {
				t.Errorf("last event %+v, message %s of %s", last, m.Status, tn.Schema)
			}
			if tc.confirms {
				sent, delivered := evs[0], evs[1]
				if sent.TxID != delivered.TxID || sent.Call != delivered.Call {
					t.Errorf("sent and delivered in two transactions or calls: %+v %+v", sent, delivered)
				}
				if sent.Status != messages.StatusSent || sent.DeliveredAt != nil || delivered.Status != messages.StatusDelivered ||
					m.SentAt == nil || m.DeliveredAt == nil || !m.SentAt.Equal(*m.DeliveredAt) || !sent.At.Equal(*m.SentAt) {
					t.Errorf("sent %+v, delivered %+v, message sent %v delivered %v", sent, delivered, m.SentAt, m.DeliveredAt)
				}
			} else {
				for i := 1; i < len(evs); i++ {
					if evs[i].TxID == evs[i-1].TxID {
						t.Errorf("events %d and %d share a transaction", i-1, i)
					}
				}
			}
		})
	}
}

func mustDeliver(f *fixture, tn db.Tenant, id int64) {
	f.T.Helper()
	if _, err := f.Deliver(tn, id, id, 1); err != nil {
		f.T.Fatalf("deliver: %v", err)
	}
}

// phoneOf is sender sid's phone.
func (f *fixture) phoneOf(tn db.Tenant, sid int64) string {
	f.T.Helper()
	var p string
	if err := f.DB.Pool.QueryRow(context.Background(), fmt.Sprintf(`SELECT phone FROM %s WHERE id = $1`,
		tn.Table("sender_numbers")), sid).Scan(&p); err != nil {
		f.T.Fatal(err)
	}
	return p
}

// An event is recorded in the transaction of its change: when the recorder
// fails, the change rolls back with the events it wrote (the receipt's
// error reaches the caller, the message and its counters stay), and a
// delivery's record likewise (the job's error, for River to retry).
func TestEventsShareTheChangesTransaction(t *testing.T) {
	t.Parallel()
	f, rec := newRecorded(t, true, nil)
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	f.Account(ph(999))
	id := f.MustSend(tn, sid, ph(999), "x")

	rec.fail = true
	if _, err := f.Deliver(tn, id, id, 1); err == nil {
		t.Fatal("the delivery's record succeeded with a failing recorder")
	}
	if m := f.Get(tn, id); m.Status != messages.StatusQueued || m.SentAt != nil {
		t.Fatalf("the record committed without its events: %+v", m)
	}
	rec.fail = false
	mustDeliver(f, tn, id)
	rec.fail = true
	if _, err := f.Svc.ApplyReceipt(context.Background(), messages.Receipt{Reference: messages.Reference(tn, id),
		Status: messages.StatusRead, At: at}); err == nil {
		t.Fatal("the receipt succeeded with a failing recorder")
	}
	if m := f.Get(tn, id); m.Status != messages.StatusDelivered || m.ReadAt != nil {
		t.Fatalf("the receipt committed without its event: %+v", m)
	}
	if got := eventTypes(f.events(key(id))); !sameStrings(got, []string{webhooks.EventMessageSent, webhooks.EventMessageDelivered}) {
		t.Fatalf("events %v: a rolled back change left its events", got)
	}
	if got := f.Usage(tn, sid); got != (messagestest.Usage{Used: 1, Delivered: 1}) {
		t.Fatalf("usage %+v", got)
	}
}

// A delivery batch records its messages and all their events in one
// transaction, with one Emit call: every message's sent and delivered
// events together, and the batch's messages in the same call.
func TestBatchEventsInOneCall(t *testing.T) {
	t.Parallel()
	f, _ := newRecorded(t, true, func(c *messagestest.Config) { c.Delivery.Batch = batch.Config{MaxInFlight: 1} })
	tn := f.Org()
	sid := f.Sender(tn, ph(1))
	// One recipient each: a conversation's messages would go one per
	// network call (deliverBatch's rounds).
	ids := make([]int64, 8)
	for i := range ids {
		f.Account(ph(900 + i))
		ids[i] = f.MustSend(tn, sid, ph(900+i), fmt.Sprint(i))
	}
	// The first job's batch is held in the network while the others
	// gather behind it.
	hold := make(chan struct{})
	f.Net.Hold.Store(&hold)
	var wg sync.WaitGroup
	errs := make([]error, len(ids))
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = f.Deliver(tn, id, id, 1)
		}()
		if i == 0 {
			messagestest.WaitFor(t, func() bool { return f.Net.Batches.Load() == 1 })
		}
	}
	// The others wait for the held batch's run to end.
	messagestest.WaitFor(t, func() bool { return f.DeliveriesQueued.Load() == int32(len(ids)-1) })
	close(hold)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
	}
	if f.Net.Multi.Load() == 0 {
		t.Fatal("nothing was batched")
	}
	// Each message's two events come in one call; a batch's messages share
	// their call.
	calls := map[int]int{}
	for _, id := range ids {
		evs := f.events(key(id))
		if got := eventTypes(evs); !sameStrings(got, []string{webhooks.EventMessageSent, webhooks.EventMessageDelivered}) {
			t.Fatalf("message %d: events %v", id, got)
		}
		if evs[0].Call != evs[1].Call {
			t.Fatalf("message %d: sent and delivered in calls %d and %d", id, evs[0].Call, evs[1].Call)
		}
		calls[evs[0].Call]++
	}
	shared := false
	for _, n := range calls {
		shared = shared || n > 1
	}
	if !shared {
		t.Fatalf("every message's events came in an Emit call of its own: %v", calls)
	}
	if got := f.Usage(tn, sid); got != (messagestest.Usage{Used: 8, Delivered: 8}) {
		t.Fatalf("usage %+v", got)
	}
}

// activeNumber stores an active sender number of tn with phone p, and its
// entries in the central directory, as the senders service writes them.
func (f *fixture) activeNumber(tn db.Tenant, p string) int64 {
	f.T.Helper()
	sid := f.Sender(tn, p)
	f.Exec(
		fmt.Sprintf(`INSERT INTO central.sender_number_directory (organization_id, sender_id, phone, status)
			VALUES (%d, %d, '%s', 'active')`, tn.OrgID, sid, p),
		fmt.Sprintf(`INSERT INTO central.active_sender_phones (phone, organization_id, sender_id)
			VALUES ('%s', %d, %d)`, p, tn.OrgID, sid),
	)
	return sid
}

// Inbound messages land in the organization whose active number they were
// written to, and only there; a repeated report stores nothing; a phone
// that is no organization's active number is ignored. An inbound message
// sits in the conversation of the outbound ones to its writer, counts in
// the received counter and against no limit, moves its writer's service
// window, and records message.received. A number active in the directory
// but not in the tenant's table stores nothing. The same with the store
// in one statement and routed (messages.Config.Routed, as on Citus).
func TestReceive(t *testing.T) {
	t.Parallel()
	for _, routed := range []bool{false, true} {
		t.Run(fmt.Sprintf("routed=%v", routed), func(t *testing.T) {
			t.Parallel()
			testReceive(t, routed)
		})
	}
}

// testReceive is TestReceive, the store routed or not.
func testReceive(t *testing.T, routed bool) {
	f, _ := newRecorded(t, true, func(c *messagestest.Config) { c.Messages.Routed = routed })
	ctx := context.Background()
	a, b := f.Org(), f.Org()
	sa, sb := f.activeNumber(a, ph(1)), f.activeNumber(b, ph(2))
	// A number registered but not active, with its directory entry.
	pending := f.Sender(b, ph(3))
	f.Exec(fmt.Sprintf(`UPDATE %s SET status = 'pending_verification' WHERE id = %d`, b.Table("sender_numbers"), pending),
		fmt.Sprintf(`INSERT INTO central.sender_number_directory (organization_id, sender_id, phone, status)
			VALUES (%d, %d, '%s', 'pending_verification')`, b.OrgID, pending, ph(3)))
	writer := ph(500)
	f.Account(writer)

	// An outbound message to the writer gives the conversation.
	out := f.MustSend(a, sa, writer, "hello")
	mustDeliver(f, a, out)
	conv := f.Get(a, out).ConversationID
	if conv == nil {
		t.Fatal("no conversation")
	}

	recvAt := start.Add(time.Minute)
	in := func(id, to string) messages.Inbound {
		return messages.Inbound{ID: id, FromPhone: writer, ToPhone: to, ConversationID: *conv, Media: network.Media{Type: messages.TypeText, Content: "reply " + id}, At: recvAt}
	}
	for _, tc := range []struct {
		name string
		in   messages.Inbound
		want messages.ReceiptOutcome
	}{
		{"to a's number", in("in-1", ph(1)), messages.ReceiptApplied},
		{"repeated", in("in-1", ph(1)), messages.ReceiptUnchanged},
		{"to b's number, formatted otherwise", in("in-2", "+1 (415) 555-0002"), messages.ReceiptApplied},
		{"to a number not active", in("in-3", ph(3)), messages.ReceiptIgnored},
		{"to no organization's number", in("in-4", ph(4)), messages.ReceiptIgnored},
		{"to a phone that is not one", in("in-5", "hello"), messages.ReceiptIgnored},
		{"a voice message", messages.Inbound{ID: "in-6", FromPhone: writer, ToPhone: ph(1), Media: network.Media{Type: messages.TypeVoice, Content: "https://x.example/v.ogg", FileName: "v.ogg", FileType: "audio/ogg", FileSize: 100, Duration: 3}}, messages.ReceiptApplied},
	} {
		got, err := f.Svc.Receive(ctx, tc.in)
		if err != nil || got != tc.want {
			t.Fatalf("%s: %s %v, want %s", tc.name, got, err, tc.want)
		}
	}

	list := func(tn db.Tenant, q messages.ListQuery) []messages.Message {
		t.Helper()
		p, err := f.Svc.List(ctx, tn, q)
		if err != nil {
			t.Fatal(err)
		}
		return p.Items
	}
	inboundA := list(a, messages.ListQuery{Direction: messages.DirectionInbound})
	if len(inboundA) != 2 {
		t.Fatalf("a's inbound messages: %+v", inboundA)
	}
	m := inboundA[1]
	if m.Direction != messages.DirectionInbound || m.Status != messages.StatusReceived || m.SenderNumberID != sa ||
		m.ToPhone != ph(1) || m.FromPhone == nil || *m.FromPhone != writer || m.ConversationID == nil || *m.ConversationID != *conv ||
		m.ReceivedAt == nil || !m.ReceivedAt.Equal(recvAt) || m.SentAt != nil || m.Content != "reply in-1" {
		t.Fatalf("inbound message %+v", m)
	}
	if v := inboundA[0]; v.Type != messages.TypeVoice || v.Duration == nil || *v.Duration != 3 || v.ReceivedAt == nil ||
		!v.ReceivedAt.Equal(start) || v.ConversationID != nil {
		t.Fatalf("voice message %+v", v)
	}
	got, err := f.Svc.Get(ctx, a, m.ID)
	if err != nil || got.Delivery != nil || got.Direction != messages.DirectionInbound {
		t.Fatalf("get: %+v %v", got, err)
	}
	body, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if res["direction"] != "inbound" || res["from_phone"] != writer || res["status"] != "received" || res["received_at"] != "2026-11-22T14:04:05Z" {
		t.Fatalf("resource %s", body)
	}
	if got := eventTypes(f.events(key(m.ID))); !sameStrings(got, []string{webhooks.EventMessageReceived}) {
		t.Fatalf("events of a: %v", got)
	}

	for _, tc := range []struct {
		name string
		tn   db.Tenant
		q    messages.ListQuery
		want []int64
	}{
		{"a's conversation, both ways", a, messages.ListQuery{ConversationID: fmt.Sprint(*conv)}, []int64{m.ID, out}},
		{"a's outbound", a, messages.ListQuery{Direction: messages.DirectionOutbound}, []int64{out}},
		{"a's received", a, messages.ListQuery{Status: messages.StatusReceived}, []int64{inboundA[0].ID, m.ID}},
		{"another conversation", a, messages.ListQuery{ConversationID: "999999"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ids []int64
			for _, m := range list(tc.tn, tc.q) {
				ids = append(ids, m.ID)
			}
			if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
				t.Fatalf("ids %v, want %v", ids, tc.want)
			}
		})
	}
	inboundB := list(b, messages.ListQuery{Direction: messages.DirectionInbound})
	if len(inboundB) != 1 || inboundB[0].SenderNumberID != sb || inboundB[0].ToPhone != ph(2) {
		t.Fatalf("b's inbound messages: %+v", inboundB)
	}
	if got := f.Usage(a, sa); got != (messagestest.Usage{Used: 1, Delivered: 1, Received: 2}) {
		t.Fatalf("a's usage %+v", got)
	}
	if got := f.Usage(b, sb); got != (messagestest.Usage{Received: 1}) {
		t.Fatalf("b's usage %+v", got)
	}
	// A receipt never touches an inbound message.
	if got := f.receipt(messages.Receipt{Reference: messages.Reference(a, m.ID), Status: messages.StatusRead}); got != messages.ReceiptIgnored {
		t.Fatalf("receipt of an inbound message: %s", got)
	}
	var window time.Time
	if err := f.DB.Pool.QueryRow(ctx, `SELECT at FROM `+a.Table("last_inbound")+` WHERE sender_number_id = $1 AND phone = $2`,
		sa, writer).Scan(&window); err != nil || !window.Equal(recvAt) {
		t.Fatalf("a's last inbound from the writer: %v %v, want %v", window, err, recvAt)
	}
	// b's number suspended in its own table, still active in the directory.
	f.Exec(fmt.Sprintf(`UPDATE %s SET status = 'suspended' WHERE id = %d`, b.Table("sender_numbers"), sb))
	if got, err := f.Svc.Receive(ctx, in("in-7", ph(2))); err != nil || got != messages.ReceiptIgnored {
		t.Fatalf("to a number suspended in the tenant's table: %s %v, want %s", got, err, messages.ReceiptIgnored)
	}
	if got := f.Usage(b, sb); got != (messagestest.Usage{Received: 1}) {
		t.Fatalf("b's usage after a message to its suspended number %+v", got)
	}
}

// A report that is not a message is refused with every problem at once,
// and the history's new filters refuse bad values like the others.
func TestReceiveAndFilterValidation(t *testing.T) {
	t.Parallel()
	f := setup(t, 1000, 1000)
	tn := f.Org()
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		run    func() error
		fields []string
	}{
		{"inbound without id, writer or type", func() error {
			_, err := f.Svc.Receive(ctx, messages.Inbound{ToPhone: ph(1), FromPhone: "x", Media: network.Media{Type: "sticker"}})
			return err
		}, []string{"from_phone", "id", "type"}},
		{"direction", func() error {
			_, err := f.Svc.List(ctx, tn, messages.ListQuery{Direction: "sideways"})
			return err
		}, []string{"direction"}},
		{"conversation_id and status", func() error {
			_, err := f.Svc.List(ctx, tn, messages.ListQuery{ConversationID: "-1", Status: "seen"})
			return err
		}, []string{"conversation_id", "status"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, ok := apperr.As(tc.run())
			if !ok || e.Code != "validation_failed" {
				t.Fatalf("error %v, want validation_failed", e)
			}
			for _, fld := range tc.fields {
				if _, ok := e.Fields[fld]; !ok {
					t.Errorf("no error on %s: %v", fld, e.Fields)
				}
			}
			if len(e.Fields) != len(tc.fields) {
				t.Errorf("fields %v, want %v", e.Fields, tc.fields)
			}
		})
	}
}
