package campaignrelease

import (
	"slices"
	"testing"
	"time"
)

// TestRoom: the room is min(rate·1 s − in flight, limit − ceil(limit·
// reserve/100) − used), zero with its reason for an inactive sender, one
// at its reserve, and one whose second of throughput is in flight.
func TestRoom(t *testing.T) {
	for _, c := range []struct {
		name            string
		x               Sender
		reserve         int
		room, allowance int
		why             string
	}{
		{"fresh", Sender{Status: "active", Rate: 20, Limit: 1000}, 10, 20, 900, ""},
		{"in flight", Sender{Status: "active", Rate: 20, Limit: 1000, InFlight: 15}, 10, 5, 900, ""},
		{"second full", Sender{Status: "active", Rate: 20, Limit: 1000, InFlight: 20}, 10, 0, 900, WhyInFlight},
		{"allowance binds", Sender{Status: "active", Rate: 20, Limit: 20, Used: 12}, 25, 3, 3, ""},
		{"at the reserve", Sender{Status: "active", Rate: 20, Limit: 20, Used: 15}, 25, 0, 0, WhyReserve},
		{"reserve rounds up", Sender{Status: "active", Rate: 20, Limit: 10}, 1, 9, 9, ""},
		{"whole limit reserved", Sender{Status: "active", Rate: 20, Limit: 10}, 100, 0, 0, WhyReserve},
		{"slow rate still one", Sender{Status: "active", Rate: 0.5, Limit: 10}, 0, 1, 10, ""},
		{"inactive", Sender{Status: "suspended", Rate: 20, Limit: 1000}, 10, 0, 900, WhyInactive},
	} {
		got := room(c.x, c.reserve, time.Second)
		if got.Room != c.room || got.Allowance != c.allowance || got.Why != c.why {
			t.Errorf("%s: room %d, allowance %d, why %q; want %d, %d, %q", c.name, got.Room, got.Allowance, got.Why,
				c.room, c.allowance, c.why)
		}
	}
}

// TestAssign: a sticky recipient keeps its sender while it is usable,
// waiting when it has no room this tick; others take the most room; an
// inactive or out-of-allowance sticky sender gives its recipient to the
// others; with no room left a recipient gets none.
func TestAssign(t *testing.T) {
	pool := []Sender{
		{ID: 1, Room: 2, Allowance: 100},
		{ID: 2, Room: 1, Allowance: 100},
		{ID: 3, Room: 0, Allowance: 100, Why: WhyInFlight},
		{ID: 4, Room: 0, Allowance: 0, Why: WhyReserve},
		{ID: 5, Room: 0, Allowance: 100, Why: WhyInactive},
	}
	phones := []string{"a", "b", "c", "d", "e", "f"}
	sticky := map[string]int64{"a": 2, "b": 3, "c": 4, "d": 5}
	got := assign(phones, sticky, pool)
	// a → its sticky 2; b waits for 3; c (4 out for the day) and d (5
	// inactive) → 1 (most room); e → nothing left; f too.
	if want := []int64{2, -1, 1, 1, -1, -1}; !slices.Equal(got, want) {
		t.Fatalf("assign = %v, want %v", got, want)
	}
}

// TestAllOutForTheDay: only when every active sender is at its reserve.
func TestAllOutForTheDay(t *testing.T) {
	out := Sender{Why: WhyReserve}
	if !allOutForTheDay([]Sender{out, {Why: WhyInactive}}) {
		t.Error("one at its reserve and one inactive: want out for the day")
	}
	if allOutForTheDay([]Sender{out, {Why: WhyInFlight}}) || allOutForTheDay([]Sender{{Why: WhyInactive}}) {
		t.Error("a sender in flight, or none active: want not out for the day")
	}
	if got := nextMidnight(time.Date(2026, 11, 28, 23, 59, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("nextMidnight = %s", got)
	}
}
