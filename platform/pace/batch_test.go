package pace

import (
	"context"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/dbtest"
)

// One statement deciding several events of one key gives each its own
// slot, exactly as one statement each would.
func TestBatchOfOneKey(t *testing.T) {
	t.Parallel()
	d, _ := dbtest.Migrated(t)
	s, err := New(Config{Pool: d.Pool})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lim := Limit{Rate: 1, Burst: 3}

	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		items := make([]allowItem, 0, 6)
		for range 5 {
			items = append(items, allowItem{key: "key:batch", l: lim})
		}
		items = append(items, allowItem{key: "key:other", l: lim})
		got, err := s.allowMany(ctx, struct{}{}, items)
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{2, 1, 0} {
			if !got[i].Allowed || got[i].Remaining != want {
				t.Fatalf("event %d: %+v, want allowed with %d remaining", i, got[i], want)
			}
		}
		for i := 3; i < 5; i++ {
			if got[i].Allowed || got[i].RetryAfter < 900*time.Millisecond || got[i].RetryAfter > time.Second {
				t.Fatalf("event %d: %+v, want refused for about 1s", i, got[i])
			}
		}
		if !got[5].Allowed || got[5].Remaining != 2 {
			t.Fatalf("another key's event: %+v, want allowed with 2 remaining", got[5])
		}
	})

	t.Run("take", func(t *testing.T) {
		t.Parallel()
		items := []takeItem{
			{key: "sender:batch", ticket: "job:1", l: lim},
			{key: "sender:batch", ticket: "job:2", l: lim},
			{key: "sender:batch", ticket: "job:3", l: lim},
			{key: "sender:batch", ticket: "job:4", l: lim},
			{key: "sender:batch", ticket: "job:4", l: lim}, // a rescued job beside its original
			{key: "sender:batch", ticket: "", l: lim},
		}
		got, err := s.takeMany(ctx, struct{}{}, items)
		if err != nil {
			t.Fatal(err)
		}
		want := []time.Duration{0, 0, 0, time.Second, time.Second, 2 * time.Second}
		for i := range want {
			if got[i] > want[i] || got[i] < want[i]-200*time.Millisecond {
				t.Fatalf("slots %v, want about %v", got, want)
			}
		}
		// Job 4's slot is kept under its ticket: coming back takes nothing.
		again, err := s.takeMany(ctx, struct{}{}, []takeItem{{key: "sender:batch", ticket: "job:4", l: lim}})
		if err != nil {
			t.Fatal(err)
		}
		if again[0] > time.Second || again[0] < 500*time.Millisecond {
			t.Fatalf("job 4 came back to a slot due in %v, want its own (under 1s)", again[0])
		}
		if _, tickets, err := s.Len(ctx); err != nil || tickets != 1 {
			t.Fatalf("%d tickets kept, %v; want job 4's only", tickets, err)
		}
	})
}
