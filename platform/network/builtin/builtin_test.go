package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/batch"
	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/phone"
)

// start is the fake clock's time in these tests.
var start = time.Date(2026, 11, 22, 14, 3, 5, 0, time.UTC)

// fixture is one test's network on a database of its own.
type fixture struct {
	t     *testing.T
	db    *db.DB
	net   *builtin.Network
	clock *clock.Fake
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d, _ := dbtest.Migrated(t)
	clk := clock.NewFake(start)
	return &fixture{t: t, db: d, net: networktest.Builtin(t, builtin.Config{DB: d, Clock: clk}), clock: clk}
}

// ph returns a valid E.164 phone numbered i.
func ph(i int) string { return fmt.Sprintf("+1415555%04d", i) }

// account creates an account; with no options it is verified, phone verified
// and receiving.
func (f *fixture) account(p string, opts ...func(*builtin.AccountSpec)) network.Account {
	f.t.Helper()
	spec := builtin.AccountSpec{Phone: p, Verified: true, PhoneVerified: true, ReceivingEnabled: true}
	for _, o := range opts {
		o(&spec)
	}
	a, err := f.net.AddAccount(context.Background(), spec)
	if err != nil {
		f.t.Fatalf("AddAccount(%+v): %v", spec, err)
	}
	return a
}

func unverified(s *builtin.AccountSpec)        { s.Verified = false }
func phoneUnverified(s *builtin.AccountSpec)   { s.PhoneVerified = false }
func receivingDisabled(s *builtin.AccountSpec) { s.ReceivingEnabled = false }

func (f *fixture) count(query string, args ...any) int {
	f.t.Helper()
	var n int
	if err := f.db.Pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		f.t.Fatalf("count: %v", err)
	}
	return n
}

func text(ref, from, to, content string) network.Message {
	return network.Message{Reference: ref, FromPhone: from, ToPhone: to, Media: network.Media{Type: "text", Content: content}}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	sender := ph(1)
	f.account(sender)
	f.account(ph(2))
	f.account(ph(3), unverified)
	f.account(ph(4), phoneUnverified)
	f.account(ph(5), receivingDisabled)
	f.account(ph(6))
	if err := f.net.Block(ctx, ph(6), sender); err != nil {
		t.Fatalf("Block: %v", err)
	}

	tests := []struct {
		name                                   string
		phone, sender                          string
		wantErr                                error
		verified, phoneVerified, receiving, bl bool
		reason                                 string
	}{
		{"reachable", ph(2), sender, nil, true, true, true, false, network.CodeOK},
		{"formatted input", "+1 (415) 555-0002", " " + sender, nil, true, true, true, false, network.CodeOK},
		{"owner unverified", ph(3), sender, nil, false, true, true, false, network.CodeOK},
		{"phone unverified", ph(4), sender, nil, true, false, true, false, network.CodePhoneUnverified},
		{"receiving disabled", ph(5), sender, nil, true, true, false, false, network.CodeReceivingDisabled},
		{"blocks the sender", ph(6), sender, nil, true, true, true, true, network.CodeBlockedSender},
		{"blocks another sender only", ph(6), ph(2), nil, true, true, true, false, network.CodeOK},
		{"no sender given", ph(6), "", nil, true, true, true, false, network.CodeOK},
		{"sender without account", ph(6), ph(99), nil, true, true, true, false, network.CodeOK},
		{"not registered", ph(7), sender, network.ErrNotFound, false, false, false, false, ""},
		{"malformed phone", "12345", sender, phone.ErrInvalid, false, false, false, false, ""},
		{"malformed sender", ph(2), "abc", phone.ErrInvalid, false, false, false, false, ""},
		{"service account is no phone", builtin.ServicePhone, "", phone.ErrInvalid, false, false, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, err := f.net.Lookup(ctx, tt.phone, tt.sender)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Lookup: %v", err)
			}
			got := [4]bool{a.Verified, a.PhoneVerified, a.ReceivingEnabled, a.BlocksSender}
			want := [4]bool{tt.verified, tt.phoneVerified, tt.receiving, tt.bl}
			if got != want || a.ReasonCode() != tt.reason || a.ID == 0 {
				t.Fatalf("account = %+v (reason %s), want flags %v reason %s", a, a.ReasonCode(), want, tt.reason)
			}
			if a.Phone[0] != '+' || (a.VerifiedAt != nil) != a.Verified || (a.PhoneVerifiedAt != nil) != a.PhoneVerified {
				t.Fatalf("account = %+v: phone or verification times wrong", a)
			}
		})
	}
}

