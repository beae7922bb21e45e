package bench

import (
	"os"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// watchBackends answers the most the service's backends held at a tick:
// none when it started, the backend of a connection named as the
// service's once it exists; a second stop answers the same peak.
func TestWatchBackends(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := dbtest.NewDatabase(t)
	bench, err := db.Open(ctx, db.Config{URL: url, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bench.Close)
	if none := watchBackends(ctx, bench, os.Getpid(), nil)(); none != 0 {
		t.Fatalf("watchBackends before any service backend: peak %d bytes, want 0", none)
	}
	ticks := make(chan time.Time)
	stop := watchBackends(ctx, bench, os.Getpid(), ticks)
	svc, err := db.Open(ctx, db.Config{URL: url, MaxConns: 1, ApplicationName: serviceApp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if _, err := svc.Pool.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	// The second tick is taken only once the first one's sample is done.
	ticks <- time.Now()
	ticks <- time.Now()
	peak := stop()
	if peak <= 0 {
		t.Fatalf("watchBackends after a tick over a live service backend: peak %d bytes, want more than 0", peak)
	}
	if again := stop(); again != peak {
		t.Errorf("a second stop answered %d, want the first's %d", again, peak)
	}
}
