// Package networktest is the conformance test of the messaging network: what
// the platform relies on of every network.Network adapter, its deliveries,
// receipts and inbound messages. Each adapter's tests call Run with a Harness
// that drives it as the people holding its accounts would (read, write) and
// collects what it reports: the built-in network by draining its outbox, the
// HTTP adapter by receiving the signed events of a fake external network.
package networktest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
)

// Harness drives one network under test, which starts with no accounts and
// no messages.
type Harness interface {
	// Network returns the network under test, as the platform uses it.
	Network() network.Network
	// AddAccount creates the account holding phone (E.164), verified, with
	// its phone verified and receiving.
	AddAccount(t *testing.T, phone string)
	// Read makes the account of recipient read the messages it received:
	// only those from the account of sender when sender is not empty.
	Read(t *testing.T, recipient, sender string)
	// Write makes the account of from write the text message text to the
	// account of to.
	Write(t *testing.T, from, to, text string)
	// Collect returns every receipt and inbound message the network has
	// reported since the harness began, in the order reported: a second
	// call returns what the first did and what came since.
	Collect(t *testing.T) ([]network.Receipt, []network.Inbound)
	// Verdicts returns every template verdict the network has reported
	// since the harness began, in the order reported.
	Verdicts(t *testing.T) []network.TemplateVerdict
}

// Recorder is a network.Sink that records what it is given, in order, and
// never fails. It is safe for concurrent use; its zero value is ready.
type Recorder struct {
	mu       sync.Mutex
	receipts []network.Receipt
	inbound  []network.Inbound
	verdicts []network.TemplateVerdict
}

var _ network.Sink = (*Recorder)(nil)

// Receipt records r.
func (r *Recorder) Receipt(_ context.Context, rc network.Receipt) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.receipts = append(r.receipts, rc)
	return nil
}

// Inbound records m.
func (r *Recorder) Inbound(_ context.Context, m network.Inbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inbound = append(r.inbound, m)
	return nil
}

// TemplateReviewed records v.
func (r *Recorder) TemplateReviewed(_ context.Context, v network.TemplateVerdict) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.verdicts = append(r.verdicts, v)
	return nil
}

// Verdicts returns a copy of the template verdicts recorded so far.
func (r *Recorder) Verdicts() []network.TemplateVerdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.verdicts)
}

// Got returns copies of what was recorded so far.
func (r *Recorder) Got() ([]network.Receipt, []network.Inbound) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.receipts), slices.Clone(r.inbound)
}

// Phones of the checks' accounts.
const (
	alice  = "+14155550101"
	bob    = "+14155550102"
	carol  = "+14155550103"
	nobody = "+14155550199"
)

// Run runs the conformance checks, each a parallel subtest on a harness of
// its own from newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	t.Helper()
	checks := []struct {
		name  string
		check func(t *testing.T, h Harness)
	}{
		{"lookup", checkLookup},
		{"deliver once per reference", checkDeliverOnce},
		{"read receipts once per message", checkReadReceipts},
		{"inbound messages in the pair's conversation", checkInbound},
		{"template review", checkTemplateReview},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			c.check(t, h)
		})
	}
}

// text is a text message between two phones.
func text(ref, from, to, content string) network.Message {
	return network.Message{Reference: ref, FromPhone: from, ToPhone: to, Media: network.Media{Type: "text", Content: content}}
}

// deliver delivers msg and fails the test if the network refuses it.
func deliver(t *testing.T, h Harness, msg network.Message) network.Delivery {
	t.Helper()
	d, err := h.Network().Deliver(context.Background(), msg)
	if err != nil {
		t.Fatalf("Deliver %s: %v", msg.Reference, err)
	}
	if d.MessageID == 0 || d.ConversationID == 0 || d.DeliveredAt.IsZero() {
		t.Fatalf("Deliver %s = %+v, want the network's ids and time", msg.Reference, d)
	}
	return d
}

func checkLookup(t *testing.T, h Harness) {
	h.AddAccount(t, alice)
	ctx := context.Background()
	a, err := h.Network().Lookup(ctx, alice, "")
	if err != nil || a.Phone != alice || a.ID == 0 || a.ReasonCode() != network.CodeOK {
		t.Fatalf("Lookup(%s) = %+v, %v; want the account, able to receive", alice, a, err)
	}
	if a, err := h.Network().Lookup(ctx, nobody, ""); !errors.Is(err, network.ErrNotFound) {
		t.Fatalf("Lookup(%s) = %+v, %v; want ErrNotFound", nobody, a, err)
	}
}

