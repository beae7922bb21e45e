package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
)

// newCountingFixture is newFixture whose network counts its statements.
func newCountingFixture(t *testing.T) (*fixture, *dbtest.Statements) {
	t.Helper()
	d, u := dbtest.Migrated(t)
	pool, count := dbtest.CountedPool(t, u)
	clk := clock.NewFake(start)
	return &fixture{t: t, db: d, net: networktest.Builtin(t, builtin.Config{DB: &db.DB{Pool: pool}, Clock: clk}), clock: clk}, count
}

// storedMessage is a row of network.messages, with the phones of its accounts.
type storedMessage struct {
	delivery network.Delivery
	from, to string
	msg      network.Message // FromPhone is the stored sender phone
	// nulls tells which of file_name, file_size, file_type, duration are NULL.
	nulls [4]bool
}

// stored returns the message stored under ref, if any.
func (f *fixture) stored(ref string) (storedMessage, bool) {
	f.t.Helper()
	var s storedMessage
	err := f.db.Pool.QueryRow(context.Background(), `SELECT m.id, m.conversation_id, m.to_account_id, m.created_at,
	       m.delivered_at IS NOT DISTINCT FROM m.created_at, fa.phone, ta.phone, m.type, m.content, coalesce(m.file_name, ''), coalesce(m.file_size, 0),
	       coalesce(m.file_type, ''), coalesce(m.duration, 0),
	       m.file_name IS NULL, m.file_size IS NULL, m.file_type IS NULL, m.duration IS NULL
	  FROM network.messages m
	  JOIN network.accounts fa ON fa.id = m.from_account_id
	  JOIN network.accounts ta ON ta.id = m.to_account_id
	 WHERE m.reference = $1`, ref).Scan(&s.delivery.MessageID, &s.delivery.ConversationID,
		&s.delivery.RecipientID, &s.delivery.DeliveredAt, &s.delivery.Delivered, &s.from, &s.to, &s.msg.Type, &s.msg.Content,
		&s.msg.FileName, &s.msg.FileSize, &s.msg.FileType, &s.msg.Duration,
		&s.nulls[0], &s.nulls[1], &s.nulls[2], &s.nulls[3])
	if errors.Is(err, pgx.ErrNoRows) {
		return storedMessage{}, false
	}
	if err != nil {
		f.t.Fatalf("stored %s: %v", ref, err)
	}
	// A stored message is in the recipient's inbox: delivered when stored.
	s.delivery.DeliveredAt = s.delivery.DeliveredAt.UTC()
	s.msg.Reference, s.msg.FromPhone, s.msg.ToPhone = ref, s.from, s.to
	return s, true
}

// conversation returns the id of the conversation of the accounts of two
// phones (0 when there is none).
func (f *fixture) conversation(p, q string) int64 {
	f.t.Helper()
	var id int64
	err := f.db.Pool.QueryRow(context.Background(), `SELECT coalesce(max(c.id), 0)
	  FROM network.conversations c
	  JOIN network.accounts a ON a.id IN (c.low_account_id, c.high_account_id) AND a.phone = $1
	  JOIN network.accounts b ON b.id IN (c.low_account_id, c.high_account_id) AND b.phone = $2`, p, q).Scan(&id)
	if err != nil {
		f.t.Fatalf("conversation: %v", err)
	}
	return id
}

