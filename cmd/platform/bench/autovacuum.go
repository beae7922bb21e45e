package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bizmsg/platform/platform/clock"
	"github.com/bizmsg/platform/platform/db"
)

// standIn does, while the server's autovacuum is off, what autovacuum
// would do in the scratch database with the server's own settings: every
// autovacuum_naptime it vacuums each table whose dead rows (or rows
// inserted since its last vacuum) pass their threshold and analyzes each
// whose changes since its last analyze pass theirs (base threshold plus
// scale factor times the table's rows, the rules of the autovacuum
// daemon). A run on a server with autovacuum off would otherwise keep, for
// the whole run, the planner statistics of tables analyzed while they were
// empty: the service's prepared statements and Postgres's own foreign-key
// checks then keep generic plans made for empty tables, which scan whole
// tables once they hold tens of thousands of rows (a 40,000-recipient
// campaign: 15,253 sequential scans of network.conversations reading 265
// million rows, River's job fetch taking 0.3–3.3 s, release at 52% of the
// throttle). In production autovacuum does this; here the stand-in does,
// and the report says so.
type standIn struct {
	d       *db.DB
	naptime time.Duration
	cancel  context.CancelFunc
	done    chan struct{}

	mu       sync.Mutex
	vacuums  int
	analyzes int
	err      error
}

// standInSQL lists the tables of the scratch database that autovacuum, with
// the server's settings, would vacuum and analyze now (reltuples below 0,
// never analyzed, counts as 0).
const standInSQL = `
WITH s AS (
  SELECT current_setting('autovacuum_vacuum_threshold')::float8 AS vt,
         current_setting('autovacuum_vacuum_scale_factor')::float8 AS vs,
         current_setting('autovacuum_vacuum_insert_threshold')::float8 AS it,
         current_setting('autovacuum_vacuum_insert_scale_factor')::float8 AS "is",
         current_setting('autovacuum_analyze_threshold')::float8 AS at,
         current_setting('autovacuum_analyze_scale_factor')::float8 AS "as")
SELECT format('%I.%I', t.schemaname, t.relname),
       t.n_dead_tup > s.vt + s.vs * greatest(c.reltuples, 0)
         OR (s.it >= 0 AND t.n_ins_since_vacuum > s.it + s."is" * greatest(c.reltuples, 0)),
       t.n_mod_since_analyze > s.at + s."as" * greatest(c.reltuples, 0)
  FROM pg_stat_user_tables t JOIN pg_class c ON c.oid = t.relid, s`

// startStandIn starts the stand-in on d when the server's autovacuum is off
// (nil when it is on: the server does the work). It stops with stop.
func startStandIn(ctx context.Context, d *db.DB) (*standIn, error) {
	var on bool
	var nap float64
	if err := d.Pool.QueryRow(ctx, `SELECT current_setting('autovacuum')::bool,
		extract(epoch FROM current_setting('autovacuum_naptime')::interval)`).Scan(&on, &nap); err != nil {
		return nil, fmt.Errorf("autovacuum settings: %w", err)
	}
	if on {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &standIn{d: d, naptime: time.Duration(nap * float64(time.Second)), cancel: cancel, done: make(chan struct{})}
	go s.run(ctx)
	return s, nil
}

// run does a round every naptime until ctx ends.
func (s *standIn) run(ctx context.Context) {
	defer close(s.done)
	clock.Every(ctx, s.naptime, func(ctx context.Context) bool {
		if err := s.round(ctx); err != nil && ctx.Err() == nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			return false
		}
		return true
	})
}

// round vacuums and analyzes the tables past their thresholds, one at a
// time (as one autovacuum worker would).
func (s *standIn) round(ctx context.Context) error {
	rows, err := s.d.Pool.Query(ctx, standInSQL)
	if err != nil {
		return fmt.Errorf("autovacuum stand-in: list tables: %w", err)
	}
	type job struct {
		table           string
		vacuum, analyze bool
	}
	var jobs []job
	for rows.Next() {
		var j job
		if err := rows.Scan(&j.table, &j.vacuum, &j.analyze); err != nil {
			rows.Close()
			return fmt.Errorf("autovacuum stand-in: list tables: %w", err)
		}
		if j.vacuum || j.analyze {
			jobs = append(jobs, j)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("autovacuum stand-in: list tables: %w", err)
	}
	for _, j := range jobs {
		stmt := "ANALYZE " + j.table
		if j.vacuum {
			stmt = "VACUUM (ANALYZE) " + j.table
			if !j.analyze {
				stmt = "VACUUM " + j.table
			}
		}
		if _, err := s.d.Pool.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("autovacuum stand-in: %s: %w", stmt, err)
		}
		s.mu.Lock()
		if j.vacuum {
			s.vacuums++
		}
		if j.analyze {
			s.analyzes++
		}
		s.mu.Unlock()
	}
	return nil
}

// stop ends the stand-in and says what it did ("" when the server's
// autovacuum was on and there was no stand-in).
func (s *standIn) stop() (string, error) {
	if s == nil {
		return "", nil
	}
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprintf("autovacuum off on the server: the bench's stand-in ran every %s, %d vacuums and %d analyzes",
		s.naptime, s.vacuums, s.analyzes), s.err
}