func checkDeliverOnce(t *testing.T, h Harness) {
	h.AddAccount(t, alice)
	h.AddAccount(t, bob)
	first := deliver(t, h, text("tenant_1:1", alice, bob, "Your order shipped"))
	again := deliver(t, h, text("tenant_1:1", alice, bob, "Your order shipped"))
	if again != first {
		t.Fatalf("Deliver again = %+v, want the first delivery %+v", again, first)
	}
	other := deliver(t, h, text("tenant_1:2", alice, bob, "It arrives Monday"))
	if other.MessageID == first.MessageID || other.ConversationID != first.ConversationID {
		t.Fatalf("second message = %+v, want another message in conversation %d", other, first.ConversationID)
	}
	receipts, _ := h.Collect(t)
	checkReceipts(t, receipts, map[string]network.Delivery{"tenant_1:1": first, "tenant_1:2": other})
}

// checkReceipts checks what every network owes its receipts: each names a
// message delivered (a reference of deliveries), with a known status and a
// time in UTC, at most once per status; and each delivered message is
// delivered once, either in its Delivery (Delivered) or by a receipt, not
// both.
func checkReceipts(t *testing.T, receipts []network.Receipt, deliveries map[string]network.Delivery) {
	t.Helper()
	seen := map[[2]string]int{}
	for _, r := range receipts {
		if _, ok := deliveries[r.Reference]; !ok {
			t.Errorf("receipt %+v names no message delivered", r)
		}
		if r.Status != network.ReceiptDelivered && r.Status != network.ReceiptRead && r.Status != network.ReceiptFailed {
			t.Errorf("receipt %+v has an unknown status", r)
		}
		if r.At.IsZero() || r.At.Location() != time.UTC {
			t.Errorf("receipt %+v: At is not a time in UTC", r)
		}
		seen[[2]string{r.Reference, r.Status}]++
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("%d receipts %s for %s, want at most one", n, k[1], k[0])
		}
	}
	for ref, d := range deliveries {
		receipted := seen[[2]string{ref, network.ReceiptDelivered}] > 0
		switch {
		case d.Delivered && receipted:
			t.Errorf("%s: Deliver answered Delivered and a delivered receipt came too", ref)
		case !d.Delivered && !receipted:
			t.Errorf("%s: neither Deliver (Delivered) nor a receipt says it was delivered", ref)
		}
	}
}

// readRefs returns the references of the read receipts, sorted.
func readRefs(receipts []network.Receipt) []string {
	var refs []string
	for _, r := range receipts {
		if r.Status == network.ReceiptRead {
			refs = append(refs, r.Reference)
		}
	}
	slices.Sort(refs)
	return refs
}

func checkReadReceipts(t *testing.T, h Harness) {
	for _, p := range []string{alice, bob, carol} {
		h.AddAccount(t, p)
	}
	deliveries := map[string]network.Delivery{}
	for _, m := range []network.Message{
		text("tenant_1:1", alice, bob, "one"),
		text("tenant_1:2", alice, bob, "two"),
		text("tenant_2:1", carol, bob, "three"),
		text("tenant_1:3", alice, carol, "not bob's"),
	} {
		deliveries[m.Reference] = deliver(t, h, m)
	}

	// Reading alice's messages reads those only; reading them again
	// reports nothing more.
	h.Read(t, bob, alice)
	receipts, _ := h.Collect(t)
	if got, want := readRefs(receipts), []string{"tenant_1:1", "tenant_1:2"}; !slices.Equal(got, want) {
		t.Fatalf("after bob read alice's messages: read receipts for %v, want %v", got, want)
	}
	h.Read(t, bob, alice)
	// Reading everything reads the rest of bob's messages, not carol's.
	h.Read(t, bob, "")
	receipts, inbound := h.Collect(t)
	if got, want := readRefs(receipts), []string{"tenant_1:1", "tenant_1:2", "tenant_2:1"}; !slices.Equal(got, want) {
		t.Fatalf("after bob read everything: read receipts for %v, want one for each of %v", got, want)
	}
	if len(inbound) != 0 {
		t.Errorf("reading reported inbound messages %+v", inbound)
	}
	checkReceipts(t, receipts, deliveries)
	// Collecting again reports nothing twice.
	if again, _ := h.Collect(t); !slices.Equal(again, receipts) {
		t.Fatalf("collected again: %+v\nfirst: %+v", again, receipts)
	}
}

