package dbtest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A private cluster answers on its URL, refuses connections while stopped
// in either mode, and keeps every committed row across the stop and the
// next start (the immediate one with crash recovery).
func TestClusterStopStart(t *testing.T) {
	t.Parallel()
	c := NewCluster(t)
	ctx := context.Background()
	connect := func() (*pgx.Conn, error) {
		cfg, err := pgx.ParseConfig(c.URL("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		// A refusal comes at once; a server that does not answer would
		// hold a connection attempt for this long.
		cfg.ConnectTimeout = 30 * time.Second
		return pgx.ConnectConfig(ctx, cfg)
	}
	conn, err := connect()
	if err != nil {
		t.Fatalf("connect to the new cluster: %v\n%s", err, c.Log())
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE kept (n int)`); err != nil {
		t.Fatal(err)
	}
	for i, mode := range []string{"fast", "immediate"} {
		if _, err := conn.Exec(ctx, `INSERT INTO kept VALUES ($1)`, i); err != nil {
			t.Fatal(err)
		}
		c.Stop(mode)
		if _, err := conn.Exec(ctx, `SELECT 1`); err == nil {
			t.Fatalf("a connection of the server stopped %s still answers", mode)
		}
		start := time.Now()
		if other, err := connect(); err == nil {
			_ = other.Close(ctx)
			t.Fatalf("the server stopped %s accepts connections", mode)
		} else if time.Since(start) > 10*time.Second {
			t.Fatalf("connecting to the server stopped %s took %s to fail (%v); want a refusal at once", mode, time.Since(start), err)
		}
		c.Start()
		if conn, err = connect(); err != nil {
			t.Fatalf("connect after the restart from %s: %v\n%s", mode, err, c.Log())
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM kept`).Scan(&n); err != nil || n != i+1 {
			t.Fatalf("after stop -m %s: %d rows (%v), want %d", mode, n, err, i+1)
		}
	}
	_ = conn.Close(ctx)
}
