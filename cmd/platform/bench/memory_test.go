package bench

import (
	"os"
	"testing"
	"time"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// watchBackends finds the backend of a connection named as the service's
// and answers what it holds; stop answers the same peak again.
func TestWatchBackends(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := dbtest.NewDatabase(t)
	svc, err := db.Open(ctx, db.Config{URL: url, MaxConns: 1, ApplicationName: serviceApp})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	if _, err := svc.Pool.Exec(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	bench, err := db.Open(ctx, db.Config{URL: url, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bench.Close)
	stop := watchBackends(ctx, bench, os.Getpid(), time.Hour)
	peak := stop()
	if peak <= 0 {
		t.Fatalf("watchBackends over a live service backend: peak %d bytes, want more than 0", peak)
	}
	if again := stop(); again != peak {
		t.Errorf("a second stop answered %d, want the first's %d", again, peak)
	}
}