// A read that fails is the platform's database failing, not a network:
// Lookup and Verified mark it network.Platform; an unknown phone is not.
func TestLookupFailureIsThePlatforms(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.account(ph(1))
	if _, err := f.net.Lookup(ctx, ph(2), ""); !errors.Is(err, network.ErrNotFound) || network.IsPlatform(err) {
		t.Fatalf("Lookup of an unknown phone = %v, want ErrNotFound, not the platform's", err)
	}
	if _, err := f.net.Verified(ctx, ph(2)); !errors.Is(err, network.ErrNotFound) || network.IsPlatform(err) {
		t.Fatalf("Verified of an unknown phone = %v, want ErrNotFound, not the platform's", err)
	}
	f.db.Close() // the database gone
	if _, err := f.net.Lookup(ctx, ph(1), ""); !network.IsPlatform(err) || errors.Is(err, network.ErrNotFound) {
		t.Fatalf("Lookup without its database = %v, want the platform's failure", err)
	}
	if _, err := f.net.Verified(ctx, ph(1)); !network.IsPlatform(err) || errors.Is(err, network.ErrNotFound) {
		t.Fatalf("Verified without its database = %v, want the platform's failure", err)
	}
}

func TestAccountsAndVerification(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	p := ph(10)

	if _, err := f.net.Verified(ctx, p); !errors.Is(err, network.ErrNotFound) {
		t.Fatalf("Verified of unknown phone: err = %v, want ErrNotFound", err)
	}
	if _, err := f.net.VerifyAccount(ctx, p); !errors.Is(err, network.ErrNotFound) {
		t.Fatalf("VerifyAccount of unknown phone: err = %v, want ErrNotFound", err)
	}
	if _, err := f.net.AddAccount(ctx, builtin.AccountSpec{Phone: "0101"}); !errors.Is(err, phone.ErrInvalid) {
		t.Fatalf("AddAccount of malformed phone: err = %v, want phone.ErrInvalid", err)
	}

	a := f.account(p, unverified)
	if a.Verified || a.VerifiedAt != nil || !a.PhoneVerified || !a.PhoneVerifiedAt.Equal(start) {
		t.Fatalf("created account = %+v", a)
	}
	if v, err := f.net.Verified(ctx, p); err != nil || v {
		t.Fatalf("Verified = %v, %v; want false", v, err)
	}

	verifiedAt := f.clock.Advance(time.Minute)
	a, err := f.net.VerifyAccount(ctx, "+1 415 555 0010")
	if err != nil || !a.Verified || !a.VerifiedAt.Equal(verifiedAt) {
		t.Fatalf("VerifyAccount = %+v, %v; want verified at %v", a, err, verifiedAt)
	}
	if v, err := f.net.Verified(ctx, p); err != nil || !v {
		t.Fatalf("Verified = %v, %v; want true", v, err)
	}

	// Verifying again, or re-adding as verified, keeps the first time.
	f.clock.Advance(time.Minute)
	if a, err = f.net.VerifyAccount(ctx, p); err != nil || !a.VerifiedAt.Equal(verifiedAt) {
		t.Fatalf("second VerifyAccount = %+v, %v; want verified_at kept", a, err)
	}
	if a = f.account(p); !a.VerifiedAt.Equal(verifiedAt) || !a.PhoneVerifiedAt.Equal(start) {
		t.Fatalf("re-added account = %+v; want verification times kept", a)
	}

	// Updating to unverified clears the times; the account keeps its id.
	b := f.account(p, unverified, phoneUnverified, receivingDisabled)
	if b.ID != a.ID || b.Verified || b.VerifiedAt != nil || b.PhoneVerified || b.PhoneVerifiedAt != nil || b.ReceivingEnabled {
		t.Fatalf("updated account = %+v, want id %d and everything off", b, a.ID)
	}
	if n := f.count(`SELECT count(*) FROM network.accounts WHERE phone = $1`, p); n != 1 {
		t.Fatalf("%d accounts for %s, want 1", n, p)
	}
}

