package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/bizmsg/platform/platform/config"
	"github.com/bizmsg/platform/platform/db"
)

// scratch is what a benchmark keeps of its scratch database: the
// database's URL, a pool on it, and the pepper its fixtures' keys (and
// the service under test) use; and the Citus cluster it is on, if any.
type scratch struct {
	url    string
	pepper string
	d      *db.DB
	citus  *citusCluster
}

// open (re)creates the scratch database name on DATABASE_URL's server, or
// on the Citus cluster when s.citus is set, opens a pool of maxConns on it
// and draws a pepper. The function it returns closes the pool and, unless
// keep, drops the database (a cluster's goes with the cluster).
func (s *scratch) open(ctx context.Context, name string, maxConns int32, keep bool) (func(), error) {
	base, err := config.Load(os.Getenv)
	if err != nil {
		return nil, err
	}
	drop := func() {
		if !keep {
			_ = dropDatabase(context.WithoutCancel(ctx), base.DatabaseURL, name)
		}
	}
	if s.citus != nil {
		s.url, err = s.citus.createdb(ctx, name)
		drop = func() {}
	} else {
		s.url, err = scratchDatabase(ctx, base.DatabaseURL, name)
	}
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	s.pepper = hex.EncodeToString(secret)
	if s.d, err = db.Open(ctx, db.Config{URL: s.url, MaxConns: maxConns}); err != nil {
		drop()
		return nil, err
	}
	return func() {
		s.d.Close()
		drop()
	}, nil
}

// benchFlags is the flag set of the benchmark name: its errors and -h go
// to stderr, -h printing usage before the flags.
func benchFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// scratchFlags registers the flags of a bench's scratch database on fs:
// -db, its name, into db (default bizmsg_bench_<bench>), and -keep, which
// keeps it afterwards.
func scratchFlags(fs *flag.FlagSet, db *string, bench string) (keep *bool) {
	fs.StringVar(db, "db", "bizmsg_bench_"+bench, "scratch database to create on DATABASE_URL's server (dropped first if it exists)")
	return fs.Bool("keep", false, "keep the scratch database afterwards")
}

// writeReport writes rep as indented JSON to the file out, when out is
// set, and returns runErr with the failure to write joined to it.
func writeReport(out string, rep any, runErr error) error {
	if out == "" {
		return runErr
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(out, append(raw, '\n'), 0o644) //nolint:gosec // G306: a report to share, not a secret
	}
	if err != nil {
		return errors.Join(runErr, fmt.Errorf("write %s: %w", out, err))
	}
	return runErr
}

// finish ends a bench command whose run returned rep (nil when it failed
// before it had figures) and runErr: it prints rep to stdout with render
// and writes it to out (writeReport), returning runErr with a failure to
// write joined to it.
func finish[R any](stdout io.Writer, out string, rep *R, runErr error, render func(io.Writer, *R)) error {
	if rep == nil {
		return runErr
	}
	render(stdout, rep)
	return writeReport(out, rep, runErr)
}

// env is the environment of a service under test on the scratch
// database: its pepper, the built-in network, dbMaxConns connections,
// logLevel, and limits that never bind unless extra sets them again
// (a later entry wins).
func (s *scratch) env(dbMaxConns int, logLevel string, extra ...string) []string {
	return append([]string{
		"DATABASE_URL=" + s.url, "API_KEY_PEPPER=" + s.pepper, "JWT_SECRET=" + s.pepper,
		"NETWORK=builtin", "DB_MAX_CONNS=" + strconv.Itoa(dbMaxConns), "LOG_LEVEL=" + logLevel,
		"DEFAULT_DAILY_LIMIT=100000000", "SENDER_RATE=1000000", "SENDER_BURST=1000000",
		"API_RATE_LIMIT=1000000", "API_RATE_BURST=1000000",
	}, extra...)
}
