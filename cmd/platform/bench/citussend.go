package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// besideReport is bench send -citus: the same phases on one server
// (DATABASE_URL's) and then on a local Citus cluster, in one invocation.
type besideReport struct {
	SingleServer *sendReport `json:"single_server"`
	Citus        *sendReport `json:"citus"`
}

// benchSendCitus runs the benchmark of cfg on DATABASE_URL's server, then
// starts a Citus cluster with script, runs it again with the scratch
// database on the coordinator, and stops the cluster (also on error or
// interrupt). It prints both reports and the sweep side by side, and
// writes both to out. The cluster's CPU profiles go to cpuProfile +
// ".citus".
func benchSendCitus(ctx context.Context, cfg sendConfig, command, script, cpuProfile string, keep bool,
	stdout, stderr io.Writer, out string) (err error) {
	if err := checkCitusScript(script); err != nil {
		return err
	}
	rep := &besideReport{}
	single := &sendBench{cfg: cfg, stderr: stderr, cpuProfile: cpuProfile}
	if rep.SingleServer, err = single.run(ctx, command+"  [single server]", keep); err != nil {
		return finish(stdout, out, rep, fmt.Errorf("single server: %w", err), printBeside)
	}
	fmt.Fprintln(stderr, "starting a 3-node Citus cluster")
	cluster, err := startCitus(ctx, script, stderr)
	if cluster != nil {
		defer func() { err = errors.Join(err, cluster.stop(ctx, keep)) }()
	}
	if err != nil {
		return finish(stdout, out, rep, err, printBeside)
	}
	onCluster := &sendBench{cfg: cfg, stderr: stderr}
	if cpuProfile != "" {
		onCluster.cpuProfile = cpuProfile + ".citus"
	}
	onCluster.citus = cluster
	if rep.Citus, err = onCluster.run(ctx, command+"  [Citus cluster]", keep); err != nil {
		err = fmt.Errorf("citus cluster: %w", err)
	}
	return finish(stdout, out, rep, err, printBeside)
}

// printBeside prints each run's report (the cluster's when it has one),
// then the tenant sweep of both side by side.
func printBeside(w io.Writer, r *besideReport) {
	if r.SingleServer != nil {
		fmt.Fprintln(w, "== single server (DATABASE_URL's)")
		printSendReport(w, r.SingleServer)
	}
	if r.Citus == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "== Citus cluster (coordinator and 2 workers on this machine)")
	printSendReport(w, r.Citus)
	if r.SingleServer == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "== tenant sweep, single server beside the Citus cluster (same flags, one run after the other)")
	fmt.Fprintf(w, "%-9s | %-48s | %-48s | %s\n", "tenants", "single server", "Citus cluster", "Citus/single")
	fmt.Fprintf(w, "%-9s | %-48s | %-48s | %s\n", "", sweepColumns, sweepColumns, "sends/s")
	fmt.Fprintf(w, "%s\n", strings.Repeat("-", 9+3+48+3+48+3+12))
	for i, s := range r.SingleServer.Sweep {
		if i >= len(r.Citus.Sweep) || r.Citus.Sweep[i].Tenants != s.Tenants {
			break
		}
		c := r.Citus.Sweep[i]
		fmt.Fprintf(w, "%-9s | %-48s | %-48s | %s\n", thousands(s.Tenants), sweepCells(s), sweepCells(c),
			fmt.Sprintf("x%.2f", c.Send.Rate/max(s.Send.Rate, 1)))
	}
	fmt.Fprintf(w, "(sends/s: the closed loop of POST /api/v1/messages, platform serve delivering; x1st: its ratio to the first count's, "+
		"median of the rounds; CPU: per accepted message in ms, the machine's / the service's and its database's backends' on every node; "+
		"once: accepted = rows = sent = network)\n")
}

// sweepColumns heads the cells of sweepCells.
const sweepColumns = "sends/s    x1st   CPU ms         once"

// sweepCells is one run's cells of a sweep entry.
func sweepCells(e sweepEntry) string {
	return fmt.Sprintf("%7.0f /s  x%.2f  %6.2f / %5.2f  %v", e.Send.Rate, e.Ratio, e.Send.CPUPerOK, e.Send.ScopeCPUPerOK, e.Delivery.ExactlyOnce)
}