// checkDelivered fails unless r is the delivery stored for msg (sent from
// the phone from to the phone to, normalised), at time at.
func (f *fixture) checkDelivered(r network.Result, msg network.Message, from, to string, at time.Time) {
	f.t.Helper()
	if r.Err != nil {
		f.t.Errorf("%s: %v", msg.Reference, r.Err)
		return
	}
	s, ok := f.stored(msg.Reference)
	if !ok {
		f.t.Errorf("%s: result %+v, but nothing is stored", msg.Reference, r.Delivery)
		return
	}
	want := msg
	want.FromPhone, want.ToPhone = from, to
	if r.Delivery != s.delivery || s.msg != want || !s.delivery.DeliveredAt.Equal(at) {
		f.t.Errorf("%s: result %+v, stored %+v %+v; want the stored row, %+v at %v",
			msg.Reference, r.Delivery, s.delivery, s.msg, want, at)
	}
	// Empty file fields are NULL, as Deliver stores them.
	if nulls := [4]bool{msg.FileName == "", msg.FileSize == 0, msg.FileType == "", msg.Duration == 0}; s.nulls != nulls {
		f.t.Errorf("%s: file_name, file_size, file_type, duration NULL: %v, want %v", msg.Reference, s.nulls, nulls)
	}
	if conv := f.conversation(from, to); s.delivery.ConversationID != conv {
		f.t.Errorf("%s: in conversation %d, the pair's is %d", msg.Reference, s.delivery.ConversationID, conv)
	}
}

func code(err error) string {
	var pe *network.PermanentError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func TestDeliverBatch(t *testing.T) {
	t.Parallel()
	f, statements := newCountingFixture(t)
	ctx := context.Background()
	a, b, c, d, e := ph(100), ph(101), ph(102), ph(103), ph(104)
	for _, p := range []string{a, b, c, d, e} {
		f.account(p)
	}
	// a and b have a conversation already.
	if _, err := f.net.Deliver(ctx, text("before", a, b, "hi")); err != nil {
		t.Fatal(err)
	}
	at := f.clock.Advance(time.Minute)

	tests := []struct {
		name     string
		msg      network.Message
		from, to string // normalised
	}{
		{"existing conversation", text("b1", a, b, "1"), a, b},
		{"existing conversation, other direction", text("b2", b, a, "2"), b, a},
		{"new pair", text("b3", a, c, "3"), a, c},
		{"new pair's second message, other direction", text("b4", c, a, "4"), c, a},
		{"another new pair", text("b5", d, e, "5"), d, e},
		{"formatted phones", text("b6", "+1 (415) 555-0103", " +1 415 555 0104", "6"), d, e},
		{"from the service account", text("otp:b7", "", c, "code 123456"), builtin.ServicePhone, c},
		{"document", network.Message{Reference: "b8", FromPhone: e, ToPhone: a, Media: network.Media{Type: "document", Content: "https://files.example/r.pdf", FileName: "r.pdf", FileSize: 2048, FileType: "application/pdf"}}, e, a},
		{"voice", network.Message{Reference: "b9", FromPhone: e, ToPhone: b, Media: network.Media{Type: "voice", Content: "https://files.example/v.ogg", FileName: "v.ogg", FileSize: 4096, FileType: "audio/ogg", Duration: 12}}, e, b},
		{"image", network.Message{Reference: "b10", FromPhone: a, ToPhone: b, Media: network.Media{Type: "image", Content: "https://files.example/i.png", FileName: "i.png", FileSize: 10, FileType: "image/png"}}, a, b},
		{"again the first pair", text("b11", a, b, "11"), a, b},
	}
	msgs := make([]network.Message, len(tests))
	for i, tt := range tests {
		msgs[i] = tt.msg
	}
	statements.Reset()
	results := f.net.DeliverBatch(ctx, msgs)
	if got := statements.Count(); got != 2 {
		t.Errorf("DeliverBatch ran %d statements, want 2", got)
	}
	if len(results) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(results), len(msgs))
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := *f
			f.t = t
			f.checkDelivered(results[i], tt.msg, tt.from, tt.to, at)
			// Deliver says the same: the message is there already.
			if d, err := f.net.Deliver(ctx, tt.msg); err != nil || d != results[i].Delivery {
				t.Errorf("Deliver after DeliverBatch = %+v, %v; want %+v", d, err, results[i].Delivery)
			}
		})
	}
	// Message ids follow the batch's order, as successive Deliver calls give.
	for i := 1; i < len(results); i++ {
		if results[i].Delivery.MessageID <= results[i-1].Delivery.MessageID {
			t.Errorf("message %d has id %d, message %d has %d: ids out of the batch's order",
				i-1, results[i-1].Delivery.MessageID, i, results[i].Delivery.MessageID)
		}
	}
	// One row per reference, one conversation per pair: a-b, a-c, d-e,
	// service-c, a-e, b-e.
	if n := f.count(`SELECT count(*) FROM network.messages`); n != len(msgs)+1 {
		t.Errorf("%d messages, want %d", n, len(msgs)+1)
	}
	if n := f.count(`SELECT count(*) FROM network.conversations`); n != 6 {
		t.Errorf("%d conversations, want 6", n)
	}

	t.Run("empty batch", func(t *testing.T) {
		statements.Reset()
		for _, msgs := range [][]network.Message{nil, {}} {
			if got := f.net.DeliverBatch(ctx, msgs); got == nil || len(got) != 0 {
				t.Errorf("DeliverBatch(%#v) = %#v, want an empty slice", msgs, got)
			}
		}
		if got := statements.Count(); got != 0 {
			t.Errorf("an empty batch ran %d statements", got)
		}
	})
}

