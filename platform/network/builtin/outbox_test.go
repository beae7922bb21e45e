package builtin_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/phone"
)

// recorder is a network.Sink that records what it is given, safe for
// concurrent use. before, when set, runs first and may fail the event.
type recorder struct {
	mu       sync.Mutex
	receipts []network.Receipt
	inbound  []network.Inbound
	verdicts []network.TemplateVerdict
	before   func(kind string) error
}

func (r *recorder) Receipt(_ context.Context, rc network.Receipt) error {
	if r.before != nil {
		if err := r.before("receipt"); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.receipts = append(r.receipts, rc)
	return nil
}

func (r *recorder) TemplateReviewed(_ context.Context, v network.TemplateVerdict) error {
	if r.before != nil {
		if err := r.before("template"); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.verdicts = append(r.verdicts, v)
	return nil
}

func (r *recorder) Inbound(_ context.Context, m network.Inbound) error {
	if r.before != nil {
		if err := r.before("inbound"); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inbound = append(r.inbound, m)
	return nil
}

func (r *recorder) got() ([]network.Receipt, []network.Inbound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.receipts), slices.Clone(r.inbound)
}

// drain drains the whole outbox into r and returns how many events it
// applied.
func (f *fixture) drain(r *recorder) int {
	f.t.Helper()
	total := 0
	for range 100 {
		n, err := f.net.Drain(context.Background(), r, 2)
		if err != nil {
			f.t.Fatalf("Drain: %v", err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
	f.t.Fatal("the outbox is not empty after 100 Drains")
	return 0
}

// references returns the references of msgs.
func references(msgs []builtin.InboxMessage) []string {
	var refs []string
	for _, m := range msgs {
		refs = append(refs, m.Reference)
	}
	return refs
}

func TestRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	me, a, b := ph(100), ph(101), ph(102)
	f.account(me)
	f.account(a)
	f.account(b)
	for _, m := range []network.Message{
		text("a1", a, me, "one"),
		text("b1", b, me, "two"),
		text("otp:1", "", me, "code"),
		text("a2", a, me, "three"),
		text("mine", me, a, "not received by me"),
	} {
		if _, err := f.net.Deliver(ctx, m); err != nil {
			t.Fatalf("Deliver %s: %v", m.Reference, err)
		}
	}

	// Reading from one sender reads its messages only, in delivery order.
	f.clock.Advance(time.Minute)
	readAt := f.clock.Now()
	got, err := f.net.Read(ctx, "+1 (415) 555-0100", a)
	if err != nil {
		t.Fatalf("Read from a: %v", err)
	}
	if refs := references(got); !slices.Equal(refs, []string{"a1", "a2"}) {
		t.Fatalf("Read from a read %v, want [a1 a2]", refs)
	}
	for _, m := range got {
		if m.Receipt() != network.ReceiptRead || m.ReadAt == nil || !m.ReadAt.Equal(readAt) ||
			m.FromPhone != a || m.ToPhone != me || !m.DeliveredAt.Equal(start) {
			t.Errorf("read message = %+v, want read at %v", m, readAt)
		}
	}
	// Again: nothing new from a, and the read time stays.
	f.clock.Advance(time.Minute)
	if again, err := f.net.Read(ctx, me, a); err != nil || len(again) != 0 {
		t.Fatalf("second Read from a = %v, %v; want nothing", references(again), err)
	}
	inbox, err := f.net.Inbox(ctx, me)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range inbox {
		wantRead := m.FromPhone == a
		if (m.Receipt() == network.ReceiptRead) != wantRead || (wantRead && !m.ReadAt.Equal(readAt)) {
			t.Errorf("inbox %s: receipt %s, read at %v", m.Reference, m.Receipt(), m.ReadAt)
		}
	}

	// Reading everything reads the rest, the platform's own messages too.
	laterAt := f.clock.Now()
	rest, err := f.net.Read(ctx, me, "")
	if err != nil || !slices.Equal(references(rest), []string{"b1", "otp:1"}) {
		t.Fatalf("Read all = %v, %v; want [b1 otp:1]", references(rest), err)
	}

	// One read receipt per message read, in the order read, exactly once.
	var r recorder
	if n := f.drain(&r); n != 4 {
		t.Fatalf("drained %d events, want 4", n)
	}
	receipts, inbound := r.got()
	want := []network.Receipt{
		{Reference: "a1", Status: network.ReceiptRead, At: readAt},
		{Reference: "a2", Status: network.ReceiptRead, At: readAt},
		{Reference: "b1", Status: network.ReceiptRead, At: laterAt},
		{Reference: "otp:1", Status: network.ReceiptRead, At: laterAt},
	}
	if !slices.EqualFunc(receipts, want, func(x, y network.Receipt) bool {
		return x.Reference == y.Reference && x.Status == y.Status && x.At.Equal(y.At) && x.At.Location() == time.UTC &&
			x.ErrorCode == "" && x.ErrorMessage == ""
	}) || len(inbound) != 0 {
		t.Fatalf("receipts = %+v, inbound %+v; want %+v", receipts, inbound, want)
	}
	if n := f.drain(&r); n != 0 {
		t.Fatalf("drained %d events again", n)
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.account(ph(110))
	tests := []struct {
		name              string
		recipient, sender string
		want              error
	}{
		{"unknown recipient", ph(111), "", network.ErrNotFound},
		{"unknown sender", ph(110), ph(112), network.ErrNotFound},
		{"malformed recipient", "110", "", phone.ErrInvalid},
		{"malformed sender", ph(110), "x", phone.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := f.net.Read(context.Background(), tt.recipient, tt.sender); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
	if got, err := f.net.Read(context.Background(), ph(110), ""); err != nil || len(got) != 0 {
		t.Fatalf("Read of an empty inbox = %v, %v", got, err)
	}
}

// Two Reads racing for the same messages read each message once between
// them: one receipt per message.
func TestReadConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	me, a := ph(120), ph(121)
	f.account(me)
	f.account(a)
	var refs []string
	for i := range 5 {
		ref := "r" + strconv.Itoa(i)
		refs = append(refs, ref)
		if _, err := f.net.Deliver(ctx, text(ref, a, me, "hi")); err != nil {
			t.Fatal(err)
		}
	}
	// Hold the messages' row locks until both Reads wait for them.
	tx, err := f.db.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT id FROM network.messages FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var got [2][]builtin.InboxMessage
	var errs [2]error
	for i := range 2 {
		wg.Go(func() { got[i], errs[i] = f.net.Read(ctx, me, "") })
	}
	dbtest.WaitForLockWaits(t, f.db, 2)
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("Reads: %v, %v", errs[0], errs[1])
	}
	all := append(references(got[0]), references(got[1])...)
	slices.Sort(all)
	if !slices.Equal(all, refs) {
		t.Fatalf("the Reads read %v and %v, want %v once between them", references(got[0]), references(got[1]), refs)
	}
	var r recorder
	f.drain(&r)
	receipts, _ := r.got()
	var receipted []string
	for _, rc := range receipts {
		receipted = append(receipted, rc.Reference)
	}
	slices.Sort(receipted)
	if !slices.Equal(receipted, refs) {
		t.Fatalf("receipts for %v, want one for each of %v", receipted, refs)
	}
}

func TestSend(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	org, person, stranger := ph(130), ph(131), ph(132)
	f.account(org)
	f.account(person)
	f.account(stranger)
	d, err := f.net.Deliver(ctx, text("tenant_1:1", org, person, "Your order shipped"))
	if err != nil {
		t.Fatal(err)
	}

	// A reply goes into the pair's conversation, delivered at once.
	f.clock.Advance(time.Minute)
	at := f.clock.Now()
	m, err := f.net.Send(ctx, "+1 415 555 0131", org, "Thanks!")
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if m.MessageID == 0 || m.ConversationID != d.ConversationID || m.FromPhone != person || m.ToPhone != org ||
		m.Type != "text" || m.Content != "Thanks!" || m.Reference != "net:"+strconv.FormatInt(m.MessageID, 10) ||
		!m.CreatedAt.Equal(at) || !m.DeliveredAt.Equal(at) || m.ReadAt != nil || m.Receipt() != network.ReceiptDelivered {
		t.Fatalf("Send = %+v; want a delivered text in conversation %d at %v", m, d.ConversationID, at)
	}
	inbox, err := f.net.Inbox(ctx, org)
	if err != nil || len(inbox) != 1 || inbox[0] != m {
		t.Fatalf("org's inbox = %+v, %v; want %+v", inbox, err, m)
	}

	// A first message between a new pair starts their conversation, which
	// Deliver then uses.
	first, err := f.net.Send(ctx, stranger, org, "Hello?")
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	answer, err := f.net.Deliver(ctx, text("tenant_1:2", org, stranger, "Hi"))
	if err != nil || answer.ConversationID != first.ConversationID || first.ConversationID == d.ConversationID {
		t.Fatalf("answer = %+v, %v; want conversation %d", answer, err, first.ConversationID)
	}

	// Each message written is one Inbound, with the message id as its id.
	var r recorder
	if n := f.drain(&r); n != 2 {
		t.Fatalf("drained %d events, want 2", n)
	}
	receipts, inbound := r.got()
	want := []network.Inbound{
		{ID: strconv.FormatInt(m.MessageID, 10), FromPhone: person, ToPhone: org, ConversationID: d.ConversationID,
			Media: network.Media{Type: "text", Content: "Thanks!"}, At: at},
		{ID: strconv.FormatInt(first.MessageID, 10), FromPhone: stranger, ToPhone: org, ConversationID: first.ConversationID,
			Media: network.Media{Type: "text", Content: "Hello?"}, At: at},
	}
	if len(receipts) != 0 || !slices.EqualFunc(inbound, want, func(x, y network.Inbound) bool {
		xAt, yAt := x.At, y.At
		x.At, y.At = time.Time{}, time.Time{}
		return x == y && xAt.Equal(yAt) && xAt.Location() == time.UTC
	}) {
		t.Fatalf("inbound = %+v, receipts %+v; want %+v", inbound, receipts, want)
	}
}

func TestSendRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a := ph(140)
	f.account(a)
	f.account(ph(141), phoneUnverified)
	f.account(ph(142), receivingDisabled)
	f.account(ph(143))
	f.account(ph(144))
	if err := f.net.Block(ctx, ph(143), a); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		from, to string
		text     string
		code     string
	}{
		{"empty text", a, ph(144), "", network.CodeInvalidMessage},
		{"unknown sender", ph(149), ph(144), "hi", network.CodeSenderNotRegistered},
		{"unknown recipient", a, ph(148), "hi", network.CodeNotRegistered},
		{"self", a, "+1 (415) 555-0140", "hi", network.CodeSelf},
		{"phone unverified", a, ph(141), "hi", network.CodePhoneUnverified},
		{"receiving disabled", a, ph(142), "hi", network.CodeReceivingDisabled},
		{"blocked", a, ph(143), "hi", network.CodeBlockedSender},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := f.net.Send(ctx, tt.from, tt.to, tt.text)
			var p *network.PermanentError
			if !errors.As(err, &p) || p.Code != tt.code {
				t.Fatalf("err = %v, want refusal %s", err, tt.code)
			}
		})
	}
	t.Run("malformed phone", func(t *testing.T) {
		t.Parallel()
		if _, err := f.net.Send(ctx, a, "12", "hi"); !errors.Is(err, phone.ErrInvalid) {
			t.Fatalf("err = %v, want phone.ErrInvalid", err)
		}
	})
	// The blocker still writes to the account it blocks: blocks are one-way.
	t.Run("blocks are one-way", func(t *testing.T) {
		t.Parallel()
		if _, err := f.net.Send(ctx, ph(143), a, "hi"); err != nil {
			t.Fatalf("Send: %v", err)
		}
	})
}

// Refusals write nothing: no message, no event.
func TestSendRefusedWritesNothing(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.account(ph(150))
	f.account(ph(151), receivingDisabled)
	if _, err := f.net.Send(context.Background(), ph(150), ph(151), "hi"); !network.IsPermanent(err) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if n := f.count(`SELECT (SELECT count(*) FROM network.messages) + (SELECT count(*) FROM network.events)`); n != 0 {
		t.Fatalf("%d rows written", n)
	}
}

// outbox fills the outbox with n read receipts and returns their references
// in order.
func (f *fixture) outbox(n int) []string {
	f.t.Helper()
	ctx := context.Background()
	me, a := ph(160), ph(161)
	f.account(me)
	f.account(a)
	var refs []string
	for i := range n {
		ref := "o" + strconv.Itoa(i)
		refs = append(refs, ref)
		if _, err := f.net.Deliver(ctx, text(ref, a, me, "hi")); err != nil {
			f.t.Fatal(err)
		}
	}
	if _, err := f.net.Read(ctx, me, ""); err != nil {
		f.t.Fatal(err)
	}
	return refs
}

func receiptRefs(receipts []network.Receipt) []string {
	var refs []string
	for _, r := range receipts {
		refs = append(refs, r.Reference)
	}
	return refs
}

// Drain marks an event processed only once the sink took it, and stops at
// the first the sink fails: that one and the rest are offered again.
func TestDrainStopsAtSinkError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	refs := f.outbox(4)
	errBusy := errors.New("platform busy")
	calls := 0
	r := &recorder{before: func(string) error {
		calls++
		if calls == 2 {
			return errBusy
		}
		return nil
	}}
	n, err := f.net.Drain(ctx, r, 10)
	if n != 1 || !errors.Is(err, errBusy) {
		t.Fatalf("Drain = %d, %v; want 1 and the sink's error", n, err)
	}
	if got := f.count(`SELECT count(*) FROM network.events WHERE processed_at IS NULL`); got != 3 {
		t.Fatalf("%d events unprocessed, want 3", got)
	}
	// The limit bounds a Drain.
	if n, err := f.net.Drain(ctx, r, 2); n != 2 || err != nil {
		t.Fatalf("Drain(limit 2) = %d, %v", n, err)
	}
	if n, err := f.net.Drain(ctx, r, 0); n != 1 || err != nil {
		t.Fatalf("Drain(default limit) = %d, %v", n, err)
	}
	if n, err := f.net.Drain(ctx, r, 0); n != 0 || err != nil {
		t.Fatalf("Drain of an empty outbox = %d, %v", n, err)
	}
	receipts, _ := r.got()
	if got := receiptRefs(receipts); !slices.Equal(got, refs) {
		t.Fatalf("receipts for %v, want %v in order, each once", got, refs)
	}
	if got := f.count(`SELECT count(*) FROM network.events WHERE processed_at = $1`, start); got != 4 {
		t.Fatalf("%d events processed at the clock's time, want 4", got)
	}
}

// Two Drains at once never take the same event: while one holds the first
// event (its sink has not returned), the other applies the rest.
func TestDrainConcurrent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	refs := f.outbox(3)

	entered, release := make(chan struct{}), make(chan struct{})
	held := &recorder{before: func(string) error {
		close(entered)
		<-release
		return nil
	}}
	var heldN int
	var heldErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		heldN, heldErr = f.net.Drain(ctx, held, 1)
	}()
	<-entered

	other := &recorder{}
	octx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := f.net.Drain(octx, other, 10)
	close(release)
	<-done
	if heldN != 1 || heldErr != nil || n != 2 || err != nil {
		t.Fatalf("held Drain = %d, %v; other Drain = %d, %v; want 1 and 2", heldN, heldErr, n, err)
	}
	first, _ := held.got()
	rest, _ := other.got()
	if got := append(receiptRefs(first), receiptRefs(rest)...); !slices.Equal(got, refs) {
		t.Fatalf("held Drain applied %v, the other %v; want %v once between them", receiptRefs(first), receiptRefs(rest), refs)
	}
	if n, err := f.net.Drain(ctx, other, 10); n != 0 || err != nil {
		t.Fatalf("Drain after both = %d, %v; want nothing left", n, err)
	}
}
