package defaults

import (
	"log/slog"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/clock"
)

func TestPositive(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		in, want time.Duration
	}{
		{"zero takes the default", 0, time.Second},
		{"negative takes the default", -time.Minute, time.Second},
		{"positive stays", time.Millisecond, time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.in
			Positive(&got, time.Second)
			if got != tc.want {
				t.Errorf("Positive(%v, 1s) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}

func TestPositiveKinds(t *testing.T) {
	t.Parallel()
	n, f := 0, -1.5
	Positive(&n, 100)
	Positive(&f, 20.0)
	if n != 100 || f != 20 {
		t.Errorf("Positive on int and float64 = %d, %v, want 100, 20", n, f)
	}
}

func TestClockAndLogger(t *testing.T) {
	t.Parallel()
	var c clock.Clock
	Clock(&c)
	if _, ok := c.(clock.Real); !ok {
		t.Fatalf("a nil clock became %T, want clock.Real", c)
	}
	fixed := clock.NewFake(time.Unix(0, 0))
	c = fixed
	Clock(&c)
	if c != clock.Clock(fixed) {
		t.Fatalf("a set clock was replaced by %T", c)
	}
	var l *slog.Logger
	Logger(&l)
	if l != slog.Default() {
		t.Fatal("a nil logger did not become slog.Default()")
	}
	mine := slog.New(slog.DiscardHandler)
	l = mine
	Logger(&l)
	if l != mine {
		t.Fatal("a set logger was replaced")
	}
}
