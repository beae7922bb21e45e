package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/app"
	"github.com/bizmsg/platform/platform/dbtest"
	"github.com/bizmsg/platform/platform/network"
	"github.com/bizmsg/platform/platform/network/builtin"
	"github.com/bizmsg/platform/platform/network/networktest"
	"github.com/bizmsg/platform/platform/queue"
)

// Delivery order across worker processes (docs/api.md, §Delivery order).

// faultyNetwork fails a random share of deliveries with a transient error,
// from a seeded source: before the network takes the message (a connection
// refused), or after it took it (the answer lost on the way back: the
// network has the message, the worker sees an error and its job retries).
type faultyNetwork struct {
	network.Network
	// before and after are the shares of calls that fail before and after
	// the network takes the message.
	before, after float64

	mu  sync.Mutex
	rng *rand.Rand

	calls, failedBefore, failedAfter atomic.Int64
}

func (f *faultyNetwork) roll() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.Float64()
}

func (f *faultyNetwork) Deliver(ctx context.Context, m network.Message) (network.Delivery, error) {
	f.calls.Add(1)
	roll := f.roll()
	if roll < f.before {
		f.failedBefore.Add(1)
		return network.Delivery{}, errors.New("network: connection refused (injected)")
	}
	d, err := f.Network.Deliver(ctx, m)
	if err == nil && roll < f.before+f.after {
		f.failedAfter.Add(1)
		return network.Delivery{}, errors.New("network: the answer was lost after the network took the message (injected)")
	}
	return d, err
}

// 500 messages from one sender number to one recipient, accepted through
// the API (four clients at once) while three workers, each an app with its
// own pool and River client as a worker process has, deliver them through a
// network that fails a tenth of the calls before taking the message and a
// twentieth after taking it (the answer lost: the network has the message,
// the job retries): the recipient gets every message exactly once, in
// acceptance (id) order, and each message records the network's delivery.
func TestDeliveryOrderAcrossWorkers(t *testing.T) {
	t.Parallel()
	e := startMsg(t, Options{}) // API only: the three workers deliver
	ctx := context.Background()
	org := e.Register(t)
	sid := e.activeSender(org, phoneN(1))
	e.recipient(phoneN(10))
	// The throttle is not what this test is about: 500 messages at the
	// default 20/s would take 25 s whatever the order.
	if _, err := e.App.DB.Pool.Exec(ctx,
		`UPDATE central.organizations SET sender_rate = 10000, sender_burst = 10000 WHERE id = $1`, org.ID); err != nil {
		t.Fatal(err)
	}

	seed := rand.Uint64()
	if v := os.Getenv("ORDER_FAULT_SEED"); v != "" { // to replay a run's faults
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("ORDER_FAULT_SEED: %v", err)
		}
	}
	t.Logf("fault seed %d (ORDER_FAULT_SEED replays it)", seed)
	jobs := queue.Config{DeliveryRetryBase: 20 * time.Millisecond, DeliveryRetryMax: 100 * time.Millisecond}
	nets := make([]*faultyNetwork, 3)
	for i := range nets {
		nets[i] = &faultyNetwork{
			Network: networktest.Builtin(t, builtin.Config{DB: dbtest.Open(t, e.DatabaseURL), Clock: e.Clock}),
			before:  0.10, after: 0.05,
			rng: rand.New(rand.NewPCG(seed, uint64(i))),
		}
		StartWorker(t, e.DatabaseURL, nil, app.Options{Clock: e.Clock, Network: nets[i], Jobs: jobs})
	}

	const n = 500
	began := time.Now()
	ids := make([]int64, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n && !t.Failed(); i = int(next.Add(1)) - 1 {
				r, err := e.Env.Send(Request{Method: http.MethodPost, Path: messagesPath, Header: org.Key(),
					Body: text(sid, phoneN(10), fmt.Sprintf("message %d", i))})
				if err != nil {
					t.Error(err)
					return
				}
				if r.Status != http.StatusAccepted {
					t.Errorf("send %d = %d %s", i, r.Status, r.Body)
					return
				}
				var body struct {
					Data message `json:"data"`
				}
				if err := json.Unmarshal(r.Body, &body); err != nil {
					t.Error(err)
					return
				}
				ids[i] = body.Data.ID
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	slices.Sort(ids)
	acceptedIn := time.Since(began)

	e.waitCounts(org, 4*time.Minute, fmt.Sprintf("all %d messages delivered", n),
		func(c map[string]int) bool { return c["delivered"] == n })
	took := time.Since(began)
	var calls, before, after int64
	for _, f := range nets {
		calls, before, after = calls+f.calls.Load(), before+f.failedBefore.Load(), after+f.failedAfter.Load()
	}
	t.Logf("%d messages accepted in %s and delivered in %s by 3 workers: %d network calls, %d failed before the network took the message, %d after",
		n, acceptedIn.Round(time.Millisecond), took.Round(time.Millisecond), calls, before, after)
	if before == 0 || after == 0 {
		t.Fatalf("faults injected: %d before and %d after the network took the message; the test needs both", before, after)
	}

	// What the recipient received, in the order the network took it.
	inbox, err := e.net.Inbox(ctx, phoneN(10))
	if err != nil {
		t.Fatal(err)
	}
	got := make([]int64, len(inbox))
	times := map[int64]int{}
	for i, m := range inbox {
		ref, ok := strings.CutPrefix(m.Reference, org.Tenant.Schema+":")
		if !ok {
			t.Fatalf("the recipient got %+v, not a message of the organization", m)
		}
		if got[i], err = strconv.ParseInt(ref, 10, 64); err != nil {
			t.Fatalf("reference %q: %v", m.Reference, err)
		}
		times[got[i]]++
	}
	for _, id := range ids {
		if times[id] != 1 {
			t.Errorf("message %d reached the recipient %d times, want once", id, times[id])
		}
	}
	if len(got) != n {
		t.Errorf("the recipient got %d messages for %d accepted", len(got), n)
	}
	for i := 1; i < len(got); i++ {
		if got[i] < got[i-1] {
			t.Fatalf("not in acceptance order: the recipient got message %d (at position %d) before message %d (at position %d)",
				got[i-1], i, got[i], i+1)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// Each message points at its network message.
	e.requireNetworkIDs(org)
	// Every worker delivered some: River recorded which client ran each job.
	workers := e.deliveryWorkers()
	if workers < 3 {
		t.Fatalf("%d of 3 workers ran deliveries; the test needs them to share the conversation", workers)
	}
}
