package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bizmsg/platform/platform/db"
)

// serviceApp is the application_name of the service child's connections
// (platform serve names them so: docs/operations.md, §Start-up).
const serviceApp = "bizmsg serve"

// memory is what the service and the Postgres backends serving it hold
// after a phase, read from /proc: the bench runs on the database's
// machine, as its CPU figures assume.
type memory struct {
	// ServicePeak is the service's peak resident set size so far (VmHWM).
	ServicePeak int64 `json:"service_peak_rss_bytes"`
	// Backends is how many backends serve the service's connections.
	Backends int `json:"backends"`
	// BackendsAnon is the sum of their RssAnon: each backend's private
	// memory (catalog and relation caches, plans, work memory), which
	// grows with the tenants a connection has seen. Shared buffers are
	// left out: VmRSS would count the pages each backend touched again in
	// every backend.
	BackendsAnon int64 `json:"backends_anon_bytes"`
	// BackendsRSS is the sum of their VmRSS, shared pages included.
	BackendsRSS int64 `json:"backends_rss_bytes"`
	// BackendsAnonPeak is the most BackendsAnon was during the runs it
	// follows, sampled each second (watchBackends): connections that
	// the service's DB_MAX_CONN_TENANTS bound closed before the reading
	// after them held it (0: not sampled).
	BackendsAnonPeak int64 `json:"backends_anon_peak_bytes,omitempty"`
	// Error says why a figure is missing (a server on another machine).
	Error string `json:"error,omitempty"`
}

// String is the figures as the report prints them.
func (m memory) String() string {
	mb := func(b int64) float64 { return float64(b) / (1 << 20) }
	s := fmt.Sprintf("service peak %.1f MB; %d backends: private %.1f MB, RSS %.1f MB",
		mb(m.ServicePeak), m.Backends, mb(m.BackendsAnon), mb(m.BackendsRSS))
	if m.BackendsAnonPeak > 0 {
		s += fmt.Sprintf("; private at most %.1f MB during it", mb(m.BackendsAnonPeak))
	}
	if m.Error != "" {
		s += " (" + m.Error + ")"
	}
	return s
}

// measureMemory reads the service's peak RSS (svcPID) and the memory of
// the backends whose application_name is serviceApp.
func measureMemory(ctx context.Context, d *db.DB, svcPID int) memory {
	var m memory
	var errs []string
	if st, err := procStatus(svcPID, "VmHWM"); err != nil {
		errs = append(errs, err.Error())
	} else {
		m.ServicePeak = st["VmHWM"]
	}
	rows, err := d.Pool.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1`, serviceApp)
	if err != nil {
		return memory{ServicePeak: m.ServicePeak, Error: fmt.Sprintf("list the service's backends: %v", err)}
	}
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			rows.Close()
			return memory{ServicePeak: m.ServicePeak, Error: fmt.Sprintf("list the service's backends: %v", err)}
		}
		pids = append(pids, pid)
	}
	rows.Close()
	for _, pid := range pids {
		st, err := procStatus(pid, "RssAnon", "VmRSS")
		if err != nil {
			// A backend that ended since the list is not counted; a
			// server on another machine leaves every pid unreadable.
			errs = append(errs, err.Error())
			continue
		}
		m.Backends++
		m.BackendsAnon += st["RssAnon"]
		m.BackendsRSS += st["VmRSS"]
	}
	if m.Backends == 0 && len(errs) > 0 {
		m.Error = strings.Join(errs, "; ")
	}
	return m
}

// watchBackends samples the private memory of the backends serving the
// service (measureMemory's BackendsAnon) now and at each of ticks, until
// the stop it returns is first called, which answers the most they held
// at once (later calls answer it again). A sample is one short query and
// a few reads of /proc.
func watchBackends(ctx context.Context, d *db.DB, svcPID int, ticks <-chan time.Time) (stop func() int64) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan int64, 1)
	peak := measureMemory(ctx, d, svcPID).BackendsAnon
	go func() {
		for {
			select {
			case <-ctx.Done():
				done <- peak
				return
			case <-ticks:
				peak = max(peak, measureMemory(ctx, d, svcPID).BackendsAnon)
			}
		}
	}()
	return sync.OnceValue(func() int64 {
		cancel()
		return <-done
	})
}

// procStatus reads the named kB fields of /proc/pid/status, in bytes.
func procStatus(pid int, fields ...string) (map[string]int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, fmt.Errorf("read the status of process %d: %w", pid, err)
	}
	defer f.Close()
	out := make(map[string]int64, len(fields))
	s := bufio.NewScanner(f)
	for s.Scan() {
		name, rest, ok := strings.Cut(s.Text(), ":")
		if !ok || !slices.Contains(fields, name) {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("parse %s %q of process %d: %w", name, rest, pid, err)
		}
		out[name] = kb * 1024
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("read the status of process %d: %w", pid, err)
	}
	for _, name := range fields {
		if _, ok := out[name]; !ok {
			return nil, fmt.Errorf("no %s in the status of process %d", name, pid)
		}
	}
	return out, nil
}
