package bench

import (
	"testing"

	"github.com/bizmsg/platform/platform/db"
	"github.com/bizmsg/platform/platform/dbtest"
)

// The stand-in's round vacuums and analyzes a table that autovacuum would
// (2,000 rows inserted after it was analyzed empty: past the insert and the
// analyze thresholds) and leaves alone one that it would not (10 rows).
func TestStandInRound(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	d, err := db.Open(ctx, db.Config{URL: dbtest.NewDatabase(t), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	conn, err := d.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE big (id int)", "CREATE TABLE small (id int)", "ANALYZE",
		"INSERT INTO big SELECT generate_series(1, 2000)", "INSERT INTO small SELECT generate_series(1, 10)",
		// The counts reach the statistics views now, not within a second.
		"SELECT pg_stat_force_next_flush()",
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	conn.Release()
	s := &standIn{d: d}
	if err := s.round(ctx); err != nil {
		t.Fatal(err)
	}
	if s.vacuums != 1 || s.analyzes != 1 {
		t.Errorf("round: %d vacuums, %d analyzes; want 1 and 1 (the big table)", s.vacuums, s.analyzes)
	}
	var big, small float64
	if err := d.Pool.QueryRow(ctx, `SELECT (SELECT reltuples FROM pg_class WHERE relname = 'big'),
		(SELECT reltuples FROM pg_class WHERE relname = 'small')`).Scan(&big, &small); err != nil {
		t.Fatal(err)
	}
	if big != 2000 || small != 0 {
		t.Errorf("reltuples after the round: big %g, small %g; want 2000 (analyzed) and 0 (left alone)", big, small)
	}
}