func TestBlock(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	r, s := ph(20), ph(21)
	f.account(r)
	f.account(s)

	for _, tt := range []struct {
		name      string
		recipient string
		sender    string
		want      error
	}{
		{"unknown recipient", ph(22), s, network.ErrNotFound},
		{"unknown sender", r, ph(22), network.ErrNotFound},
		{"malformed recipient", "x", s, phone.ErrInvalid},
		{"the service account cannot be blocked", r, builtin.ServicePhone, phone.ErrInvalid},
	} {
		if err := f.net.Block(ctx, tt.recipient, tt.sender); !errors.Is(err, tt.want) {
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
		}
	}
	if err := f.net.Block(ctx, r, r); err == nil {
		t.Error("an account blocked itself")
	}

	for range 2 { // blocking twice is fine
		if err := f.net.Block(ctx, r, s); err != nil {
			t.Fatalf("Block: %v", err)
		}
	}
	if a, _ := f.net.Lookup(ctx, r, s); !a.BlocksSender {
		t.Fatal("Lookup does not report the block")
	}
	// The block is one-way.
	if a, _ := f.net.Lookup(ctx, s, r); a.BlocksSender {
		t.Fatal("the block works backwards")
	}
	_, err := f.net.Deliver(ctx, text("blocked", s, r, "hi"))
	if pe := new(network.PermanentError); !errors.As(err, &pe) || pe.Code != network.CodeBlockedSender {
		t.Fatalf("Deliver to a blocking recipient: err = %v, want blocked_sender", err)
	}
	if _, err := f.net.Deliver(ctx, text("reverse", r, s, "hi")); err != nil {
		t.Fatalf("Deliver from the blocking account: %v", err)
	}

	if err := f.net.Unblock(ctx, r, s); err != nil {
		t.Fatalf("Unblock: %v", err)
	}
	if a, _ := f.net.Lookup(ctx, r, s); a.BlocksSender {
		t.Fatal("Lookup still reports the block after Unblock")
	}
	if _, err := f.net.Deliver(ctx, text("unblocked", s, r, "hi")); err != nil {
		t.Fatalf("Deliver after Unblock: %v", err)
	}
}

func TestDeliverIsIdempotent(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b := ph(30), ph(31)
	f.account(a)
	rb := f.account(b)

	first, err := f.net.Deliver(ctx, text("tenant_1:1", a, b, "hello"))
	if err != nil {
		t.Fatalf("Deliver: %v", err)
	}
	// Stored in the recipient's inbox is delivered: no receipt follows.
	if first.MessageID == 0 || first.ConversationID == 0 || first.RecipientID != rb.ID || !first.DeliveredAt.Equal(start) ||
		!first.Delivered {
		t.Fatalf("delivery = %+v", first)
	}

	// A repeat returns the first delivery and creates nothing, even after the
	// recipient stopped receiving and with a different body.
	f.clock.Advance(time.Hour)
	f.account(b, receivingDisabled)
	again, err := f.net.Deliver(ctx, text("tenant_1:1", "+1 415-555-0030", b, "hello again"))
	if err != nil || again != first {
		t.Fatalf("repeat = %+v, %v; want %+v", again, err, first)
	}
	if n := f.count(`SELECT count(*) FROM network.messages`); n != 1 {
		t.Fatalf("%d messages, want 1", n)
	}

	// Another reference is another message.
	f.account(b)
	second, err := f.net.Deliver(ctx, text("tenant_1:2", a, b, "hello"))
	if err != nil || second.MessageID == first.MessageID || second.ConversationID != first.ConversationID {
		t.Fatalf("second = %+v, %v; want a new message in conversation %d", second, err, first.ConversationID)
	}
}

func TestDeliverConcurrentSameReference(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b := ph(40), ph(41)
	f.account(a)
	f.account(b)

	const n = 20
	var wg sync.WaitGroup
	results := make([]network.Delivery, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = f.net.Deliver(ctx, text("race", a, b, "once"))
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if results[i] != results[0] {
			t.Fatalf("call %d = %+v, call 0 = %+v", i, results[i], results[0])
		}
	}
	if got := f.count(`SELECT count(*) FROM network.messages WHERE reference = 'race'`); got != 1 {
		t.Fatalf("%d messages, want 1", got)
	}
	if got := f.count(`SELECT count(*) FROM network.conversations`); got != 1 {
		t.Fatalf("%d conversations, want 1", got)
	}
}