func TestDeliverBatchRefusals(t *testing.T) {
	t.Parallel()
	f, statements := newCountingFixture(t)
	ctx := context.Background()
	s, r := ph(110), ph(111)
	f.account(s)
	f.account(r)
	f.account(ph(112), receivingDisabled)
	f.account(ph(113), phoneUnverified)
	f.account(ph(114))
	if err := f.net.Block(ctx, ph(114), s); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		msg  network.Message
		code string // "" for delivered
	}{
		{"valid", text("ok1", s, r, "hi"), ""},
		{"no reference", text("", s, r, "hi"), network.CodeInvalidMessage},
		{"unknown type", network.Message{Reference: "x1", FromPhone: s, ToPhone: r, Media: network.Media{Type: "sticker"}}, network.CodeInvalidMessage},
		{"malformed recipient", text("x2", s, "555-0111", "hi"), network.CodeInvalidPhone},
		{"malformed sender", text("x3", "nope", r, "hi"), network.CodeInvalidPhone},
		{"service account as a phone", text("x4", builtin.ServicePhone, r, "hi"), network.CodeInvalidPhone},
		{"valid, between two refusals", text("ok2", r, s, "hi"), ""},
		{"no sender account", text("x5", ph(118), r, "hi"), network.CodeSenderNotRegistered},
		{"no recipient account", text("x6", s, ph(119), "hi"), network.CodeNotRegistered},
		{"to self", text("x7", s, "+1 415 555 0110", "hi"), network.CodeSelf},
		{"phone unverified", text("x8", s, ph(113), "hi"), network.CodePhoneUnverified},
		{"receiving disabled", text("x9", s, ph(112), "hi"), network.CodeReceivingDisabled},
		{"blocked sender", text("x10", s, ph(114), "hi"), network.CodeBlockedSender},
		{"the blocking recipient sends", text("ok3", ph(114), s, "hi"), ""},
		{"from the service account to no account", text("otp:x11", "", ph(119), "code"), network.CodeNotRegistered},
	}
	msgs := make([]network.Message, len(tests))
	for i, tt := range tests {
		msgs[i] = tt.msg
	}
	statements.Reset()
	results := f.net.DeliverBatch(ctx, msgs)
	// The parties and the insert, then for each refusal by an account
	// deliver's parties and its look-up of the reference.
	if got, want := statements.Count(), int64(2+2*7); got != want {
		t.Errorf("DeliverBatch ran %d statements, want %d", got, want)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := *f
			f.t = t
			res := results[i]
			if tt.code == "" {
				f.checkDelivered(res, tt.msg, tt.msg.FromPhone, tt.msg.ToPhone, start)
				return
			}
			_, derr := f.net.Deliver(ctx, tt.msg)
			if code(res.Err) != tt.code || !network.IsPermanent(res.Err) || res.Delivery != (network.Delivery{}) {
				t.Fatalf("result = %+v, %v; want permanent %s", res.Delivery, res.Err, tt.code)
			}
			if res.Err.Error() != derr.Error() {
				t.Errorf("error %q, Deliver's %q", res.Err, derr)
			}
			if _, ok := f.stored(tt.msg.Reference); ok {
				t.Errorf("a refused message is stored")
			}
		})
	}
	// Refusals create nothing: 3 messages, in 2 conversations.
	if m, c := f.count(`SELECT count(*) FROM network.messages`), f.count(`SELECT count(*) FROM network.conversations`); m != 3 || c != 2 {
		t.Errorf("%d messages and %d conversations, want 3 and 2", m, c)
	}
}