func checkInbound(t *testing.T, h Harness) {
	for _, p := range []string{alice, bob, carol} {
		h.AddAccount(t, p)
	}
	d := deliver(t, h, text("tenant_1:1", alice, bob, "Your order shipped"))

	// bob answers alice twice, carol writes first.
	h.Write(t, bob, alice, "Thanks!")
	h.Write(t, bob, alice, "When does it arrive?")
	h.Write(t, carol, alice, "Hello?")
	receipts, inbound := h.Collect(t)
	if len(inbound) != 3 {
		t.Fatalf("inbound = %+v, want the 3 messages written", inbound)
	}
	want := []struct{ from, content string }{{bob, "Thanks!"}, {bob, "When does it arrive?"}, {carol, "Hello?"}}
	ids := map[string]bool{}
	for i, w := range want {
		m := inbound[i]
		if m.FromPhone != w.from || m.ToPhone != alice || m.Type != "text" || m.Content != w.content ||
			m.FileName != "" || m.FileType != "" || m.FileSize != 0 || m.Duration != 0 {
			t.Errorf("inbound[%d] = %+v, want %q from %s to %s", i, m, w.content, w.from, alice)
		}
		if m.ID == "" || ids[m.ID] {
			t.Errorf("inbound[%d] id %q is empty or not unique", i, m.ID)
		}
		ids[m.ID] = true
		if m.At.IsZero() || m.At.Location() != time.UTC {
			t.Errorf("inbound[%d] At = %v, want a time in UTC", i, m.At)
		}
	}
	// The pair's one conversation, whoever wrote first.
	if inbound[0].ConversationID != d.ConversationID || inbound[1].ConversationID != d.ConversationID {
		t.Errorf("bob's answers in conversations %d and %d, want %d (alice's delivery to bob)",
			inbound[0].ConversationID, inbound[1].ConversationID, d.ConversationID)
	}
	reply := deliver(t, h, text("tenant_1:2", alice, carol, "Hi Carol"))
	if c := inbound[2].ConversationID; c == 0 || c == d.ConversationID || c != reply.ConversationID {
		t.Errorf("carol's message in conversation %d; alice's reply in %d; want one new conversation (not %d)",
			c, reply.ConversationID, d.ConversationID)
	}
	checkReceipts(t, receipts, map[string]network.Delivery{"tenant_1:1": d})
	// Collecting again reports nothing twice, and writing is no receipt.
	receipts, again := h.Collect(t)
	if !slices.Equal(again, inbound) {
		t.Fatalf("collected again: %+v\nfirst: %+v", again, inbound)
	}
	checkReceipts(t, receipts, map[string]network.Delivery{"tenant_1:1": d, "tenant_1:2": reply})
}

// checkTemplateReview submits a template every network approves and one
// whose body is nothing but a variable, which every network rejects with a
// reason, and waits for both verdicts. Submitting a reference again is not
// an error.
func checkTemplateReview(t *testing.T, h Harness) {
	ctx := context.Background()
	good := network.Template{Reference: "tenant_1:template:1", Name: "welcome", Language: "en", Category: "utility",
		Body: "Hello {{1}}, welcome to our store.", Examples: map[string]string{"1": "Ana"}}
	bad := network.Template{Reference: "tenant_1:template:2", Name: "code", Language: "en", Category: "authentication",
		Body: "{{1}}", Examples: map[string]string{"1": "123456"}}
	for _, tpl := range []network.Template{good, bad, good} {
		if err := h.Network().SubmitTemplate(ctx, tpl); err != nil {
			t.Fatalf("SubmitTemplate %s: %v", tpl.Reference, err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		got := map[string]network.TemplateVerdict{}
		for _, v := range h.Verdicts(t) {
			got[v.Reference] = v
		}
		g, okGood := got[good.Reference]
		b, okBad := got[bad.Reference]
		if okGood && okBad {
			if g.Status != network.TemplateApproved || g.At.IsZero() {
				t.Errorf("verdict on %q = %+v, want approved with a time", good.Body, g)
			}
			if b.Status != network.TemplateRejected || b.Reason == "" {
				t.Errorf("verdict on %q = %+v, want rejected with a reason", bad.Body, b)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("verdicts after 10 s: %v", got)
		}
		<-tick.C
	}
}

// Builtin returns the built-in network cfg configures (cfg.DB's network
// schema migrated), failing the test when cfg is refused.
func Builtin(t testing.TB, cfg builtin.Config) *builtin.Network {
	t.Helper()
	n, err := builtin.New(cfg)
	if err != nil {
		t.Fatalf("networktest: %v", err)
	}
	return n
}
