package network_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/network"
)

func TestReasonCode(t *testing.T) {
	t.Parallel()
	ok := network.Account{Verified: true, PhoneVerified: true, ReceivingEnabled: true}
	tests := []struct {
		name string
		edit func(*network.Account)
		want string
	}{
		{"reachable", func(*network.Account) {}, network.CodeOK},
		{"owner unverified still receives", func(a *network.Account) { a.Verified = false }, network.CodeOK},
		{"phone unverified", func(a *network.Account) { a.PhoneVerified = false }, network.CodePhoneUnverified},
		{"receiving disabled", func(a *network.Account) { a.ReceivingEnabled = false }, network.CodeReceivingDisabled},
		{"blocks sender", func(a *network.Account) { a.BlocksSender = true }, network.CodeBlockedSender},
		{"phone unverified first", func(a *network.Account) {
			a.PhoneVerified, a.ReceivingEnabled, a.BlocksSender = false, false, true
		}, network.CodePhoneUnverified},
		{"receiving disabled before block", func(a *network.Account) {
			a.ReceivingEnabled, a.BlocksSender = false, true
		}, network.CodeReceivingDisabled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := ok
			tt.edit(&a)
			if got := a.ReasonCode(); got != tt.want {
				t.Fatalf("ReasonCode = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsPermanent(t *testing.T) {
	t.Parallel()
	pe := &network.PermanentError{Code: network.CodeNotRegistered, Message: "no account"}
	if !network.IsPermanent(fmt.Errorf("deliver: %w", pe)) {
		t.Fatal("a wrapped PermanentError is not permanent")
	}
	if network.IsPermanent(errors.New("connection reset")) || network.IsPermanent(nil) {
		t.Fatal("a plain error is permanent")
	}
	if got := pe.Error(); got != "network: not_registered: no account" {
		t.Fatalf("Error() = %q", got)
	}
}

// ctxKey marks the context DeliverAll is given, to see it reach the network.
type ctxKey struct{}

// fakeNetwork delivers message i (reference "i") as message id i, refusing
// every fifth, and records how many Deliver calls run at once. Each call waits
// (up to a second) until gate calls run at once, so that a DeliverAll running
// fewer calls at once than it should shows as a lower maximum.
type fakeNetwork struct {
	gate                     int64
	open                     chan struct{}
	once                     sync.Once
	calls, running, maxCalls atomic.Int64
	badContext               atomic.Bool
}

func newFakeNetwork(gate int) *fakeNetwork {
	return &fakeNetwork{gate: int64(gate), open: make(chan struct{})}
}

func (f *fakeNetwork) Lookup(context.Context, string, string) (network.Account, error) {
	return network.Account{}, network.ErrNotFound
}

func (f *fakeNetwork) SubmitTemplate(context.Context, network.Template) error { return nil }

func (f *fakeNetwork) Verified(context.Context, string) (bool, error) {
	return false, network.ErrNotFound
}

func (f *fakeNetwork) Deliver(ctx context.Context, msg network.Message) (network.Delivery, error) {
	f.calls.Add(1)
	if ctx.Value(ctxKey{}) == nil {
		f.badContext.Store(true)
	}
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for { // maxCalls = max(maxCalls, n)
		m := f.maxCalls.Load()
		if n <= m || f.maxCalls.CompareAndSwap(m, n) {
			break
		}
	}
	if n >= f.gate {
		f.once.Do(func() { close(f.open) })
	}
	select {
	case <-f.open:
	case <-time.After(time.Second):
	}
	// Time itself is what is tested: that no call beyond the limit runs
	// alongside these shows only over some time, the time a call beyond it
	// is given to overlap.
	time.Sleep(time.Millisecond)
	i, err := strconv.Atoi(msg.Reference)
	if err != nil {
		return network.Delivery{}, err
	}
	if i%5 == 4 {
		return network.Delivery{}, &network.PermanentError{Code: network.CodeNotRegistered, Message: msg.Reference}
	}
	return network.Delivery{MessageID: int64(i)}, nil
}

// fakeBatchNetwork is a fakeNetwork that is also a BatchDeliverer.
type fakeBatchNetwork struct {
	*fakeNetwork
	batches atomic.Int64
	got     []network.Message
	results []network.Result
}

func (f *fakeBatchNetwork) DeliverBatch(ctx context.Context, msgs []network.Message) []network.Result {
	f.batches.Add(1)
	if ctx.Value(ctxKey{}) == nil {
		f.badContext.Store(true)
	}
	f.got = msgs
	f.results = make([]network.Result, len(msgs))
	for i := range f.results {
		f.results[i].Delivery.MessageID = int64(1000 + i)
	}
	return f.results
}

func messages(n int) []network.Message {
	msgs := make([]network.Message, n)
	for i := range msgs {
		msgs[i] = network.Message{Reference: strconv.Itoa(i), ToPhone: "+14155550100", Media: network.Media{Type: "text"}}
	}
	return msgs
}

func TestDeliverAll(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), ctxKey{}, true)
	tests := []struct {
		name        string
		parallel, n int
		wantMax     int64 // calls at once
	}{
		{"parallel", 4, 40, 4},
		{"one at a time", 1, 10, 1},
		{"zero is one", 0, 6, 1},
		{"negative is one", -3, 6, 1},
		{"more workers than messages", 8, 3, 3},
		{"no messages", 4, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeNetwork(int(tt.wantMax))
			got := network.DeliverAll(ctx, f, messages(tt.n), tt.parallel)
			if len(got) != tt.n {
				t.Fatalf("%d results for %d messages", len(got), tt.n)
			}
			for i, r := range got {
				if i%5 == 4 {
					var pe *network.PermanentError
					if !errors.As(r.Err, &pe) || pe.Message != strconv.Itoa(i) || r.Delivery != (network.Delivery{}) {
						t.Errorf("result %d = %+v, %v; want message %d's refusal", i, r.Delivery, r.Err, i)
					}
				} else if r.Err != nil || r.Delivery.MessageID != int64(i) {
					t.Errorf("result %d = %+v, %v; want message %d's delivery", i, r.Delivery, r.Err, i)
				}
			}
			if c := f.calls.Load(); c != int64(tt.n) {
				t.Errorf("%d Deliver calls for %d messages", c, tt.n)
			}
			if m := f.maxCalls.Load(); m != tt.wantMax {
				t.Errorf("at most %d Deliver calls at once, want %d", m, tt.wantMax)
			}
			if f.badContext.Load() {
				t.Error("Deliver did not get DeliverAll's context")
			}
		})
	}
}

func TestDeliverAllBatch(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), ctxKey{}, true)
	msgs := messages(7)

	b := &fakeBatchNetwork{fakeNetwork: newFakeNetwork(1)}
	got := network.DeliverAll(ctx, b, msgs, 4)
	if n := b.batches.Load(); n != 1 || b.calls.Load() != 0 {
		t.Fatalf("%d DeliverBatch and %d Deliver calls, want 1 and 0", n, b.calls.Load())
	}
	if !slices.Equal(b.got, msgs) || !slices.Equal(got, b.results) || b.badContext.Load() {
		t.Fatalf("DeliverBatch got %v and returned %v, DeliverAll returned %v; want the messages and its results",
			b.got, b.results, got)
	}

	// A wrapper embedding the network (overriding nothing here) hides
	// DeliverBatch: each message goes through Deliver.
	b = &fakeBatchNetwork{fakeNetwork: newFakeNetwork(2)}
	got = network.DeliverAll(ctx, struct{ network.Network }{b}, msgs, 2)
	if n := b.batches.Load(); n != 0 || b.calls.Load() != int64(len(msgs)) {
		t.Fatalf("%d DeliverBatch and %d Deliver calls, want 0 and %d", n, b.calls.Load(), len(msgs))
	}
	if len(got) != len(msgs) || got[0].Delivery.MessageID != 0 || got[6].Delivery.MessageID != 6 || got[4].Err == nil {
		t.Fatalf("results = %+v", got)
	}
}