func TestDeliverBatchRepeats(t *testing.T) {
	t.Parallel()
	f, _ := newCountingFixture(t)
	ctx := context.Background()
	a, b, c, d, e := ph(120), ph(121), ph(122), ph(123), ph(124)
	for _, p := range []string{a, b, c, d, e} {
		f.account(p)
	}
	first := map[string]network.Delivery{}
	for _, m := range []network.Message{
		text("done", a, b, "first"),
		text("done-blocked", c, b, "first"),
		text("used", a, c, "first"),
	} {
		dl, err := f.net.Deliver(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		first[m.Reference] = dl
	}
	// Since then b blocks c.
	if err := f.net.Block(ctx, b, c); err != nil {
		t.Fatal(err)
	}
	at := f.clock.Advance(time.Hour)
	conversations := f.count(`SELECT count(*) FROM network.conversations`)

	// repeat: the result is the reference's first delivery, made before the
	// batch or by an earlier message of the batch.
	const before, inBatch = "before", "in batch"
	tests := []struct {
		name     string
		msg      network.Message
		from, to string // of the message stored under the reference
		content  string
		repeat   string // before, inBatch or "" for a new delivery
		code     string // a refusal instead
	}{
		{name: "repeat", msg: text("done", a, b, "again"), from: a, to: b, content: "first", repeat: before},
		{name: "repeat, formatted", msg: text("done", "+1 (415) 555-0120", b, "again"), from: a, to: b, content: "first", repeat: before},
		{name: "repeat after the recipient blocked the sender", msg: text("done-blocked", c, b, "again"), from: c, to: b, content: "first", repeat: before},
		{name: "reused for another recipient", msg: text("used", a, e, "hi"), code: network.CodeReferenceReused},
		{name: "reused by another sender", msg: text("used", d, c, "hi"), code: network.CodeReferenceReused},
		{name: "new", msg: text("twice", d, e, "one"), from: d, to: e, content: "one"},
		{name: "same reference again in the batch", msg: text("twice", d, e, "two"), from: d, to: e, content: "one", repeat: inBatch},
		{name: "same reference in the batch, other direction", msg: text("twice", e, d, "three"), code: network.CodeReferenceReused},
		{name: "refused first", msg: text("second-wins", c, b, "blocked"), code: network.CodeBlockedSender},
		{name: "then delivered elsewhere", msg: text("second-wins", c, d, "ok"), from: c, to: d, content: "ok"},
		{name: "invalid first", msg: network.Message{Reference: "valid-wins", FromPhone: a, ToPhone: d, Media: network.Media{Type: "gif"}}, code: network.CodeInvalidMessage},
		{name: "then valid", msg: text("valid-wins", a, d, "ok"), from: a, to: d, content: "ok"},
	}
	msgs := make([]network.Message, len(tests))
	for i, tt := range tests {
		msgs[i] = tt.msg
	}
	results := f.net.DeliverBatch(ctx, msgs)
	firstInBatch := map[string]network.Delivery{}
	for i, r := range results {
		if _, ok := firstInBatch[msgs[i].Reference]; !ok && r.Err == nil {
			firstInBatch[msgs[i].Reference] = r.Delivery
		}
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := *f
			f.t = t
			res := results[i]
			switch {
			case tt.code != "":
				if code(res.Err) != tt.code || res.Delivery != (network.Delivery{}) {
					t.Fatalf("result = %+v, %v; want %s", res.Delivery, res.Err, tt.code)
				}
				return
			case res.Err != nil:
				t.Fatal(res.Err)
			case tt.repeat == before && res.Delivery != first[tt.msg.Reference]:
				t.Fatalf("result = %+v, want the first delivery %+v", res.Delivery, first[tt.msg.Reference])
			case tt.repeat == inBatch && res.Delivery != firstInBatch[tt.msg.Reference]:
				t.Fatalf("result = %+v, want the batch's first %+v", res.Delivery, firstInBatch[tt.msg.Reference])
			}
			s, _ := f.stored(tt.msg.Reference)
			if s.delivery != res.Delivery || s.msg.Content != tt.content || s.from != tt.from || s.to != tt.to {
				t.Fatalf("stored %+v %+v, want %q from %s to %s and the result %+v",
					s.delivery, s.msg, tt.content, tt.from, tt.to, res.Delivery)
			}
			wantAt := at
			if tt.repeat == before {
				wantAt = start
			}
			if !s.delivery.DeliveredAt.Equal(wantAt) {
				t.Fatalf("delivered at %v, want %v", s.delivery.DeliveredAt, wantAt)
			}
		})
	}
	// Stored: the 3 first deliveries, twice, second-wins and valid-wins; the
	// new pairs d-e, c-d and a-d have one conversation each, and the
	// reference reused with a-e created none.
	if n := f.count(`SELECT count(*) FROM network.messages`); n != 6 {
		t.Errorf("%d messages, want 6", n)
	}
	if n := f.count(`SELECT count(*) FROM network.conversations`); n != conversations+3 {
		t.Errorf("%d conversations, want %d", n, conversations+3)
	}
	if id := f.conversation(a, e); id != 0 {
		t.Errorf("a conversation %d was created for a reused reference", id)
	}
}