func TestOneConversationPerPair(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	a, b, c := ph(50), ph(51), ph(52)
	f.account(a)
	f.account(b)
	f.account(c)

	ab, err := f.net.Deliver(ctx, text("1", a, b, "a to b"))
	if err != nil {
		t.Fatal(err)
	}
	ba, err := f.net.Deliver(ctx, text("2", b, a, "b to a"))
	if err != nil {
		t.Fatal(err)
	}
	ac, err := f.net.Deliver(ctx, text("3", a, c, "a to c"))
	if err != nil {
		t.Fatal(err)
	}
	otp, err := f.net.Deliver(ctx, text("otp:1", "", a, "code"))
	if err != nil {
		t.Fatal(err)
	}
	if ab.ConversationID != ba.ConversationID {
		t.Fatalf("a→b in conversation %d, b→a in %d; want one", ab.ConversationID, ba.ConversationID)
	}
	if ac.ConversationID == ab.ConversationID || otp.ConversationID == ab.ConversationID || otp.ConversationID == ac.ConversationID {
		t.Fatalf("different pairs share a conversation: %+v %+v %+v", ab, ac, otp)
	}

	// Concurrent first messages of a new pair, both directions, meet in one conversation.
	d, e := ph(53), ph(54)
	f.account(d)
	f.account(e)
	var wg sync.WaitGroup
	convs := make([]int64, 10)
	for i := range convs {
		wg.Go(func() {
			from, to := d, e
			if i%2 == 1 {
				from, to = e, d
			}
			got, err := f.net.Deliver(ctx, text(fmt.Sprintf("pair-%d", i), from, to, "hi"))
			if err != nil {
				t.Errorf("Deliver %d: %v", i, err)
			}
			convs[i] = got.ConversationID
		})
	}
	wg.Wait()
	for i := range convs {
		if convs[i] != convs[0] {
			t.Fatalf("conversations = %v, want one", convs)
		}
	}
	if got := f.count(`SELECT count(*) FROM network.conversations`); got != 4 {
		t.Fatalf("%d conversations, want 4", got)
	}
}

func TestDeliverRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	s := ph(60)
	f.account(s)
	f.account(ph(61))
	f.account(ph(62), receivingDisabled)
	f.account(ph(63), phoneUnverified)
	f.account(ph(64))
	if err := f.net.Block(ctx, ph(64), s); err != nil {
		t.Fatal(err)
	}
	// "used" is taken by s → +14155550061.
	if _, err := f.net.Deliver(ctx, text("used", s, ph(61), "first")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		msg  network.Message
		code string
	}{
		{"no recipient account", text("r1", s, ph(69), "hi"), network.CodeNotRegistered},
		{"receiving disabled", text("r2", s, ph(62), "hi"), network.CodeReceivingDisabled},
		{"phone unverified", text("r3", s, ph(63), "hi"), network.CodePhoneUnverified},
		{"blocked sender", text("r4", s, ph(64), "hi"), network.CodeBlockedSender},
		{"no sender account", text("r5", ph(68), ph(61), "hi"), network.CodeSenderNotRegistered},
		{"to self", text("r6", s, "+1 415 555 0060", "hi"), network.CodeSelf},
		{"malformed recipient", text("r7", s, "555-0061", "hi"), network.CodeInvalidPhone},
		{"malformed sender", text("r8", "nope", ph(61), "hi"), network.CodeInvalidPhone},
		{"service account as a phone", text("r9", builtin.ServicePhone, ph(61), "hi"), network.CodeInvalidPhone},
		{"to the service account", text("r10", s, builtin.ServicePhone, "hi"), network.CodeInvalidPhone},
		{"no reference", text("", s, ph(61), "hi"), network.CodeInvalidMessage},
		{"unknown type", network.Message{Reference: "r11", FromPhone: s, ToPhone: ph(61), Media: network.Media{Type: "sticker"}}, network.CodeInvalidMessage},
		{"reference reused for another recipient", text("used", s, ph(64), "hi"), network.CodeReferenceReused},
		{"reference reused by another sender", text("used", ph(64), ph(61), "hi"), network.CodeReferenceReused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := f.net.Deliver(ctx, tt.msg)
			var pe *network.PermanentError
			if !errors.As(err, &pe) || pe.Code != tt.code || !network.IsPermanent(err) {
				t.Fatalf("Deliver = %+v, %v; want permanent %s", d, err, tt.code)
			}
			if pe.Message == "" {
				t.Fatal("permanent error without a message")
			}
		})
	}
	t.Cleanup(func() {
		// Refusals create nothing: one message, one conversation.
		if m, c := f.count(`SELECT count(*) FROM network.messages`), f.count(`SELECT count(*) FROM network.conversations`); m != 1 || c != 1 {
			t.Errorf("%d messages and %d conversations after refusals, want 1 and 1", m, c)
		}
	})
}

func TestDeliverRefusalThenSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	s, r := ph(70), ph(71)
	f.account(s)
	_, err := f.net.Deliver(ctx, text("otp:7", "", r, "code 123456"))
	if pe := new(network.PermanentError); !errors.As(err, &pe) || pe.Code != network.CodeNotRegistered {
		t.Fatalf("Deliver before the account exists: %v, want not_registered", err)
	}
	// The refused reference is free: once the account exists the retry delivers.
	f.account(r)
	d, err := f.net.Deliver(ctx, text("otp:7", "", r, "code 123456"))
	if err != nil || d.MessageID == 0 {
		t.Fatalf("Deliver after the account exists: %+v, %v", d, err)
	}
}

func TestInbox(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	me, a, b := ph(80), ph(81), ph(82)
	f.account(me)
	f.account(a)
	f.account(b)

	if _, err := f.net.Inbox(ctx, ph(89)); !errors.Is(err, network.ErrNotFound) {
		t.Fatalf("Inbox of unknown phone: err = %v, want ErrNotFound", err)
	}
	if _, err := f.net.Inbox(ctx, "me"); !errors.Is(err, phone.ErrInvalid) {
		t.Fatalf("Inbox of malformed phone: err = %v, want phone.ErrInvalid", err)
	}
	if got, err := f.net.Inbox(ctx, me); err != nil || len(got) != 0 {
		t.Fatalf("empty inbox = %v, %v", got, err)
	}

	sent := []network.Message{
		text("m1", a, me, "first"),
		text("m2", "", me, "Your code is 123456"),
		{Reference: "m3", FromPhone: b, ToPhone: me, Media: network.Media{Type: "document", Content: "https://files.example/r.pdf", FileName: "r.pdf", FileSize: 2048, FileType: "application/pdf"}},
		text("elsewhere", me, a, "not in my inbox"),
		{Reference: "m4", FromPhone: a, ToPhone: me, Media: network.Media{Type: "voice", Content: "https://files.example/v.ogg", FileName: "v.ogg", FileSize: 4096, FileType: "audio/ogg", Duration: 12}},
	}
	deliveries := map[string]network.Delivery{}
	for _, m := range sent {
		// The clock goes backwards: order is delivery order, not timestamps.
		f.clock.Advance(-time.Second)
		d, err := f.net.Deliver(ctx, m)
		if err != nil {
			t.Fatalf("Deliver %s: %v", m.Reference, err)
		}
		deliveries[m.Reference] = d
	}

	got, err := f.net.Inbox(ctx, "+1 (415) 555-0080")
	if err != nil {
		t.Fatalf("Inbox: %v", err)
	}
	want := []builtin.InboxMessage{
		{FromPhone: a, Media: network.Media{Type: "text", Content: "first"}, Reference: "m1"},
		{FromPhone: builtin.ServicePhone, Media: network.Media{Type: "text", Content: "Your code is 123456"}, Reference: "m2"},
		{FromPhone: b, Media: network.Media{Type: "document", Content: "https://files.example/r.pdf", FileName: "r.pdf", FileSize: 2048, FileType: "application/pdf"}, Reference: "m3"},
		{FromPhone: a, Media: network.Media{Type: "voice", Content: "https://files.example/v.ogg", FileName: "v.ogg", FileSize: 4096, FileType: "audio/ogg", Duration: 12}, Reference: "m4"},
	}
	if len(got) != len(want) {
		t.Fatalf("inbox has %d messages, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		d := deliveries[want[i].Reference]
		want[i].MessageID, want[i].ConversationID, want[i].CreatedAt = d.MessageID, d.ConversationID, d.DeliveredAt
		want[i].ToPhone, want[i].DeliveredAt = me, d.DeliveredAt
		if got[i] != want[i] {
			t.Errorf("inbox[%d] = %+v\n want %+v", i, got[i], want[i])
		}
		if got[i].Receipt() != network.ReceiptDelivered {
			t.Errorf("inbox[%d] receipt = %s, want delivered", i, got[i].Receipt())
		}
	}

	last, err := f.net.InboxLast(ctx, me, 2)
	if err != nil || len(last) != 2 || last[0] != got[2] || last[1] != got[3] {
		t.Fatalf("InboxLast(2) = %+v, %v; want the last two, newest last", last, err)
	}
}

// Lookups that arrive while the network's read is busy share the next read
// (one statement), and each gets what it would have got alone: the first
// read is held by a lock on the accounts until the others have queued.
func TestLookupsShareReads(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	sender := ph(1)
	f.account(sender)
	f.account(ph(2))
	f.account(ph(3), unverified)
	f.account(ph(4), receivingDisabled)
	f.account(ph(6))
	if err := f.net.Block(ctx, ph(6), sender); err != nil {
		t.Fatalf("Block: %v", err)
	}
	asks := [][2]string{
		{ph(2), sender}, {ph(3), sender}, {ph(4), ""}, {ph(6), sender}, {ph(6), ph(2)},
		{ph(6), ""}, {ph(7), sender}, {ph(2), sender}, {ph(6), ph(99)},
	}
	type answer struct {
		a   network.Account
		err error
	}
	alone := make([]answer, len(asks))
	for i, q := range asks {
		a, err := f.net.Lookup(ctx, q[0], q[1])
		alone[i] = answer{a, err}
	}

	var shared *builtin.Network
	got := make([]answer, len(asks))
	runs := dbtest.SharedRuns(t, f.db, "network.accounts", func(cfg batch.Config) func() error {
		shared = networktest.Builtin(t, builtin.Config{DB: f.db, Clock: f.clock, Batch: cfg})
		return func() error {
			_, err := shared.Lookup(ctx, ph(2), "")
			return err
		}
	}, func() {
		var wg sync.WaitGroup
		for i, q := range asks {
			wg.Go(func() {
				a, err := shared.Lookup(ctx, q[0], q[1])
				got[i] = answer{a, err}
			})
		}
		wg.Wait()
	}, len(asks))
	for i, q := range asks {
		g, w := got[i], alone[i]
		if errors.Is(w.err, network.ErrNotFound) != errors.Is(g.err, network.ErrNotFound) ||
			(w.err == nil) != (g.err == nil) || !reflect.DeepEqual(g.a, w.a) {
			t.Errorf("Lookup(%s, %q) shared = %+v, %v; alone = %+v, %v", q[0], q[1], g.a, g.err, w.a, w.err)
		}
	}
	if len(runs) != 2 || runs[0] != 1 || runs[1] != len(asks) {
		t.Fatalf("runs = %v, want [1 %d]: the queued lookups did not share a read", runs, len(asks))
	}
}

// harness drives the built-in network for the conformance test: Collect
// drains the outbox into a recorder.
type harness struct {
	net *builtin.Network
	rec networktest.Recorder
}

func (h *harness) Network() network.Network { return h.net }

func (h *harness) AddAccount(t *testing.T, p string) {
	t.Helper()
	spec := builtin.AccountSpec{Phone: p, Verified: true, PhoneVerified: true, ReceivingEnabled: true}
	if _, err := h.net.AddAccount(context.Background(), spec); err != nil {
		t.Fatalf("AddAccount %s: %v", p, err)
	}
}

func (h *harness) Read(t *testing.T, recipient, sender string) {
	t.Helper()
	if _, err := h.net.Read(context.Background(), recipient, sender); err != nil {
		t.Fatalf("Read(%s, %q): %v", recipient, sender, err)
	}
}

func (h *harness) Write(t *testing.T, from, to, text string) {
	t.Helper()
	if _, err := h.net.Send(context.Background(), from, to, text); err != nil {
		t.Fatalf("Send(%s, %s): %v", from, to, err)
	}
}

func (h *harness) Collect(t *testing.T) ([]network.Receipt, []network.Inbound) {
	t.Helper()
	// The checks write far fewer events than this; a Drain that never
	// empties the outbox (events not marked) fails instead of looping.
	for range 100 {
		n, err := h.net.Drain(context.Background(), &h.rec, 0)
		if err != nil {
			t.Fatalf("Drain: %v", err)
		}
		if n == 0 {
			return h.rec.Got()
		}
	}
	t.Fatal("the outbox is not empty after 100 Drains")
	return nil, nil
}

func TestConformance(t *testing.T) {
	t.Parallel()
	networktest.Run(t, func(t *testing.T) networktest.Harness {
		d, _ := dbtest.Migrated(t)
		return &harness{net: networktest.Builtin(t, builtin.Config{DB: d})}
	})
}
