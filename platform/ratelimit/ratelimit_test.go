package ratelimit_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/ratelimit"
)

// fakeNow is a settable time source.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) Now() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.t }
func (f *fakeNow) Add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func TestLocalBucket(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	l := ratelimit.NewLocal(ratelimit.LocalConfig{Now: clk.Now})
	ctx := context.Background()
	lim := ratelimit.Limit{Rate: 2, Burst: 4}

	for i := range 4 {
		d, err := l.Allow(ctx, "k", lim)
		if err != nil || !d.Allowed {
			t.Fatalf("request %d = %+v, %v; want allowed", i, d, err)
		}
		if d.Remaining != 3-i {
			t.Errorf("request %d remaining = %d, want %d", i, d.Remaining, 3-i)
		}
	}
	d, _ := l.Allow(ctx, "k", lim)
	if d.Allowed || d.RetryAfter != 500*time.Millisecond || d.Remaining != 0 || d.Reset != 2*time.Second {
		t.Fatalf("5th request = %+v; want refused, retry after 500ms, reset 2s", d)
	}
	// Another key has its own bucket.
	if d, _ := l.Allow(ctx, "other", lim); !d.Allowed {
		t.Fatalf("other key refused: %+v", d)
	}
	clk.Add(500 * time.Millisecond)
	if d, _ := l.Allow(ctx, "k", lim); !d.Allowed {
		t.Fatalf("after the retry delay: %+v; want allowed", d)
	}
	if d, _ := l.Allow(ctx, "k", lim); d.Allowed {
		t.Fatalf("second request after one token: %+v; want refused", d)
	}
}

func TestLocalLimitChangeAppliesAtOnce(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	l := ratelimit.NewLocal(ratelimit.LocalConfig{Now: clk.Now})
	ctx := context.Background()
	for range 2 {
		if _, err := l.Allow(ctx, "k", ratelimit.Limit{Rate: 1, Burst: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := l.Allow(ctx, "k", ratelimit.Limit{Rate: 1, Burst: 2}); d.Allowed {
		t.Fatal("third request within burst 2 allowed")
	}
	clk.Add(100 * time.Millisecond)
	// 0.1 token accrued at the old rate; from now on 100 tokens/s complete the
	// token in 9 ms instead of 900.
	d, _ := l.Allow(ctx, "k", ratelimit.Limit{Rate: 100, Burst: 2})
	if d.Allowed || d.RetryAfter != 9*time.Millisecond {
		t.Fatalf("after raising the rate: %+v; want refused with retry after 9ms", d)
	}
	clk.Add(9 * time.Millisecond)
	if d, _ := l.Allow(ctx, "k", ratelimit.Limit{Rate: 100, Burst: 2}); !d.Allowed {
		t.Fatalf("9ms after raising the rate: %+v; want allowed", d)
	}
}

func TestLocalInvalidLimitAllows(t *testing.T) {
	t.Parallel()
	l := ratelimit.NewLocal(ratelimit.LocalConfig{})
	for _, lim := range []ratelimit.Limit{{}, {Rate: 0, Burst: 5}, {Rate: 5, Burst: 0}} {
		if d, _ := l.Allow(context.Background(), "k", lim); !d.Allowed {
			t.Errorf("limit %+v refused a request", lim)
		}
	}
	if l.Len() != 0 {
		t.Errorf("invalid limits kept %d buckets", l.Len())
	}
}

func TestLocalConcurrentExact(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	l := ratelimit.NewLocal(ratelimit.LocalConfig{Now: clk.Now})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 200 {
		wg.Go(func() {
			if d, _ := l.Allow(context.Background(), "k", ratelimit.Limit{Rate: 1, Burst: 50}); d.Allowed {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if allowed.Load() != 50 {
		t.Fatalf("allowed %d of 200 concurrent requests with burst 50 and a stopped clock, want 50", allowed.Load())
	}
}

func TestLocalSweepForgetsOnlyFullIdleBuckets(t *testing.T) {
	t.Parallel()
	clk := &fakeNow{t: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)}
	l := ratelimit.NewLocal(ratelimit.LocalConfig{Now: clk.Now, IdleAfter: time.Minute})
	ctx := context.Background()
	// A slow bucket (1 token an hour) emptied: still not full after the idle time.
	slow := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1}
	for i := range 64 {
		if _, err := l.Allow(ctx, "fast-"+string(rune('a'+i%26))+string(rune('a'+i/26)), ratelimit.Limit{Rate: 10, Burst: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Allow(ctx, "slow", slow); err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Minute)
	// Touch every shard so each sweeps.
	for i := range 64 {
		if _, err := l.Allow(ctx, "fresh-"+string(rune('a'+i%26))+string(rune('a'+i/26)), ratelimit.Limit{Rate: 10, Burst: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if d, _ := l.Allow(ctx, "slow", slow); d.Allowed {
		t.Fatal("an emptied slow bucket was forgotten and came back full")
	}
	if n := l.Len(); n > 64+1+64 || n < 65 {
		t.Fatalf("buckets in memory = %d", n)
	}
}

func TestDecisionHeaders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    ratelimit.Decision
		want map[string]string
	}{
		{"partial", ratelimit.Decision{Allowed: true, Limit: ratelimit.Limit{Rate: 50, Burst: 100}, Remaining: 57, Reset: 860 * time.Millisecond},
			map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "57", "RateLimit-Reset": "1", "RateLimit-Policy": "100;w=2"}},
		{"full", ratelimit.Decision{Allowed: true, Limit: ratelimit.Limit{Rate: 1000, Burst: 1}, Remaining: 1},
			map[string]string{"RateLimit-Limit": "1", "RateLimit-Remaining": "1", "RateLimit-Reset": "0", "RateLimit-Policy": "1;w=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			tt.d.SetHeaders(h)
			for k, v := range tt.want {
				if got := h.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}