// TestDeliverBatchReferenceExistsNewPair: a batch whose only message reuses a
// reference between a new pair creates no conversation for it.
func TestDeliverBatchReferenceExistsNewPair(t *testing.T) {
	t.Parallel()
	f, _ := newCountingFixture(t)
	ctx := context.Background()
	a, b, c := ph(125), ph(126), ph(127)
	f.account(a)
	f.account(b)
	f.account(c)
	if _, err := f.net.Deliver(ctx, text("taken", a, b, "hi")); err != nil {
		t.Fatal(err)
	}
	res := f.net.DeliverBatch(ctx, []network.Message{text("taken", b, c, "hi"), text("taken", c, a, "hi")})
	for i, r := range res {
		if code(r.Err) != network.CodeReferenceReused {
			t.Errorf("result %d = %+v, %v; want reference_reused", i, r.Delivery, r.Err)
		}
	}
	if n := f.count(`SELECT count(*) FROM network.conversations`); n != 1 {
		t.Errorf("%d conversations, want 1", n)
	}
}

// TestDeliverBatchStatementFails: when a batch statement fails, every message
// that passed check gets a transient error naming its reference, and nothing
// is delivered one by one.
func TestDeliverBatchStatementFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup string // SQL that makes a statement fail
		bad   string // content of one message
		want  string // in each error
	}{
		// The parties statement reads network.blocks.
		{name: "parties", setup: `ALTER TABLE network.blocks RENAME TO blocks_gone`, bad: "fine",
			want: "sender and recipient accounts"},
		// The insert statement reads network.conversations.
		{name: "insert", setup: `ALTER TABLE network.conversations RENAME TO conversations_gone`, bad: "fine",
			want: "insert messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, statements := newCountingFixture(t)
			ctx := context.Background()
			a, b := ph(130), ph(131)
			f.account(a)
			f.account(b)
			if tt.setup != "" {
				if _, err := f.db.Pool.Exec(ctx, tt.setup); err != nil {
					t.Fatal(err)
				}
			}
			msgs := []network.Message{
				text("f1", a, b, "hi"),
				{Reference: "f2", FromPhone: a, ToPhone: b, Media: network.Media{Type: "gif"}},
				text("f3", b, a, tt.bad),
				text("f1", a, b, "repeat"),
				text("f4", a, ph(139), "no such recipient"),
			}
			statements.Reset()
			results := f.net.DeliverBatch(ctx, msgs)
			if got := statements.Count(); got > 2 {
				t.Errorf("DeliverBatch ran %d statements, want at most 2", got)
			}
			for i, r := range results {
				if i == 1 {
					if code(r.Err) != network.CodeInvalidMessage {
						t.Errorf("result 1 = %v, want invalid_message", r.Err)
					}
					continue
				}
				prefix := "network: deliver " + msgs[i].Reference + ": " + tt.want
				if r.Err == nil || network.IsPermanent(r.Err) || !strings.HasPrefix(r.Err.Error(), prefix) ||
					r.Delivery != (network.Delivery{}) {
					t.Errorf("result %d = %+v, %v; want a transient error starting %q", i, r.Delivery, r.Err, prefix)
				}
			}
			if n := f.count(`SELECT count(*) FROM network.messages`); n != 0 {
				t.Errorf("%d messages stored", n)
			}
		})
	}
}

// TestDeliverBatchBadMessage: a message the database cannot store (Postgres
// text cannot hold NUL) fails the batch's insert; then every message goes on
// its own, so only that one fails (transiently, as Deliver fails it) and the
// others are delivered.
func TestDeliverBatchBadMessage(t *testing.T) {
	t.Parallel()
	f, _ := newCountingFixture(t)
	ctx := context.Background()
	a, b := ph(140), ph(141)
	f.account(a)
	f.account(b)
	msgs := []network.Message{
		text("g1", a, b, "hi"),
		text("g2", b, a, "nul \x00 byte"),
		text("g3", b, a, "fine"),
	}
	results := f.net.DeliverBatch(ctx, msgs)
	if r := results[1]; r.Err == nil || network.IsPermanent(r.Err) ||
		!strings.HasPrefix(r.Err.Error(), "network: deliver g2: insert message") {
		t.Errorf("bad message: %+v, %v; want Deliver's transient insert error", r.Delivery, r.Err)
	}
	for _, i := range []int{0, 2} {
		if r := results[i]; r.Err != nil || r.Delivery.MessageID == 0 {
			t.Errorf("message %s: %+v, %v; want delivered", msgs[i].Reference, r.Delivery, r.Err)
		}
	}
	if n := f.count(`SELECT count(*) FROM network.messages`); n != 2 {
		t.Errorf("%d messages stored, want 2", n)
	}
}

func TestDeliverBatchConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const accounts, refs = 6, 60
	phones := make([]string, accounts)
	for i := range phones {
		phones[i] = ph(140 + i)
		f.account(phones[i])
	}
	// Each reference has one message, between pairs of accounts that have no
	// conversation yet (both directions of each pair).
	all := make([]network.Message, refs)
	for i := range all {
		from, to := i%accounts, (i/accounts+1+i)%accounts
		if from == to {
			to = (to + 1) % accounts
		}
		all[i] = text(fmt.Sprintf("c%02d", i), phones[from], phones[to], fmt.Sprintf("message %d", i))
	}

	type call struct {
		msgs    []network.Message
		results []network.Result
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var calls []*call
	for range 12 { // batches of overlapping references, in different orders
		calls = append(calls, &call{msgs: rngSample(rng, all, refs/2)})
	}
	for range 4 { // and single Deliver calls
		calls = append(calls, &call{msgs: rngSample(rng, all, refs/4)})
	}
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() {
			if i < 12 {
				c.results = f.net.DeliverBatch(ctx, c.msgs)
				return
			}
			for _, m := range c.msgs {
				d, err := f.net.Deliver(ctx, m)
				c.results = append(c.results, network.Result{Delivery: d, Err: err})
			}
		})
	}
	wg.Wait()

	sent := map[string]bool{}
	for i, c := range calls {
		for j, m := range c.msgs {
			sent[m.Reference] = true
			r := c.results[j]
			s, ok := f.stored(m.Reference)
			if r.Err != nil || !ok || r.Delivery != s.delivery || s.msg.Content != m.Content ||
				s.from != m.FromPhone || s.to != m.ToPhone {
				t.Errorf("call %d, %s: result %+v, %v; stored %+v, %v", i, m.Reference, r.Delivery, r.Err, s, ok)
			}
			if conv := f.conversation(m.FromPhone, m.ToPhone); r.Delivery.ConversationID != conv {
				t.Errorf("call %d, %s: conversation %d, the pair's is %d", i, m.Reference, r.Delivery.ConversationID, conv)
			}
		}
	}
	if n := f.count(`SELECT count(*) FROM network.messages`); n != len(sent) {
		t.Errorf("%d messages for %d references", n, len(sent))
	}
	if n, pairs := f.count(`SELECT count(*) FROM network.conversations`),
		f.count(`SELECT count(DISTINCT conversation_id) FROM network.messages`); n != pairs {
		t.Errorf("%d conversations, %d with messages", n, pairs)
	}
}

// rngSample returns n messages of all, picked at random, in random order.
func rngSample(rng *rand.Rand, all []network.Message, n int) []network.Message {
	out := make([]network.Message, n)
	for i, j := range rng.Perm(len(all))[:n] {
		out[i] = all[j]
	}
	return out
}

// TestDeliverBatchConversationRace: a pair's conversation created by another
// transaction after the batch statement began leaves that pair's messages out
// of the statement; they are delivered one by one into that conversation.
func TestDeliverBatchConversationRace(t *testing.T) {
	t.Parallel()
	f, statements := newCountingFixture(t)
	ctx := context.Background()
	a, b, c := ph(150), ph(151), ph(152)
	ida, idb := f.account(a).ID, f.account(b).ID
	f.account(c)

	// Another transaction creates the a-b conversation and holds it.
	tx, err := f.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // after Commit it only reports ErrTxClosed
	var conv int64
	if err := tx.QueryRow(ctx, `INSERT INTO network.conversations (low_account_id, high_account_id, created_at)
	    VALUES ($1, $2, now()) RETURNING id`, min(ida, idb), max(ida, idb)).Scan(&conv); err != nil {
		t.Fatal(err)
	}
	// The last message reuses r1 for another pair: r1, first in the batch,
	// is delivered, though it is left out of the batch statement.
	msgs := []network.Message{text("r1", a, b, "1"), text("r2", a, c, "2"), text("r3", b, a, "3"), text("r1", a, c, "4")}
	statements.Reset()
	done := make(chan []network.Result)
	go func() { done <- f.net.DeliverBatch(ctx, msgs) }()
	// The batch's insert (queries/insert_messages.sql, known by its first
	// line: pg_stat_activity keeps a query's first 1024 bytes) waits for
	// that transaction's conversation...
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for f.count(`SELECT count(*) FROM pg_stat_activity
	    WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '-- insert\_message for a batch%'`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the batch does not wait for the other transaction's conversation")
		}
		<-tick.C
	}
	// ... which commits.
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	results := <-done
	for i, m := range msgs[:3] {
		f.checkDelivered(results[i], m, m.FromPhone, m.ToPhone, start)
	}
	if r := results[3]; code(r.Err) != network.CodeReferenceReused {
		t.Errorf("the reference again for another pair: %+v, %v; want reference_reused", r.Delivery, r.Err)
	}
	if results[0].Delivery.ConversationID != conv || results[2].Delivery.ConversationID != conv {
		t.Errorf("a-b messages in conversations %d and %d, want the other transaction's %d",
			results[0].Delivery.ConversationID, results[2].Delivery.ConversationID, conv)
	}
	// Two statements, then for r1 and r3 deliver's parties and insert, and
	// for r1 again its parties, insert and look-up of the reference.
	if got := statements.Count(); got != 2+2*2+3 {
		t.Errorf("%d statements, want %d", got, 2+2*2+3)
	}
	if n := f.count(`SELECT count(*) FROM network.conversations`); n != 2 {
		t.Errorf("%d conversations, want 2", n)
	}
}

// Delivers that arrive while the network's deliveries are busy share the
// next run's statements, whatever their senders: the first is held behind a
// table lock, the rest queue, and then run as one DeliverBatch, each caller
// getting its own outcome, the same as Deliver alone would have given
// (a repeat of each returns it unchanged).
func TestDeliveriesShareStatements(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b, c, blocker := ph(400), ph(401), ph(402), ph(403)
	for _, p := range []string{a, b, c, blocker} {
		f.account(p)
	}
	if err := f.net.Block(ctx, blocker, a); err != nil {
		t.Fatalf("Block: %v", err)
	}
	at := f.clock.Now()

	tests := []struct {
		msg      network.Message
		from, to string
		refused  string // the refusal's code, or "" for a delivery
	}{
		{text("shared:1", a, b, "1"), a, b, ""},
		{text("shared:2", b, c, "2"), b, c, ""},
		{text("shared:3", c, a, "3"), c, a, ""},
		{text("shared:4", a, blocker, "4"), "", "", network.CodeBlockedSender},
		{text("shared:5", a, "not a phone", "5"), "", "", network.CodeInvalidPhone},
		{text("shared:6", a, ph(499), "6"), "", "", network.CodeNotRegistered},
		{text("shared:1", a, b, "1"), a, b, ""}, // the same reference twice: one delivery
		{text("otp:shared:7", "", c, "code"), builtin.ServicePhone, c, ""},
	}
	var shared *builtin.Network
	got := make([]network.Result, len(tests))
	runs := dbtest.SharedRuns(t, f.db, "network.messages", func(cfg batch.Config) func() error {
		shared = networktest.Builtin(t, builtin.Config{DB: f.db, Clock: f.clock, DeliverBatch: cfg})
		return func() error {
			_, err := shared.Deliver(ctx, text("shared:held", a, b, "held"))
			return err
		}
	}, func() {
		var wg sync.WaitGroup
		for i, tt := range tests {
			wg.Go(func() {
				got[i].Delivery, got[i].Err = shared.Deliver(ctx, tt.msg)
			})
		}
		wg.Wait()
	}, len(tests))
	for i, tt := range tests {
		if tt.refused != "" {
			var pe *network.PermanentError
			if !errors.As(got[i].Err, &pe) || pe.Code != tt.refused {
				t.Errorf("%s: %+v, %v; want the refusal %s", tt.msg.Reference, got[i].Delivery, got[i].Err, tt.refused)
			}
			continue
		}
		f.checkDelivered(got[i], tt.msg, tt.from, tt.to, at)
		if d, err := f.net.Deliver(ctx, tt.msg); err != nil || d != got[i].Delivery {
			t.Errorf("%s: a repeat gives %+v, %v; the shared delivery gave %+v", tt.msg.Reference, d, err, got[i].Delivery)
		}
	}
	if got[0].Delivery != got[6].Delivery {
		t.Errorf("one reference delivered twice in a run: %+v and %+v", got[0].Delivery, got[6].Delivery)
	}
	if n := f.count(`SELECT count(*) FROM network.messages WHERE reference LIKE '%shared:%'`); n != 5 {
		t.Errorf("%d messages stored, want 5 (the held one and four delivered)", n)
	}
	if len(runs) != 2 || runs[0] != 1 || runs[1] != len(tests) {
		t.Fatalf("runs = %v, want [1 %d]: the queued deliveries did not share a run", runs, len(tests))
	}
}
